/**
 * Resource bounds of GeoTIFF inspection, checked from the header before any
 * pixel is decoded, so a small hostile file cannot make the inspect step
 * allocate gigabytes (a "decompression bomb": a 1 MB Deflate strip that
 * inflates to 1 GiB, or a tile declared 65536 x 65536 pixels).
 *
 * Every value is documented, with its reason, in docs/inputs.md.
 */
import { inflateSync, constants as zlib } from 'node:zlib';
import type { GeoTIFFImage } from 'geotiff';
import { InputRejected } from '../core/errors.ts';

/**
 * Widest or tallest image inspected at all (2^20 px). Far above any Mapflow
 * account's maxPixelCount (30,000 by default), which is checked later; this
 * one only keeps absurd sizes (2^31 x 2^31) from reaching the footprint and
 * the probe, where they would read as "not on Earth".
 */
export const MAX_IMAGE_SIDE_PIXELS = 1_048_576;

/**
 * Largest decoded size of one compressed tile or strip (64 MiB). GDAL's
 * defaults are 256 x 256 to 512 x 512 tiles and strips of a few kilobytes;
 * a block this large only comes from a crafted or badly exported file, and
 * decoding one must fit the inspect function's memory with room to spare.
 */
export const MAX_BLOCK_DECODED_BYTES = 64 * 1024 * 1024;

/**
 * Most tiles or strips in the full-resolution image (4,194,304): the probe
 * loads their offsets and byte counts. A 30,000 x 30,000 image in 16 x 16
 * tiles (the smallest GDAL writes) has 3.5 million.
 */
export const MAX_BLOCKS = 4_194_304;

/**
 * Offsets at or beyond 8 TiB point past the largest object S3 stores (5 TiB):
 * such a header is damaged, not cut short.
 */
export const MAX_PLAUSIBLE_OFFSET = 2 ** 43;

/** The tile or strip grid of the full-resolution image, as the header declares it. */
export interface BlockLayout {
  tiled: boolean;
  blockWidth: number;
  blockHeight: number;
  /** Bytes one block decodes to (one sample's plane when planar). */
  decodedBytes: number;
  /** Number of blocks the grid needs (times the samples when planar). */
  count: number;
  /** TIFF Compression tag (1 = none). */
  compression: number;
}

/**
 * Width and height, before any geometry is derived from them.
 * @throws InputRejected IMAGE_TOO_MANY_PIXELS
 */
export function checkImageSize(width: number, height: number): void {
  if (width <= MAX_IMAGE_SIDE_PIXELS && height <= MAX_IMAGE_SIDE_PIXELS) return;
  throw new InputRejected(
    'IMAGE_TOO_MANY_PIXELS',
    `the image declares ${width} x ${height} pixels; the bridge inspects at most ${MAX_IMAGE_SIDE_PIXELS} pixels per side (Mapflow accounts take 30,000 by default). ` +
      'Split it into tiles (e.g. gdal_retile.py -ps 10000 10000) and drop them one by one',
    { details: { width, height, maxSide: MAX_IMAGE_SIDE_PIXELS } },
  );
}

/**
 * The declared block grid, bounded: a compressed block may not decode to
 * more than MAX_BLOCK_DECODED_BYTES, and the grid may not have more than
 * MAX_BLOCKS blocks. An uncompressed block is as large as its bytes in the
 * file, so only its count is bounded (the probe does not read large ones).
 * @throws InputRejected TIFF_BLOCK_TOO_LARGE, TIFF_TOO_MANY_BLOCKS, TIFF_CORRUPT
 */
export function checkBlockLayout(image: GeoTIFFImage): BlockLayout {
  const directory = image.fileDirectory;
  const tiled = directory.hasTag('TileWidth') || directory.hasTag('TileOffsets');
  const width = image.getWidth();
  const height = image.getHeight();
  const blockWidth = tiled ? Number(directory.getValue('TileWidth') ?? 0) : width;
  const rowsPerStrip = directory.hasTag('RowsPerStrip') ? Number(directory.getValue('RowsPerStrip') ?? 0) : height;
  const blockHeight = tiled ? Number(directory.getValue('TileLength') ?? 0) : Math.min(rowsPerStrip || height, height);
  const compression = Number(directory.getValue('Compression') ?? 1);
  if (!(blockWidth > 0 && blockHeight > 0)) {
    throw new InputRejected('TIFF_CORRUPT', `the TIFF declares ${tiled ? 'tiles' : 'strips'} of ${blockWidth} x ${blockHeight} pixels: the header is damaged; export the image again`);
  }
  const bits = (directory.getValue('BitsPerSample') as ArrayLike<number> | undefined) ?? [1];
  const planar = Number(directory.getValue('PlanarConfiguration') ?? 1) === 2;
  const sampleBytes = Array.from(bits, (b) => Math.ceil(Number(b) / 8));
  const pixelBytes = planar ? Math.max(...sampleBytes) : sampleBytes.reduce((sum, b) => sum + b, 0);
  const decodedBytes = blockWidth * blockHeight * Math.max(1, pixelBytes);
  const count = Math.ceil(width / blockWidth) * Math.ceil(height / blockHeight) * (planar ? sampleBytes.length : 1);
  const kind = tiled ? 'tile' : 'strip';
  const retile = 'Write it again with ordinary tiles, e.g. gdal_translate -co TILED=YES -co BLOCKXSIZE=512 -co BLOCKYSIZE=512 in.tif out.tif';
  if (compression !== 1 && decodedBytes > MAX_BLOCK_DECODED_BYTES) {
    throw new InputRejected(
      'TIFF_BLOCK_TOO_LARGE',
      `each compressed ${kind} declares ${blockWidth} x ${blockHeight} pixels (${mib(decodedBytes)} decoded); the bridge decodes at most ${mib(MAX_BLOCK_DECODED_BYTES)} per ${kind}. ${retile}`,
      { details: { blockWidth, blockHeight, decodedBytes, maxDecodedBytes: MAX_BLOCK_DECODED_BYTES } },
    );
  }
  if (count > MAX_BLOCKS) {
    throw new InputRejected(
      'TIFF_TOO_MANY_BLOCKS',
      `the image is cut into ${count} ${kind}s of ${blockWidth} x ${blockHeight} pixels; the bridge reads the index of at most ${MAX_BLOCKS}. ${retile}`,
      { details: { blockWidth, blockHeight, count, maxBlocks: MAX_BLOCKS } },
    );
  }
  return { tiled, blockWidth, blockHeight, decodedBytes, count, compression };
}

/** What a bounded look at one block found: it fits, or the codec cannot be checked without decoding unbounded. */
export type BlockCheck = 'fits' | 'unchecked';

/** A block decodes (or would) to more bytes than its declared size. */
export class BlockOverflow extends Error {
  constructor(readonly limit: number) {
    super(`decodes to more than ${limit} bytes`);
    this.name = 'BlockOverflow';
  }
}

/**
 * Checks, with memory bounded by `limit`, that a compressed block decodes to
 * at most `limit` bytes: Deflate is inflated with an output cap, LZW and
 * PackBits are scanned for their output length without producing it, JPEG's
 * frame header gives its size. Other codecs are 'unchecked' (not decoded).
 * @throws BlockOverflow when the block would decode to more than `limit`
 * @throws Error when the block's data is malformed
 */
export function checkBlockDecodedSize(compression: number, data: Uint8Array, limit: number): BlockCheck {
  switch (compression) {
    case 1:
      return 'fits';
    case 8:
    case 32946:
      try {
        // SYNC_FLUSH: a stream without its final checksum still counts, as for pako.
        inflateSync(data, { maxOutputLength: Math.max(1, limit), finishFlush: zlib.Z_SYNC_FLUSH });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) throw new BlockOverflow(limit);
        throw error;
      }
      return 'fits';
    case 5:
      if (lzwOutputLength(data, limit) > limit) throw new BlockOverflow(limit);
      return 'fits';
    case 32773:
      if (packBitsOutputLength(data, limit) > limit) throw new BlockOverflow(limit);
      return 'fits';
    case 7: {
      const frame = jpegFrameSize(data);
      if (!frame) return 'unchecked';
      if (frame.width * frame.height * frame.components > limit) throw new BlockOverflow(limit);
      return 'fits';
    }
    default:
      return 'unchecked';
  }
}

/**
 * Output length of a TIFF LZW stream, mirroring geotiff.js' decoder (code
 * widths 9-12 with early change, a frozen table at 12 bits) but tracking only
 * the length of each table entry. Stops counting once past `limit`.
 */
export function lzwOutputLength(data: Uint8Array, limit: number): number {
  const CLEAR = 256;
  const EOI = 257;
  const lengths = new Uint16Array(4096);
  lengths.fill(1, 0, 258);
  let tableLength = 258;
  let width = 9;
  let bit = 0;
  const totalBits = data.length * 8;
  const next = (): number => {
    if (bit + width > totalBits) return EOI;
    let code = 0;
    for (let i = 0; i < width; i++) {
      const at = bit + i;
      code = (code << 1) | ((data[at >> 3]! >> (7 - (at & 7))) & 1);
    }
    bit += width;
    return code;
  };
  let out = 0;
  let old: number | undefined;
  let code = next();
  while (code !== EOI) {
    if (code === CLEAR) {
      tableLength = 258;
      width = 9;
      do code = next();
      while (code === CLEAR);
      if (code === EOI) break;
      if (code > CLEAR) throw new Error(`corrupted LZW code ${code}`);
      out += 1;
      old = code;
    } else if (code < tableLength) {
      out += lengths[code]!;
      if (old !== undefined && tableLength < 4096) lengths[tableLength++] = lengths[old]! + 1;
      old = code;
    } else {
      if (old === undefined) throw new Error(`invalid LZW code ${code} with no previous code`);
      out += lengths[old]! + 1;
      if (tableLength < 4096) lengths[tableLength++] = lengths[old]! + 1;
      old = code;
    }
    if (out > limit) return out;
    if (tableLength + 1 >= 2 ** width) {
      if (width === 12) old = undefined;
      else width++;
    }
    code = next();
  }
  return out;
}

/** Output length of a PackBits stream, stopping once past `limit`. */
export function packBitsOutputLength(data: Uint8Array, limit: number): number {
  let out = 0;
  for (let i = 0; i < data.length && out <= limit; i++) {
    const header = (data[i]! << 24) >> 24;
    if (header < 0) {
      out += -header + 1;
      i += 1;
    } else {
      out += header + 1;
      i += header + 1;
    }
  }
  return out;
}

/** Width, height and components from a JPEG's start-of-frame marker, if it has one. */
export function jpegFrameSize(data: Uint8Array): { width: number; height: number; components: number } | undefined {
  let i = 2; // after SOI
  while (i + 9 < data.length) {
    if (data[i] !== 0xff) {
      i++;
      continue;
    }
    const marker = data[i + 1]!;
    if (marker === 0xff || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      i += 2;
      continue;
    }
    const length = (data[i + 2]! << 8) | data[i + 3]!;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (data[i + 5]! << 8) | data[i + 6]!, width: (data[i + 7]! << 8) | data[i + 8]!, components: data[i + 9]! };
    }
    if (marker === 0xda) return undefined; // scan data before any frame header
    i += 2 + length;
  }
  return undefined;
}

function mib(bytes: number): string {
  return bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}
