/**
 * Resource bounds of GeoTIFF inspection, checked from the header before any
 * pixel is decoded, so a small hostile file cannot make the inspect step
 * allocate gigabytes (a "decompression bomb": a 1 MB Deflate strip that
 * inflates to 1 GiB, or a tile declared 65536 x 65536 pixels).
 *
 * Every value is documented, with its reason, in docs/inputs.md.
 */
import { inflateSync, zstdDecompressSync, constants as zlib } from 'node:zlib';
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

/**
 * Most bands (samples per pixel) inspected: 256. Mapflow's models take 1 to 3;
 * the inspect result lists one data type per band and travels in the job's
 * execution state (256 KB on AWS): 65,535 bands made a 526 KB result.
 */
export const MAX_BANDS = 256;

/**
 * Compressions whose decoded size the bridge can bound from the compressed
 * stream, without trusting the decoder: none (1), LZW (5), JPEG (7), Deflate
 * (8, 32946), PackBits (32773), ZSTD (50000). Anything else (old-style JPEG,
 * LERC, WebP, JPEG 2000, ...) is refused.
 */
export const SUPPORTED_COMPRESSIONS: Readonly<Record<number, string>> = { 1: 'none', 5: 'LZW', 7: 'JPEG', 8: 'Deflate', 32946: 'Deflate', 32773: 'PackBits', 50000: 'ZSTD' };

/**
 * A compressed block may hold at most this many bytes per decoded byte, plus
 * BLOCK_SLACK_BYTES (LZW's worst case is 12 bits per byte, 1.5; the others are
 * close to 1). A larger one is damaged, and reading it whole would cost memory.
 */
export const MAX_COMPRESSED_RATIO = 2;
export const BLOCK_SLACK_BYTES = 64 * 1024;

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
  checkCompression(compression);
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

/**
 * The compression must be one whose decoded size can be bounded.
 * @throws InputRejected TIFF_UNSUPPORTED_COMPRESSION
 */
export function checkCompression(compression: number): void {
  if (SUPPORTED_COMPRESSIONS[compression] !== undefined) return;
  throw new InputRejected(
    'TIFF_UNSUPPORTED_COMPRESSION',
    `the TIFF uses compression ${compression}${COMPRESSION_NAMES[compression] ? ` (${COMPRESSION_NAMES[compression]})` : ''}, whose decoded size the bridge cannot check before it is uploaded. ` +
      'Write it again with Deflate, LZW, ZSTD or JPEG, e.g. gdal_translate -co COMPRESS=DEFLATE -co TILED=YES in.tif out.tif',
    { details: { compression, supported: Object.keys(SUPPORTED_COMPRESSIONS).map(Number) } },
  );
}

const COMPRESSION_NAMES: Record<number, string> = { 2: 'CCITT RLE', 3: 'CCITT fax 3', 4: 'CCITT fax 4', 6: 'old-style JPEG', 34712: 'JPEG 2000', 34887: 'LERC', 50001: 'WebP', 50002: 'JPEG XL' };

/**
 * The number of bands, before anything is built per band.
 * @throws InputRejected TIFF_TOO_MANY_BANDS
 */
export function checkBands(bands: number): void {
  if (bands <= MAX_BANDS) return;
  throw new InputRejected(
    'TIFF_TOO_MANY_BANDS',
    `the image has ${bands} bands; the bridge inspects images of at most ${MAX_BANDS} bands (Mapflow's models take 1 to 3). Keep the bands the model needs, e.g. gdal_translate -b 1 -b 2 -b 3 in.tif out.tif`,
    { details: { bands, maxBands: MAX_BANDS } },
  );
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
export function checkBlockDecodedSize(compression: number, data: Uint8Array, limit: number, block?: { width: number; height: number }): BlockCheck {
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
    case 50000:
      try {
        zstdDecompressSync(data, { maxOutputLength: Math.max(1, limit) });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) throw new BlockOverflow(limit);
        throw error;
      }
      return 'fits';
    case 7: {
      // Every frame counts: the decoder builds each one (a second frame of 65528 x 65528 took 1.7 GB).
      const frames = jpegFrames(data);
      if (frames.length === 0) throw new Error('the JPEG data has no frame header');
      if (block) checkJpegFramesFit(frames, block, limit);
      const decoded = frames.reduce((sum, f) => sum + f.width * f.height * Math.max(1, f.components), 0);
      if (decoded > limit) throw new BlockOverflow(limit);
      return 'fits';
    }
    default:
      return 'unchecked';
  }
}

/** Largest JPEGTables tag read: tables (quantisation and Huffman) take a few hundred bytes, at most about 1.7 KB each. */
export const MAX_JPEG_TABLES_BYTES = 64 * 1024;

/**
 * Every frame of a JPEG block must fit the block: geotiff.js builds each frame
 * it meets at the frame's own size (its component buffers), whatever the
 * block's, and an empty one (0 rows: a height left to a DNL marker) is no
 * block of an image.
 * @throws BlockOverflow for a frame larger than the block
 * @throws Error for an empty frame
 */
export function checkJpegFramesFit(frames: { width: number; height: number; components: number }[], block: { width: number; height: number }, limit: number): void {
  for (const frame of frames) {
    if (!(frame.width > 0 && frame.height > 0 && frame.components > 0)) {
      throw new Error(`a JPEG frame header declares ${frame.width} x ${frame.height} pixels and ${frame.components} components: an empty frame`);
    }
    if (frame.width > block.width || frame.height > block.height) throw new BlockOverflow(limit);
  }
}

/**
 * The JPEGTables tag (TIFF Technical Note 2) is a tables-only stream, parsed
 * by geotiff.js when it builds the decoder, before any block, even for an
 * image whose every block is sparse: any frame header in it is built as a
 * block's would be, so it must fit the block too.
 * @throws BlockOverflow for a frame larger than the block
 * @throws Error for tables over MAX_JPEG_TABLES_BYTES or an empty frame
 */
export function checkJpegTables(tables: Uint8Array, block: { width: number; height: number }, limit: number): void {
  if (tables.length > MAX_JPEG_TABLES_BYTES) throw new Error(`the JPEGTables tag holds ${tables.length} bytes; JPEG tables take at most ${MAX_JPEG_TABLES_BYTES}`);
  const frames = jpegFrames(tables);
  checkJpegFramesFit(frames, block, limit);
  const decoded = frames.reduce((sum, f) => sum + f.width * f.height * Math.max(1, f.components), 0);
  if (decoded > limit) throw new BlockOverflow(limit);
}

/** Codes geotiff.js' LZW decoder can look up (its table has 4,093 entries, 0-4092). */
export const LZW_DECODABLE_CODES = 4093;

/** An LZW stream no TIFF writer produces, which geotiff.js' decoder cannot decode safely. */
export class LzwCodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LzwCodeError';
  }
}

/**
 * Output length of a TIFF LZW stream, mirroring geotiff.js' decoder (code
 * widths 9-12 with early change, a frozen table at 12 bits) but tracking only
 * the length of each table entry. Stops counting once past `limit`.
 * Validates the code stream on the way: a code beyond the table a writer
 * fills, or one not yet defined, throws LzwCodeError.
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
    } else if (code >= LZW_DECODABLE_CODES) {
      // geotiff.js' table has 4,093 entries: a code at or beyond it reads past the table and loops until the heap is gone.
      throw new LzwCodeError(`LZW code ${code} lies beyond the 4,093-entry code table that TIFF writers fill (libtiff resets it at 4,094)`);
    } else if (code < tableLength) {
      out += lengths[code]!;
      if (old !== undefined && tableLength < 4096) lengths[tableLength++] = lengths[old]! + 1;
      old = code;
    } else {
      if (old === undefined) throw new Error(`invalid LZW code ${code} with no previous code`);
      if (code > tableLength) throw new LzwCodeError(`LZW code ${code} is not yet in the table (${tableLength} entries)`);
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

/**
 * Width, height and components of every start-of-frame marker in a JPEG
 * stream, entropy-coded data included (a frame after the first scan counts
 * as much as the first one).
 */
export function jpegFrames(data: Uint8Array): { width: number; height: number; components: number }[] {
  const frames: { width: number; height: number; components: number }[] = [];
  let i = 0;
  while (i + 1 < data.length) {
    if (data[i] !== 0xff) {
      i++;
      continue;
    }
    const marker = data[i + 1]!;
    // fill bytes, stuffed zeros in scan data, TEM, restart markers, SOI and EOI carry no length
    if (marker === 0xff) {
      i++;
      continue;
    }
    if (marker === 0x00 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd9)) {
      i += 2;
      continue;
    }
    if (i + 3 >= data.length) break;
    const length = (data[i + 2]! << 8) | data[i + 3]!;
    if (length < 2) throw new Error(`JPEG marker 0x${marker.toString(16)} has a length of ${length}`);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (i + 9 >= data.length) throw new Error('the JPEG frame header is cut short');
      frames.push({ height: (data[i + 5]! << 8) | data[i + 6]!, width: (data[i + 7]! << 8) | data[i + 8]!, components: data[i + 9]! });
    }
    i += 2 + length; // a scan's data follows its header: walked byte by byte above
  }
  return frames;
}

/** The first frame of a JPEG stream (kept for callers of the single-frame check). */
export function jpegFrameSize(data: Uint8Array): { width: number; height: number; components: number } | undefined {
  return jpegFrames(data)[0];
}

function mib(bytes: number): string {
  return bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}
