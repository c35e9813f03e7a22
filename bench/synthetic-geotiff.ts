/**
 * Writes a valid, uncompressed RGB uint8 GeoTIFF (EPSG:3857, 0.5 m/px) of any
 * size as a stream, so benchmarks can measure large uploads without a large
 * fixture in the repository and without holding the image in memory.
 */
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const SHORT = 3;
const LONG = 4;
const DOUBLE = 12;

export interface SyntheticGeoTiff {
  width: number;
  height: number;
  /** Upper-left corner in EPSG:3857 metres. */
  originX?: number;
  originY?: number;
  pixelSizeM?: number;
}

/** Size in bytes of the file `syntheticGeoTiffStream` produces. */
export function syntheticGeoTiffSize(spec: SyntheticGeoTiff): number {
  return headerBytes(spec).length + spec.width * spec.height * 3;
}

function headerBytes({ width, height, originX = 828_000, originY = 5_934_000, pixelSizeM = 0.5 }: SyntheticGeoTiff): Buffer {
  const entries: [tag: number, type: number, count: number, value: number | Buffer][] = [];
  const u16 = (values: number[]) => Buffer.from(new Uint16Array(values).buffer);
  const f64 = (values: number[]) => Buffer.from(new Float64Array(values).buffer);
  const pixelBytes = width * height * 3;
  entries.push([256, LONG, 1, width]);
  entries.push([257, LONG, 1, height]);
  entries.push([258, SHORT, 3, u16([8, 8, 8])]);
  entries.push([259, SHORT, 1, 1]); // no compression
  entries.push([262, SHORT, 1, 2]); // RGB
  entries.push([273, LONG, 1, 0]); // strip offset, patched below
  entries.push([277, SHORT, 1, 3]);
  entries.push([278, LONG, 1, height]); // one strip
  entries.push([279, LONG, 1, pixelBytes]);
  entries.push([284, SHORT, 1, 1]);
  entries.push([33550, DOUBLE, 3, f64([pixelSizeM, pixelSizeM, 0])]);
  entries.push([33922, DOUBLE, 6, f64([0, 0, 0, originX, originY, 0])]);
  // GeoKeys: projected model, pixel-is-area, EPSG:3857.
  entries.push([34735, SHORT, 16, u16([1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 3857])]);

  const ifdOffset = 8;
  const ifdSize = 2 + entries.length * 12 + 4;
  let extraOffset = ifdOffset + ifdSize;
  const extras: Buffer[] = [];
  const ifd = Buffer.alloc(ifdSize);
  ifd.writeUInt16LE(entries.length, 0);
  const stripOffsetFieldAt: number[] = [];
  entries.forEach(([tag, type, count, value], i) => {
    const at = 2 + i * 12;
    ifd.writeUInt16LE(tag, at);
    ifd.writeUInt16LE(type, at + 2);
    ifd.writeUInt32LE(count, at + 4);
    if (Buffer.isBuffer(value)) {
      ifd.writeUInt32LE(extraOffset, at + 8);
      extras.push(value);
      extraOffset += value.length;
    } else if (type === SHORT) {
      ifd.writeUInt16LE(value, at + 8);
    } else {
      ifd.writeUInt32LE(value, at + 8);
      if (tag === 273) stripOffsetFieldAt.push(at + 8);
    }
  });
  const dataOffset = extraOffset;
  for (const at of stripOffsetFieldAt) ifd.writeUInt32LE(dataOffset, at);
  const head = Buffer.alloc(8);
  head.write('II', 0, 'latin1');
  head.writeUInt16LE(42, 2);
  head.writeUInt32LE(ifdOffset, 4);
  return Buffer.concat([head, ifd, ...extras]);
}

/** The whole file as a stream of 1 MiB chunks (a repeating gradient). */
export function syntheticGeoTiffStream(spec: SyntheticGeoTiff): Readable {
  const header = headerBytes(spec);
  let remaining = spec.width * spec.height * 3;
  const chunk = Buffer.alloc(1 << 20);
  for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 7) & 0xff;
  return Readable.from(
    (function* generate() {
      yield header;
      while (remaining > 0) {
        const n = Math.min(remaining, chunk.length);
        remaining -= n;
        yield n === chunk.length ? chunk : chunk.subarray(0, n);
      }
    })(),
    { objectMode: false },
  );
}

export async function writeSyntheticGeoTiff(path: string, spec: SyntheticGeoTiff): Promise<number> {
  await pipeline(syntheticGeoTiffStream(spec), createWriteStream(path));
  return syntheticGeoTiffSize(spec);
}
