/**
 * The preview of an image whose pixels could not be read: a grey gradient.
 * Its own module, so the bridge-side decoder client (decoder.ts) draws it
 * without loading the decoding modules (raster-file.ts, geotiff) into the
 * bridge's process.
 */
export function placeholderPixels(size: number): Uint8Array {
  const rgba = new Uint8Array(size * size * 4);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const p = (y * size + x) * 4;
      const v = Math.round(((x + y) / (2 * size)) * 255);
      rgba[p] = v;
      rgba[p + 1] = v;
      rgba[p + 2] = v;
      rgba[p + 3] = 255;
    }
  }
  return rgba;
}
