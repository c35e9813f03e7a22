/**
 * Bounds on what decoding an uploaded GeoTIFF may allocate, checked from the
 * header and the compressed bytes before geotiff.js decodes anything: its
 * decoders have no output limit (a JPEG frame header of 65,535 x 65,535 in
 * the JPEGTables tag made a 1.7 GB process; an LZW tile of 64 MiB is
 * collected in a plain array of 512 MiB).
 *
 * The live service reads uploads with GDAL, which decodes any tile its memory
 * holds and fails the upload otherwise; it publishes no limit of its own. The
 * figures here are the simulator's own bounds, the same as the bridge's
 * Inspect (functions/geotiff/limits.ts), so that nothing the bridge uploads is
 * refused for them.
 */
import type { GeoTIFFImage } from 'geotiff';

/** A block or header that would make a decoder allocate beyond the bounds below (raster-file.ts answers FileOpenError). */
export class DecodeRefused extends Error {
  constructor(
    message: string,
    readonly parameters: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'DecodeRefused';
  }
}

/** Largest decoded size of one compressed tile or strip (64 MiB, as the bridge's MAX_BLOCK_DECODED_BYTES). */
export const MAX_BLOCK_DECODED_BYTES = 64 * 1024 * 1024;
/**
 * LZW and PackBits blocks larger than this (16 MiB decoded) are checked by
 * walking their code streams, not decoded: geotiff.js collects their output
 * in a plain array, 8 bytes per decoded byte.
 */
export const MAX_ARRAY_DECODED_BYTES = 16 * 1024 * 1024;
/** Largest JPEGTables tag read (tables are a few hundred bytes; 64 KiB holds every table JPEG allows). */
export const MAX_JPEG_TABLES_BYTES = 64 * 1024;

/** The block grid of one image, as its header declares it. */
export interface BlockLayout {
  tiled: boolean;
  blockWidth: number;
  blockHeight: number;
  /** Bytes one block decodes to (one sample's plane when planar). */
  decodedBytes: number;
  /** Blocks the grid needs (times the samples when planar). */
  count: number;
  compression: number;
  samples: number;
}

/** What a bounded look at one block decided. */
export type BlockVerdict = 'decode' | 'sparse' | 'checked';

/** Counts of the work the checks did (tests assert on them, not on time). */
export interface BoundsCounters {
  /** Blocks handed to geotiff.js for decoding. */
  decoded: number;
  /** Blocks whose size was checked without decoding them. */
  walked: number;
  /** Sparse blocks (no bytes): nodata, nothing to decode. */
  sparse: number;
}

const rejected = (reason: string, parameters: Record<string, unknown> = {}) => new DecodeRefused(reason, parameters);

/**
 * The grid, bounded before any decoder exists: a non-empty image, blocks of
 * at least one pixel, a compressed block within MAX_BLOCK_DECODED_BYTES, and
 * an index (offsets and byte counts) of no more entries than the grid has.
 */
export async function checkLayout(image: GeoTIFFImage): Promise<BlockLayout> {
  const directory = image.fileDirectory;
  const width = image.getWidth();
  const height = image.getHeight();
  const samples = image.getSamplesPerPixel();
  if (!(width > 0 && height > 0 && samples > 0)) throw rejected(`the image is empty (${width} x ${height} pixels, ${samples} bands)`);
  const tiled = directory.hasTag('TileWidth') || directory.hasTag('TileOffsets');
  const blockWidth = tiled ? Number(directory.getValue('TileWidth') ?? 0) : width;
  const rowsPerStrip = directory.hasTag('RowsPerStrip') ? Number(directory.getValue('RowsPerStrip') ?? 0) : height;
  const blockHeight = tiled ? Number(directory.getValue('TileLength') ?? 0) : Math.min(rowsPerStrip || height, height);
  if (!(blockWidth > 0 && blockHeight > 0)) throw rejected(`blocks of ${blockWidth} x ${blockHeight} pixels`);
  const compression = Number(directory.getValue('Compression') ?? 1);
  const bits = (directory.getValue('BitsPerSample') as ArrayLike<number> | undefined) ?? [1];
  const planar = Number(directory.getValue('PlanarConfiguration') ?? 1) === 2;
  const sampleBytes = Array.from(bits, (b) => Math.ceil(Number(b) / 8));
  const pixelBytes = planar ? Math.max(...sampleBytes) : sampleBytes.reduce((sum, b) => sum + b, 0);
  const decodedBytes = blockWidth * blockHeight * Math.max(1, pixelBytes);
  const count = Math.ceil(width / blockWidth) * Math.ceil(height / blockHeight) * (planar ? samples : 1);
  if (compression !== 1 && decodedBytes > MAX_BLOCK_DECODED_BYTES) {
    throw rejected(`each compressed block declares ${blockWidth} x ${blockHeight} pixels (${decodedBytes} bytes decoded); the simulator decodes at most ${MAX_BLOCK_DECODED_BYTES} bytes per block`, {
      decodedBytes,
      maxDecodedBytes: MAX_BLOCK_DECODED_BYTES,
    });
  }
  for (const tag of tiled ? ['TileOffsets', 'TileByteCounts'] : ['StripOffsets', 'StripByteCounts']) {
    const entries = indexLength(image, tag);
    if (entries === undefined) throw rejected(`no ${tag}: the file does not say where its pixel data is`);
    if (entries > count) throw rejected(`${tag} lists ${entries} entries for a grid of ${count} blocks`, { entries, blocks: count });
  }
  return { tiled, blockWidth, blockHeight, decodedBytes, count, compression, samples };
}

/** Entries of an index tag, from geotiff.js' directory without loading the values. */
function indexLength(image: GeoTIFFImage, tag: string): number | undefined {
  const directory = image.fileDirectory as unknown as {
    hasTag(tag: string): boolean;
    deferredArrays?: Map<number, { length: number }>;
    actualizedFields?: Map<number, unknown>;
  };
  if (!directory.hasTag(tag)) return undefined;
  const code = TAG_CODES[tag]!;
  const deferred = directory.deferredArrays?.get(code);
  if (deferred) return deferred.length;
  const value = directory.actualizedFields?.get(code);
  if (typeof value === 'number' || typeof value === 'bigint') return 1;
  if (value && typeof (value as ArrayLike<unknown>).length === 'number') return (value as ArrayLike<unknown>).length;
  return undefined;
}

const TAG_CODES: Record<string, number> = { StripOffsets: 273, StripByteCounts: 279, TileOffsets: 324, TileByteCounts: 325 };

/**
 * The JPEGTables tag (TIFF Technical Note 2): a tables-only stream. geotiff.js
 * parses it when it builds the decoder, before any block, and builds any frame
 * it declares: a frame there must fit one block, as a block's own must.
 */
export async function checkJpegTables(image: GeoTIFFImage, layout: BlockLayout): Promise<void> {
  if (layout.compression !== 7 || !image.fileDirectory.hasTag('JPEGTables')) return;
  const entries = image.fileDirectory.hasTag('JPEGTables') ? tagLength(image, 347) : 0;
  if (entries !== undefined && entries > MAX_JPEG_TABLES_BYTES) throw rejected(`the JPEGTables tag holds ${entries} bytes (at most ${MAX_JPEG_TABLES_BYTES})`);
  const tables = (await image.fileDirectory.loadValue('JPEGTables')) as Uint8Array | undefined;
  if (!tables) return;
  if (tables.length > MAX_JPEG_TABLES_BYTES) throw rejected(`the JPEGTables tag holds ${tables.length} bytes (at most ${MAX_JPEG_TABLES_BYTES})`);
  checkFrames(jpegFrames(tables), layout, 'the JPEGTables tag');
}

function tagLength(image: GeoTIFFImage, code: number): number | undefined {
  const directory = image.fileDirectory as unknown as { deferredArrays?: Map<number, { length: number }> };
  return directory.deferredArrays?.get(code)?.length;
}

function checkFrames(frames: JpegFrame[], layout: BlockLayout, where: string): void {
  for (const frame of frames) {
    if (!(frame.width > 0 && frame.height > 0 && frame.components > 0)) throw rejected(`${where} declares an empty JPEG frame (${frame.width} x ${frame.height}, ${frame.components} components)`);
    if (frame.width > layout.blockWidth || frame.height > layout.blockHeight || frame.components > Math.max(layout.samples, 4)) {
      throw rejected(`${where} declares a JPEG frame of ${frame.width} x ${frame.height} pixels, ${frame.components} components, for blocks of ${layout.blockWidth} x ${layout.blockHeight}`, {
        frame,
        block: [layout.blockWidth, layout.blockHeight],
      });
    }
  }
}

/**
 * One block, from its compressed bytes, before geotiff.js is let near it:
 * 'sparse' (no bytes: nodata), 'checked' (an LZW or PackBits block too large
 * for geotiff.js' arrays, whose code stream was walked instead and fits), or
 * 'decode' (safe for geotiff.js: every JPEG frame fits the block).
 */
export function checkBlock(layout: BlockLayout, data: Uint8Array, counters?: BoundsCounters): BlockVerdict {
  if (data.length === 0) {
    if (counters) counters.sparse++;
    return 'sparse';
  }
  const arrayDecoder = layout.compression === 5 || layout.compression === 32773;
  if (arrayDecoder && layout.decodedBytes > MAX_ARRAY_DECODED_BYTES) {
    const length = layout.compression === 5 ? lzwOutputLength(data, layout.decodedBytes) : packBitsOutputLength(data, layout.decodedBytes);
    if (length > layout.decodedBytes) throw rejected(`a block decodes to more than its declared ${layout.decodedBytes} bytes`);
    if (counters) counters.walked++;
    return 'checked';
  }
  if (layout.compression === 7) checkFrames(jpegFrames(data), layout, 'a tile');
  if (counters) counters.decoded++;
  return 'decode';
}

interface JpegFrame {
  width: number;
  height: number;
  components: number;
}

/** Every start-of-frame marker of a JPEG stream (scan data included: a second frame is built as the first). */
export function jpegFrames(data: Uint8Array): JpegFrame[] {
  const frames: JpegFrame[] = [];
  let i = 0;
  while (i + 1 < data.length) {
    if (data[i] !== 0xff) {
      i++;
      continue;
    }
    const marker = data[i + 1]!;
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
    if (length < 2) throw rejected(`JPEG marker 0x${marker.toString(16)} has a length of ${length}`);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (i + 9 >= data.length) throw rejected('a JPEG frame header is cut short');
      frames.push({ height: (data[i + 5]! << 8) | data[i + 6]!, width: (data[i + 7]! << 8) | data[i + 8]!, components: data[i + 9]! });
    }
    i += 2 + length;
  }
  return frames;
}

/** Output length of a TIFF LZW stream (codes of 9-12 bits, early change), stopping past `limit`; a code no writer emits is refused. */
export function lzwOutputLength(data: Uint8Array, limit: number): number {
  const CLEAR = 256;
  const EOI = 257;
  const lengths = new Uint32Array(4096);
  lengths.fill(1, 0, 258);
  let tableLength = 258;
  let width = 9;
  let bit = 0;
  const totalBits = data.length * 8;
  const next = (): number => {
    if (bit + width > totalBits) return EOI;
    let code = 0;
    for (let k = 0; k < width; k++) {
      const at = bit + k;
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
      if (code > CLEAR) throw rejected(`corrupted LZW code ${code}`);
      out += 1;
      old = code;
    } else if (code >= 4093) {
      throw rejected(`LZW code ${code} lies beyond the code table`);
    } else if (code < tableLength) {
      out += lengths[code]!;
      if (old !== undefined && tableLength < 4096) lengths[tableLength++] = lengths[old]! + 1;
      old = code;
    } else {
      if (old === undefined || code > tableLength) throw rejected(`invalid LZW code ${code}`);
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

/** Output length of a PackBits stream, stopping past `limit`. */
export function packBitsOutputLength(data: Uint8Array, limit: number): number {
  let out = 0;
  for (let i = 0; i < data.length && out <= limit; i++) {
    const header = (data[i]! << 24) >> 24;
    if (header < 0) {
      if (header !== -128) out += -header + 1;
      i += header === -128 ? 0 : 1;
    } else {
      out += header + 1;
      i += header + 1;
    }
  }
  return out;
}

/** Reads `length` bytes at `offset` of the uploaded file. */
export type ReadBytes = (offset: number, length: number) => Promise<Uint8Array>;

/** The compressed bytes of block `index` (empty for a sparse block). */
export async function blockBytes(image: GeoTIFFImage, layout: BlockLayout, index: number, read: ReadBytes): Promise<Uint8Array> {
  const directory = image.fileDirectory;
  const offset = Number(await directory.loadValueIndexed(layout.tiled ? 'TileOffsets' : 'StripOffsets', index));
  const count = Number(await directory.loadValueIndexed(layout.tiled ? 'TileByteCounts' : 'StripByteCounts', index));
  if (!(count > 0)) return new Uint8Array(0);
  if (!Number.isFinite(offset) || offset < 0) throw rejected(`block ${index} lies at byte ${offset}`);
  // A compressed block never holds much more than it decodes to (LZW's worst case is 1.5 bytes per byte).
  if (count > layout.decodedBytes * 2 + 64 * 1024) throw rejected(`block ${index} holds ${count} bytes for ${layout.decodedBytes} decoded`);
  return read(offset, count);
}

/**
 * Pixel data must decode: one pixel (so one block) at nine places of the
 * full-resolution image, each block once, each bounded by checkBlock before
 * geotiff.js decodes it; sparse blocks are nodata, LZW and PackBits blocks
 * too large for geotiff.js' arrays are walked instead.
 */
export async function checkPixelsDecode(image: GeoTIFFImage, read: ReadBytes, counters: BoundsCounters = { decoded: 0, walked: 0, sparse: 0 }): Promise<BoundsCounters> {
  const layout = await checkLayout(image);
  await checkJpegTables(image, layout);
  const width = image.getWidth();
  const height = image.getHeight();
  const perRow = Math.ceil(width / layout.blockWidth);
  const sampled = new Set<number>();
  for (const fy of [0, 0.5, 1]) {
    for (const fx of [0, 0.5, 1]) {
      const x = Math.floor(fx * (width - 1));
      const y = Math.floor(fy * (height - 1));
      const index = Math.floor(y / layout.blockHeight) * perRow + Math.floor(x / layout.blockWidth);
      if (sampled.has(index)) continue;
      sampled.add(index);
      const verdict = checkBlock(layout, await blockBytes(image, layout, index, read), counters);
      if (verdict === 'decode') await image.readRasters({ window: [x, y, x + 1, y + 1], samples: [0] });
    }
  }
  return counters;
}

/**
 * Whether a preview may decode the image at all: every image of the file
 * (geotiff.js picks an overview or the full image) within the bounds, every
 * JPEG block's frame checked, no LZW or PackBits block too large for
 * geotiff.js' arrays, and at most MAX_PREVIEW_DECODED_BYTES of blocks to
 * decode. Otherwise the preview is a placeholder.
 */
export async function previewDecodable(images: GeoTIFFImage[], size: number, read: ReadBytes): Promise<boolean> {
  if (images.length === 0 || images.length > MAX_PREVIEW_IMAGES) return false;
  try {
    // geotiff.js reads the coarsest image at least as fine as the preview asks; every image is checked alike.
    const fineEnough = images.filter((image) => image.getWidth() >= size && image.getHeight() >= size);
    const used = fineEnough.length > 0 ? fineEnough.reduce((a, b) => (a.getWidth() <= b.getWidth() ? a : b)) : images[0]!;
    for (const image of images) {
      const layout = await checkLayout(image);
      await checkJpegTables(image, layout);
      const arrayDecoder = layout.compression === 5 || layout.compression === 32773;
      if (arrayDecoder && layout.decodedBytes > MAX_ARRAY_DECODED_BYTES) return false;
      if (image !== used) continue;
      if (layout.count * layout.decodedBytes > MAX_PREVIEW_DECODED_BYTES) return false;
      if (layout.compression === 7) {
        if (layout.count > MAX_PREVIEW_BLOCKS) return false;
        for (let i = 0; i < layout.count; i++) checkBlock(layout, await blockBytes(image, layout, i, read));
      }
    }
    return true;
  } catch (error) {
    if (error instanceof DecodeRefused) return false;
    throw error;
  }
}

/** Images (full resolution and overviews) a preview looks at. */
export const MAX_PREVIEW_IMAGES = 16;
/** JPEG blocks whose frames a preview checks one by one. */
export const MAX_PREVIEW_BLOCKS = 16_384;
/** Blocks' decoded bytes a preview may decode (256 MiB: a 10,000 x 10,000 RGB image without overviews). */
export const MAX_PREVIEW_DECODED_BYTES = 256 * 1024 * 1024;

/**
 * The first image directory read raw, before geotiff.js parses it: geotiff.js
 * builds a typed array of every array tag's declared length as it reads the
 * directory, so the block index may not list more entries than the grid has
 * blocks, and JPEGTables stays within MAX_JPEG_TABLES_BYTES, before that.
 * Anything this cannot read is left to geotiff.js, which refuses it.
 */
export async function checkDirectory(read: ReadBytes): Promise<void> {
  const head = await read(0, 16);
  if (head.length < 8) return;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const little = head[0] === 0x49;
  if (!little && head[0] !== 0x4d) return;
  const big = view.getUint16(2, little) === 43;
  if (big && head.length < 16) return;
  const at = big ? Number(view.getBigUint64(8, little)) : view.getUint32(4, little);
  const countBytes = big ? 8 : 2;
  const entrySize = big ? 20 : 12;
  const header = await read(at, countBytes);
  if (header.length < countBytes) return;
  const headerView = new DataView(header.buffer, header.byteOffset, header.byteLength);
  const entries = Math.min(big ? Number(headerView.getBigUint64(0, little)) : headerView.getUint16(0, little), 4096);
  const table = await read(at + countBytes, entries * entrySize);
  const tableView = new DataView(table.buffer, table.byteOffset, table.byteLength);
  const counts = new Map<number, number>();
  const inline = new Map<number, number>();
  for (let i = 0; (i + 1) * entrySize <= table.length; i++) {
    const base = i * entrySize;
    const tag = tableView.getUint16(base, little);
    const type = tableView.getUint16(base + 2, little);
    const count = big ? Number(tableView.getBigUint64(base + 4, little)) : tableView.getUint32(base + 4, little);
    counts.set(tag, count);
    const valueAt = base + (big ? 12 : 8);
    if (count === 1 && type === 3) inline.set(tag, tableView.getUint16(valueAt, little));
    if (count === 1 && type === 4) inline.set(tag, tableView.getUint32(valueAt, little));
  }
  const jpegTables = counts.get(347);
  if (jpegTables !== undefined && jpegTables > MAX_JPEG_TABLES_BYTES) throw rejected(`the JPEGTables tag holds ${jpegTables} bytes (at most ${MAX_JPEG_TABLES_BYTES})`);
  const width = inline.get(256) ?? 0;
  const height = inline.get(257) ?? 0;
  if (!(width > 0 && height > 0)) return;
  const tiled = counts.has(322) || counts.has(324);
  const blockWidth = tiled ? (inline.get(322) ?? 0) : width;
  const blockHeight = tiled ? (inline.get(323) ?? 0) : Math.min(inline.get(278) || height, height);
  if (!(blockWidth > 0 && blockHeight > 0)) return;
  const planes = inline.get(284) === 2 ? (inline.get(277) ?? counts.get(258) ?? 1) : 1;
  const grid = Math.ceil(width / blockWidth) * Math.ceil(height / blockHeight) * planes;
  for (const [tag, name] of tiled ? ([[324, 'TileOffsets'], [325, 'TileByteCounts']] as const) : ([[273, 'StripOffsets'], [279, 'StripByteCounts']] as const)) {
    const entriesOf = counts.get(tag);
    if (entriesOf !== undefined && entriesOf > grid) throw rejected(`${name} lists ${entriesOf} entries for a grid of ${grid} blocks`, { entries: entriesOf, blocks: grid });
  }
}
