/**
 * Reads what the bridge needs to know about a GeoTIFF from its header alone,
 * through ranged reads: size, bands, data types, CRS, pixel size and where on
 * Earth it lies. Optionally probes the pixel data so a damaged file is turned
 * away before it is uploaded.
 */
import { GeoTIFF, type GeoTIFFImage } from 'geotiff';
import type { Polygon } from 'geojson';
import { checkDeadline, type DecodeDeadline } from '../core/deadline.ts';
import { InputRejected } from '../core/errors.ts';
import { areaOfUse, crsName, definitionUnitInMetres, fromWgs84, isGeographic, metresPerDegree, projDefinition, SUPPORTED_CRS_TEXT, toWgs84, type CrsRef } from './crs.ts';
import { userDefinedDefinition } from './geokeys.ts';
import { RangeSourceAdapter, ShortReadError, type RangeSource } from './source.ts';
import {
  BLOCK_SLACK_BYTES,
  BlockOverflow,
  checkBands,
  checkJpegTables,
  checkBlockDecodedSize,
  checkBlockLayout,
  checkImageSize,
  LzwCodeError,
  MAX_COMPRESSED_RATIO,
  MAX_PLAUSIBLE_OFFSET,
  type BlockLayout,
} from './limits.ts';

export interface GeoTiffInfo {
  width: number;
  height: number;
  bands: number;
  /** One per band: 'uint8', 'uint16', 'int16', 'float32', ... */
  dtypes: string[];
  epsg?: number;
  /** 'EPSG:<code>' */
  crs: string;
  /** Pixel size [x, y] in metres (projected CRS units, or converted from degrees at the image centre). */
  pixelSizeM: [number, number];
  /** Pixel size [x, y] in the units of the CRS (degrees for a geographic CRS), as Mapflow's image metadata reports it. */
  pixelSize: [number, number];
  /** GDAL nodata value (NaN when it is 'nan'), null when none is set. */
  nodata: number | null;
  tiled: boolean;
  /** The pixel grid is rotated or sheared against the CRS axes. */
  rotated: boolean;
  /** [minx, miny, maxx, maxy] in the image's CRS. */
  bbox: [number, number, number, number];
  /** [minLon, minLat, maxLon, maxLat]. */
  bbox4326: [number, number, number, number];
  /** The image outline in EPSG:4326 (counter-clockwise, edges densified). */
  footprint4326: Polygon;
  /** Bytes read from the source to produce this (header, plus the probe if asked for). */
  bytesRead: number;
}

export interface InspectOptions {
  /**
   * Also check the image data: every block lies within the file and decodes
   * to no more than its declared size (each compressed block is read once,
   * streamed in windows of SCAN_WINDOW_BYTES), and the first and last blocks
   * decode.
   */
  probePixels?: boolean;
  /** When the pixel check must stop (the step's time, core/deadline.ts): DecodeTimedOut, INPUT_TOO_COMPLEX. */
  deadline?: DecodeDeadline;
}

/** What to do about a GeoTIFF whose pixel data takes too long to check. */
const TIFF_TIME_FIX =
  'Export it again from a GIS with a standard compression and tiles (e.g. gdal_translate -co COMPRESS=DEFLATE -co TILED=YES), or split it into tiles (gdal_retile.py -ps 10000 10000) and drop them one by one';

/** Bytes read at once while scanning every block (adjacent blocks share a read). */
export const SCAN_WINDOW_BYTES = 8 * 1024 * 1024;

/** Values a tag the inspection reads whole may hold (tiepoints, scales, matrices); offsets and byte counts are bounded by the block grid. */
export const MAX_TAG_VALUES = 65_536;

/** Blocks whose compressed bytes exceed this are range-checked but not read by the probe (a single-strip image can be the whole file). */
export const PROBE_MAX_BLOCK_BYTES = 16 * 1024 * 1024;

/** LZW and PackBits blocks are decoded by the probe only up to this declared size (geotiff.js collects their output in a plain array). */
export const PROBE_MAX_ARRAY_DECODED_BYTES = 16 * 1024 * 1024;

/** Pixel-to-CRS affine transform: x = a*col + b*row + c, y = d*col + e*row + f. */
interface Affine {
  a: number;
  b: number;
  c: number;
  d: number;
  e: number;
  f: number;
}

/**
 * Inspects a GeoTIFF with ranged reads only.
 * @throws InputRejected EMPTY_FILE, NOT_GEOTIFF, TIFF_TRUNCATED, TIFF_CORRUPT, NOT_GEOREFERENCED,
 *   IMAGE_TOO_MANY_PIXELS, TIFF_BLOCK_TOO_LARGE, TIFF_TOO_MANY_BLOCKS, TIFF_DECODED_TOO_LARGE, CROSSES_ANTIMERIDIAN
 */
export async function inspectGeoTiff(source: RangeSource, options: InspectOptions = {}): Promise<GeoTiffInfo> {
  return inspector ? inspector(source, options) : inspectGeoTiffInProcess(source, options);
}

type Inspector = (source: RangeSource, options: InspectOptions) => Promise<GeoTiffInfo>;
let inspector: Inspector | undefined;

/**
 * Where inspectGeoTiff runs: in this thread by default (a Lambda runs one
 * step at a time); local mode passes a worker-thread runner
 * (packages/local/src/engine/workers.ts) so one heavy image does not stall the other jobs.
 * `undefined` restores the default.
 */
export function useGeoTiffInspector(run: Inspector | undefined): void {
  inspector = run;
}

/** inspectGeoTiff in this thread, whatever runner is installed. */
export async function inspectGeoTiffInProcess(source: RangeSource, options: InspectOptions = {}): Promise<GeoTiffInfo> {
  if (source.size === 0) throw new InputRejected('EMPTY_FILE', 'the file is empty: drop the GeoTIFF again once it is completely written');
  const adapter = new RangeSourceAdapter(source);
  try {
    return await inspectWith(adapter, options, source);
  } catch (error) {
    throw classify(error, adapter);
  }
}

/**
 * What an error while reading means. A failing source (S3 throttling, network)
 * is passed on unchanged so the caller can retry; a short read means the file
 * was cut; any other error from parsing means the file is damaged.
 */
function classify(error: unknown, adapter: RangeSourceAdapter): unknown {
  if (adapter.readFailure !== undefined) return adapter.readFailure;
  if (error instanceof InputRejected) return error;
  if (error instanceof ShortReadError) return truncated(error);
  return new InputRejected('TIFF_CORRUPT', `the TIFF cannot be read (${errorText(error)}): export the image again`, { cause: error });
}

async function inspectWith(adapter: RangeSourceAdapter, options: InspectOptions, source: RangeSource): Promise<GeoTiffInfo> {
  const { image, tagCounts } = await openFirstImage(adapter);

  const width = image.getWidth();
  const height = image.getHeight();
  // Sizes first: everything below (footprint, probe) scales with them.
  checkImageSize(width, height);
  const bands = image.getSamplesPerPixel();
  checkBands(bands);
  checkNotDegenerate(width, height);
  const layout = checkBlockLayout(image);
  checkTagCounts(tagCounts, layout);
  await checkTables(image, layout);
  const dtypes = Array.from({ length: bands }, (_, i) => dtypeOf(image, i));
  checkRealValued(dtypes);
  const transform = await readTransform(image);
  const epsg = readCrs(image, transform);
  const geographic = isGeographic(epsg);
  const units = geographic ? 1 : linearUnitInMetres(image, epsg);

  const corners: [number, number][] = [
    [0, 0],
    [0, height],
    [width, height],
    [width, 0],
  ].map(([col, row]) => apply(transform, col!, row!));
  const xs = corners.map((p) => p[0]);
  const ys = corners.map((p) => p[1]);
  const bbox: [number, number, number, number] = [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];

  const outline = densifiedOutline(transform, width, height);
  const footprintRing = outline.map(toWgs84(epsg));
  // In longitude/latitude an image may run on past ±180° (GDAL reads 179.5° to 180.5° as it is): one
  // whose longitudes pass ±180° straddles the antimeridian, which is said as such rather than "not on Earth".
  if (geographic && footprintRing.every(([lon, lat]) => Number.isFinite(lon) && Number.isFinite(lat) && Math.abs(lat) <= 90)) {
    const west = Math.min(...footprintRing.map((p) => p[0]));
    const east = Math.max(...footprintRing.map((p) => p[0]));
    const meridian = [180, -180].find((m) => west < m && east > m);
    if (meridian !== undefined && east - west < 360) throw crossesAntimeridian([meridian, footprintRing[0]![1]], epsg);
  }
  if (footprintRing.some(([lon, lat]) => !Number.isFinite(lon) || !Number.isFinite(lat) || Math.abs(lon) > 180 || Math.abs(lat) > 90)) {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      `the image's corners do not fall on Earth in its CRS ${crsName(epsg)} (bounds ${bbox.map((v) => +v.toFixed(3)).join(', ')}): check the CRS and the geotransform`,
    );
  }
  // Mapflow receives the footprint as the processing's geometry: one that wraps across ±180° would be read
  // as a band around the world, and the budget guard would price the wrong area (RFC 7946 3.1.9).
  const crossing = footprintRing.findIndex((p, i) => Math.abs(footprintRing[(i + 1) % footprintRing.length]![0] - p[0]) > 180);
  if (crossing >= 0) throw crossesAntimeridian(footprintRing[crossing]!, epsg);
  checkPlacement(epsg, outline, footprintRing, bbox);
  const lons = footprintRing.map((p) => p[0]);
  const lats = footprintRing.map((p) => p[1]);
  const bbox4326: [number, number, number, number] = [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)];

  const pixelSize: [number, number] = [Math.hypot(transform.a, transform.d), Math.hypot(transform.b, transform.e)];
  let pixelSizeM: [number, number];
  if (geographic) {
    const [mLon, mLat] = metresPerDegree((bbox4326[1] + bbox4326[3]) / 2);
    pixelSizeM = [pixelSize[0] * mLon, pixelSize[1] * mLat];
  } else {
    pixelSizeM = [pixelSize[0] * units, pixelSize[1] * units];
  }

  checkPixelSize(pixelSizeM, epsg);
  if (options.probePixels) await probePixels(image, adapter, layout, source, options.deadline);

  return {
    width,
    height,
    bands,
    dtypes,
    ...(typeof epsg === 'number' && { epsg }),
    crs: crsName(epsg),
    pixelSizeM,
    pixelSize,
    nodata: readNodata(image),
    tiled: image.fileDirectory.hasTag('TileWidth'),
    rotated: transform.b !== 0 || transform.d !== 0,
    bbox,
    bbox4326,
    footprint4326: { type: 'Polygon', coordinates: [[...footprintRing, footprintRing[0]!]] },
    bytesRead: adapter.bytesRead,
  };
}

/** Opens the TIFF and parses its first image directory, naming what is wrong when it cannot. */
async function openFirstImage(adapter: RangeSourceAdapter): Promise<{ image: GeoTIFFImage; tagCounts: Map<number, number> }> {
  let tiff: GeoTIFF;
  try {
    tiff = await GeoTIFF.fromSource(adapter.asGeoTiffSource());
  } catch (cause) {
    if (cause instanceof ShortReadError) throw truncated(cause);
    const head = new Uint8Array((await adapter.fetch([{ offset: 0, length: 16 }]))[0]!);
    if (isTiffMagic(head)) {
      // A TIFF signature with a header geotiff.js cannot use (e.g. a BigTIFF directory offset beyond 2^53).
      throw new InputRejected('TIFF_CORRUPT', `the file starts like a TIFF but its header is damaged (${errorText(cause)}): export the image again`, { cause });
    }
    throw new InputRejected('NOT_GEOTIFF', `the file is not a TIFF${sniff(head)}: drop a GeoTIFF (.tif) exported from a GIS`, { cause });
  }
  if (adapter.fileSize < (tiff.bigTiff ? 16 : 8)) throw truncated(undefined);
  if (tiff.firstIFDOffset >= MAX_PLAUSIBLE_OFFSET) {
    throw new InputRejected('TIFF_CORRUPT', `the TIFF header places its image directory at byte ${tiff.firstIFDOffset}, beyond any possible file: the header is damaged; export the image again`);
  }
  if (tiff.firstIFDOffset >= adapter.fileSize) {
    throw new InputRejected('TIFF_TRUNCATED', `the file ends (${adapter.fileSize} bytes) before its image directory at byte ${tiff.firstIFDOffset}: it was cut short; upload it again`);
  }
  const tagCounts = await assertDirectoryWithinFile(adapter, tiff);
  checkIndexAgainstGrid(tagCounts.inline, tagCounts);
  try {
    const image = await tiff.getImage(0);
    // Touch the fields every later step needs, so a damaged directory fails here.
    if (!(image.getWidth() > 0 && image.getHeight() > 0 && image.getSamplesPerPixel() > 0)) throw new Error('image has no pixels');
    return { image, tagCounts };
  } catch (cause) {
    if (cause instanceof ShortReadError || adapter.readBeyondEnd) throw truncated(cause);
    throw new InputRejected('TIFF_CORRUPT', `the TIFF's image directory cannot be read (${errorText(cause)}): export the image again`, { cause });
  }
}

const FIELD_TYPE_SIZES: Record<number, number> = { 1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8, 17: 8, 18: 8 };

/**
 * geotiff.js reads a cut-off directory as zeros (sources are padded), which
 * would surface later as a misleading "not georeferenced". So the first
 * directory, and every tag value stored outside it, is checked to lie within
 * the file first.
 */
async function assertDirectoryWithinFile(adapter: RangeSourceAdapter, tiff: GeoTIFF): Promise<Map<number, number> & { inline: Map<number, number> }> {
  const counts = Object.assign(new Map<number, number>(), { inline: new Map<number, number>() });
  const size = adapter.fileSize;
  const at = tiff.firstIFDOffset;
  const big = tiff.bigTiff;
  const countBytes = big ? 8 : 2;
  const entrySize = big ? 20 : 12;
  const inline = big ? 8 : 4;
  const read = async (offset: number, length: number) => new DataView((await adapter.fetch([{ offset, length }]))[0]!);
  const header = await read(at, countBytes);
  const entries = big ? Number(header.getBigUint64(0, tiff.littleEndian)) : header.getUint16(0, tiff.littleEndian);
  const end = at + countBytes + entries * entrySize + (big ? 8 : 4);
  if (at + countBytes > size || end > size) {
    throw new InputRejected('TIFF_TRUNCATED', `the file ends (${size} bytes) inside its image directory (bytes ${at}-${end}): it was cut short; upload it again`);
  }
  const table = await read(at + countBytes, entries * entrySize);
  for (let i = 0; i < entries; i++) {
    const base = i * entrySize;
    const type = table.getUint16(base + 2, tiff.littleEndian);
    const count = big ? Number(table.getBigUint64(base + 4, tiff.littleEndian)) : table.getUint32(base + 4, tiff.littleEndian);
    counts.set(table.getUint16(base, tiff.littleEndian), count);
    // A single SHORT or LONG held in the entry itself (sizes, tiles, strips, samples): the grid is known before any array is built.
    if (count === 1 && (type === 3 || type === 4)) {
      const value = type === 3 ? table.getUint16(base + (big ? 12 : 8), tiff.littleEndian) : table.getUint32(base + (big ? 12 : 8), tiff.littleEndian);
      counts.inline.set(table.getUint16(base, tiff.littleEndian), value);
    }
    const bytes = (FIELD_TYPE_SIZES[type] ?? 1) * count;
    if (bytes <= inline) continue;
    const valueAt = big ? Number(table.getBigUint64(base + 12, tiff.littleEndian)) : table.getUint32(base + 8, tiff.littleEndian);
    if (valueAt >= MAX_PLAUSIBLE_OFFSET || bytes >= MAX_PLAUSIBLE_OFFSET) {
      const tag = table.getUint16(base, tiff.littleEndian);
      throw new InputRejected('TIFF_CORRUPT', `TIFF tag ${tag} declares ${count} values at byte ${valueAt}, beyond any possible file: the image directory is damaged; export the image again`);
    }
    if (valueAt + bytes > size) {
      const tag = table.getUint16(base, tiff.littleEndian);
      throw new InputRejected('TIFF_TRUNCATED', `the file ends (${size} bytes) before the value of TIFF tag ${tag} (bytes ${valueAt}-${valueAt + bytes}): it was cut short; upload it again`);
    }
  }
  return counts;
}

/**
 * The block index against the grid, from the raw directory, before geotiff.js
 * parses it: it builds a typed array of every index tag's declared length as
 * it reads the directory, before a value is read (100,000 offsets for one
 * tile, or a billion in a large enough file, allocated at once).
 * @throws InputRejected TIFF_CORRUPT
 */
function checkIndexAgainstGrid(inline: Map<number, number>, counts: Map<number, number>): void {
  const width = inline.get(256);
  const height = inline.get(257);
  if (!(width! > 0 && height! > 0)) return; // geotiff.js' own reading refuses it next
  const tiled = counts.has(322) || counts.has(324);
  const blockWidth = tiled ? (inline.get(322) ?? 0) : width!;
  const blockHeight = tiled ? (inline.get(323) ?? 0) : Math.min(inline.get(278) || height!, height!);
  if (!(blockWidth > 0 && blockHeight > 0)) return; // checkBlockLayout names it
  const planes = inline.get(284) === 2 ? (inline.get(277) ?? counts.get(258) ?? 1) : 1;
  const grid = Math.ceil(width! / blockWidth) * Math.ceil(height! / blockHeight) * planes;
  for (const tag of tiled ? [324, 325] : [273, 279]) {
    const count = counts.get(tag);
    if (count !== undefined && count > grid) {
      throw new InputRejected(
        'TIFF_CORRUPT',
        `the TIFF lists ${count} ${OFFSET_TAGS[tag]} for an image of ${grid} ${tiled ? 'tiles' : 'strips'}: the image directory is damaged or crafted; export the image again`,
        { details: { tag, count, blocks: grid } },
      );
    }
  }
}

const OFFSET_TAGS: Record<number, string> = { 273: 'strip offsets', 279: 'strip byte counts', 324: 'tile offsets', 325: 'tile byte counts' };
const VALUE_TAGS: Record<number, string> = { 347: 'JPEGTables', 33550: 'ModelPixelScale', 33922: 'ModelTiepoint', 34264: 'ModelTransformation', 34735: 'GeoKeyDirectory', 34736: 'GeoDoubleParams', 34737: 'GeoAsciiParams' };

/**
 * Counts of the tags the inspection loads, from the raw directory, before any
 * is loaded: the block index may not list more entries than the grid has
 * blocks (12 million offsets for a one-strip image made 12 million objects,
 * 828 MB), and the georeferencing tags stay small.
 * @throws InputRejected TIFF_CORRUPT
 */
function checkTagCounts(counts: Map<number, number>, layout: BlockLayout): void {
  for (const [tag, what] of Object.entries(OFFSET_TAGS)) {
    const count = counts.get(Number(tag));
    if (count !== undefined && count > layout.count) {
      throw new InputRejected(
        'TIFF_CORRUPT',
        `the TIFF lists ${count} ${what} for an image of ${layout.count} ${layout.tiled ? 'tiles' : 'strips'}: the image directory is damaged or crafted; export the image again`,
        { details: { tag: Number(tag), count, blocks: layout.count } },
      );
    }
  }
  for (const [tag, what] of Object.entries(VALUE_TAGS)) {
    const count = counts.get(Number(tag));
    if (count !== undefined && count > MAX_TAG_VALUES) {
      throw new InputRejected(
        'TIFF_CORRUPT',
        `the TIFF's ${what} tag holds ${count} values (at most ${MAX_TAG_VALUES} are read): the image directory is damaged or crafted; export the image again`,
        { details: { tag: Number(tag), count, maxValues: MAX_TAG_VALUES } },
      );
    }
  }
}

/**
 * The JPEGTables tag of a JPEG image, before any decoder is built: geotiff.js
 * parses it first, and builds any frame it declares, whether or not a block
 * is ever decoded (an image of sparse corner blocks was never probed, and its
 * tables' 65,535 x 65,535 frame made the simulator's process 1.7 GB).
 * @throws InputRejected TIFF_DECODED_TOO_LARGE, TIFF_CORRUPT
 */
async function checkTables(image: GeoTIFFImage, layout: BlockLayout): Promise<void> {
  if (layout.compression !== 7 || !image.fileDirectory.hasTag('JPEGTables')) return;
  const tables = (await image.fileDirectory.loadValue('JPEGTables')) as Uint8Array | undefined;
  if (!tables || tables.length === 0) return;
  try {
    checkJpegTables(tables, { width: layout.blockWidth, height: layout.blockHeight }, layout.decodedBytes);
  } catch (cause) {
    if (cause instanceof BlockOverflow) {
      throw new InputRejected(
        'TIFF_DECODED_TOO_LARGE',
        `the JPEGTables tag declares a JPEG frame larger than the image's ${layout.blockWidth} x ${layout.blockHeight} pixel blocks: the file is damaged or crafted (a decompression bomb); export the image again from a GIS`,
        { cause, details: { blockWidth: layout.blockWidth, blockHeight: layout.blockHeight } },
      );
    }
    throw new InputRejected('TIFF_CORRUPT', `the image's JPEG tables cannot be used (${errorText(cause)}): the file is damaged; export it again`, { cause });
  }
}

/** Decoders throw strings as well as Errors (pako does). */
function errorText(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

function truncated(cause: unknown): InputRejected {
  return new InputRejected('TIFF_TRUNCATED', 'the file ends before the data its header describes: it was cut short (an interrupted copy or upload); upload it again', {
    cause,
  });
}

/** II*\0, MM\0*, and their BigTIFF forms II+\0, MM\0+. */
function isTiffMagic(head: Uint8Array): boolean {
  const le = head[0] === 0x49 && head[1] === 0x49 && head[3] === 0x00 && (head[2] === 42 || head[2] === 43);
  const be = head[0] === 0x4d && head[1] === 0x4d && head[2] === 0x00 && (head[3] === 42 || head[3] === 43);
  return le || be;
}

/** What a non-TIFF file probably is, from its first bytes (for the message). */
function sniff(head: Uint8Array): string {
  const starts = (...bytes: number[]) => bytes.every((b, i) => head[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47)) return ' (it is a PNG image)';
  if (starts(0xff, 0xd8, 0xff)) return ' (it is a JPEG image)';
  if (starts(0x25, 0x50, 0x44, 0x46)) return ' (it is a PDF)';
  if (starts(0x50, 0x4b, 0x03, 0x04)) return ' (it is a ZIP archive)';
  const text = new TextDecoder().decode(head).trimStart();
  if (text.startsWith('{') || text.startsWith('[')) return ' (it looks like JSON; name GeoJSON files .geojson)';
  return '';
}

/**
 * Complex and unknown sample formats are not imagery Mapflow processes, and
 * geotiff.js cannot decode them (which used to read as a damaged file).
 * @throws InputRejected UNSUPPORTED_DATA_TYPE
 */
function checkRealValued(dtypes: string[]): void {
  const odd = [...new Set(dtypes.filter((t) => t.startsWith('complex') || t.startsWith('format')))];
  if (odd.length === 0) return;
  throw new InputRejected(
    'UNSUPPORTED_DATA_TYPE',
    `the image's data type is ${odd.join('/')}; the bridge takes real-valued bands (8-bit for Mapflow's models). ` +
      'Convert it, e.g. gdal_translate -ot Byte -scale in.tif out.tif (for complex SAR data, compute the amplitude first)',
    { details: { dtypes: odd } },
  );
}

function dtypeOf(image: GeoTIFFImage, sample: number): string {
  const bits = image.getBitsPerSample(sample);
  const format = image.getSampleFormat(sample);
  const kind = format === 2 ? 'int' : format === 3 ? 'float' : format === 1 || format === 4 ? 'uint' : format === 5 ? 'complex-int' : format === 6 ? 'complex-float' : `format${format}-`;
  // GDAL's complex types name each part's bits: CInt16 has 32 bits per sample.
  return kind.startsWith('complex') ? `${kind}${bits / 2}` : `${kind}${bits}`;
}

async function numbers(image: GeoTIFFImage, tag: 'ModelTransformation' | 'ModelTiepoint' | 'ModelPixelScale'): Promise<number[] | undefined> {
  if (!image.fileDirectory.hasTag(tag)) return undefined;
  const value = (await image.fileDirectory.loadValue(tag)) as ArrayLike<number> | undefined;
  return value ? Array.from(value, Number) : undefined;
}

/**
 * The pixel-to-CRS transform, read as GDAL reads it (frmts/gtiff/gtiffdataset_read.cpp,
 * LoadGeoreferencingAndPamIfNeeded): a non-zero ModelPixelScale with a tiepoint first, the
 * scale's y taken as -|y| (north up); ModelTransformation only without them, and only with its
 * 16 values. When a file carries both and they disagree, GDAL and so the live service read the
 * scale and tiepoint while other readers take the matrix: such a file is refused rather than
 * processed where nobody meant it (GEOTRANSFORM_CONFLICT). PixelIsPoint rasters are shifted
 * half a pixel, as GDAL does.
 */
async function readTransform(image: GeoTIFFImage): Promise<Affine> {
  const matrix = await numbers(image, 'ModelTransformation');
  const tiepoints = await numbers(image, 'ModelTiepoint');
  const scale = await numbers(image, 'ModelPixelScale');
  const fromMatrix: Affine | undefined =
    matrix && matrix.length === 16 ? { a: matrix[0]!, b: matrix[1]!, c: matrix[3]!, d: matrix[4]!, e: matrix[5]!, f: matrix[7]! } : undefined;
  const scaled = scale && scale.length >= 2 && scale[0] !== 0 && scale[1] !== 0 && tiepoints && tiepoints.length >= 6;
  let t: Affine;
  if (scaled) {
    const [i, j, , x, y] = tiepoints as [number, number, number, number, number];
    const e = -Math.abs(scale[1]!);
    t = { a: scale[0]!, b: 0, c: x - i * scale[0]!, d: 0, e, f: y - j * e };
    if (fromMatrix && !sameTransform(t, fromMatrix)) throw conflictingTransforms(t, fromMatrix);
  } else if (fromMatrix) {
    t = fromMatrix;
  } else if (tiepoints && tiepoints.length >= 6) {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      'the image is placed by ground control points only, without a geotransform: warp it first (e.g. gdalwarp -t_srs EPSG:3857 in.tif out.tif)',
    );
  } else {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      'the TIFF has no georeferencing (no geotransform and no coordinate system): export it from a GIS as a GeoTIFF with its CRS',
    );
  }
  if (![t.a, t.b, t.c, t.d, t.e, t.f].every(Number.isFinite) || t.a * t.e - t.b * t.d === 0) {
    throw new InputRejected('NOT_GEOREFERENCED', 'the image\'s geotransform is degenerate (zero or invalid pixel size): export it again with its georeferencing');
  }
  const geoKeys = image.getGeoKeys();
  if (geoKeys?.GTRasterTypeGeoKey === 2) {
    t.c -= 0.5 * (t.a + t.b);
    t.f -= 0.5 * (t.d + t.e);
  }
  return t;
}

/** Two geotransforms place every pixel within a thousandth of a pixel of each other. */
function sameTransform(p: Affine, q: Affine): boolean {
  const pixel = Math.max(Math.hypot(p.a, p.d), Math.hypot(p.b, p.e), Math.hypot(q.a, q.d), Math.hypot(q.b, q.e));
  const close = (u: number, v: number, scale: number) => Math.abs(u - v) <= 1e-3 * scale;
  return close(p.a, q.a, pixel) && close(p.b, q.b, pixel) && close(p.d, q.d, pixel) && close(p.e, q.e, pixel) && close(p.c, q.c, pixel) && close(p.f, q.f, pixel);
}

function conflictingTransforms(scaled: Affine, matrix: Affine): InputRejected {
  const size = (t: Affine) => `${+Math.hypot(t.a, t.d).toPrecision(4)} x ${+Math.hypot(t.b, t.e).toPrecision(4)}`;
  const origin = (t: Affine) => `${+t.c.toPrecision(10)}, ${+t.f.toPrecision(10)}`;
  return new InputRejected(
    'GEOTRANSFORM_CONFLICT',
    `the GeoTIFF has two geotransforms that disagree: its tiepoint and pixel scale give pixels of ${size(scaled)} from ${origin(scaled)}, its ModelTransformation ${size(matrix)} from ${origin(matrix)}. ` +
      'GDAL (and Mapflow) read the first, other tools the second, so the image would be processed where you may not expect it. ' +
      'Keep one: check with gdalinfo which is right, then write it again (e.g. gdal_translate -a_ullr <ulx> <uly> <lrx> <lry> in.tif out.tif)',
    { details: { tiepointAndScale: scaled, modelTransformation: matrix } },
  );
}

/**
 * The CRS from the GeoKeys, as GDAL reads it: the EPSG code of ProjectedCSTypeGeoKey or
 * GeographicTypeGeoKey (any projected or geographic CRS of the EPSG dataset, crs.ts), or,
 * for a user-defined one (32767), the projection its keys define (geokeys.ts).
 */
function readCrs(image: GeoTIFFImage, transform: Affine): CrsRef {
  const keys = image.getGeoKeys();
  const rotated = transform.b !== 0 || transform.d !== 0 ? ' The geotransform is also rotated; Mapflow expects north-up images (gdalwarp makes one).' : '';
  if (!keys) {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      `the image has a geotransform but no coordinate reference system (no GeoKeys), so it cannot be placed on the map. Assign its CRS, e.g. gdal_edit.py -a_srs EPSG:32632 image.tif.${rotated}`,
    );
  }
  const model = keys.GTModelTypeGeoKey as number | undefined;
  const projected = keys.ProjectedCSTypeGeoKey as number | undefined;
  const geographic = keys.GeographicTypeGeoKey as number | undefined;
  const code = model === 2 ? geographic : (projected ?? (model === undefined ? geographic : undefined));
  const userDefined = code === 32767 || (code === undefined && (model === 1 || model === 2));
  if (userDefined) {
    const definition = userDefinedDefinition(keys as Record<string, unknown>);
    if (definition) return definition;
  }
  if (code === undefined || code === 32767 || code <= 0) {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      `the image's coordinate reference system has no EPSG code and its GeoKeys define no projection the bridge can read (${String(keys.GTCitationGeoKey ?? 'user-defined').replace(/[^\x20-\x7e]/g, '?').slice(0, 80)}): reproject it to an EPSG system, e.g. gdalwarp -t_srs EPSG:3857 in.tif out.tif.${rotated}`,
    );
  }
  if (!Number.isInteger(code)) {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      `the image's coordinate reference system code is ${code}, which is not an EPSG code (they are integers): assign its CRS again, e.g. gdal_edit.py -a_srs EPSG:32632 image.tif`,
      { details: { epsg: code } },
    );
  }
  if (!projDefinition(code)) {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      `the image is in EPSG:${code}, which is not a projected or geographic CRS of the EPSG dataset, so the bridge cannot place it on the map (supported: ${SUPPORTED_CRS_TEXT}): reproject it, e.g. gdalwarp -t_srs EPSG:3857 in.tif out.tif`,
      { details: { epsg: code } },
    );
  }
  return code;
}

/** Metres per CRS unit from ProjLinearUnitsGeoKey (when absent: the CRS definition's unit, metre for most). */
function linearUnitInMetres(image: GeoTIFFImage, crs: CrsRef): number {
  const unit = image.getGeoKeys()?.ProjLinearUnitsGeoKey as number | undefined;
  if (typeof crs === 'string') return definitionUnitInMetres(crs);
  switch (unit) {
    case undefined:
      return definitionUnitInMetres(crs);
    case 9001:
      return 1;
    case 9002:
      return 0.3048;
    case 9003:
      return 1200 / 3937;
    default:
      throw new InputRejected('NOT_GEOREFERENCED', `the image's linear unit (GeoKey unit code ${unit}) of ${crsName(crs)} is not metres or feet: reproject it to a metric CRS`);
  }
}

/** Farthest the image may reach beyond its CRS's area of use, degrees (images near a zone's or country's edge are common). */
export const AREA_OF_USE_MARGIN_DEG = 3;
/** Largest difference a projection's round trip may leave, CRS units (metres): proj4's datum shifts stay around a millimetre. */
const ROUND_TRIP_TOLERANCE = 1;

/**
 * The image must lie where its CRS is defined, in projected coordinates and
 * on the ground: proj4 answers coordinates far outside a projection with
 * in-range nonsense (a UTM northing of 1e9 came back as 9E 1.84N, a Web
 * Mercator x beyond the world wrapped to 171W), so every outline point must
 * survive the round trip to WGS84 and back, and the footprint must lie
 * within the CRS's area of use (EPSG dataset, crs-areas.ts) with a margin.
 * @throws InputRejected NOT_GEOREFERENCED
 */
function checkPlacement(epsg: CrsRef, outline: [number, number][], footprint: [number, number][], bbox: [number, number, number, number]): void {
  const back = fromWgs84(epsg);
  const drift = outline.reduce((max, p, i) => {
    const [x, y] = back(footprint[i]!);
    return Math.max(max, Math.hypot(x - p[0], y - p[1]));
  }, 0);
  const bounds = bbox.map((v) => +v.toPrecision(6)).join(', ');
  if (!(drift <= ROUND_TRIP_TOLERANCE)) {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      `the image's coordinates (bounds ${bounds}) lie outside what ${crsName(epsg)} can represent (converted to longitude/latitude and back they move by ${drift.toPrecision(3)} units): ` +
        'the geotransform or the CRS is wrong; check them (gdalinfo) and assign the right CRS, e.g. gdal_edit.py -a_srs EPSG:32632',
      { details: { crs: crsName(epsg), bbox, roundTripDrift: drift } },
    );
  }
  const area = areaOfUse(epsg);
  if (!area) return;
  const [west, south, east, north] = area;
  const m = AREA_OF_USE_MARGIN_DEG;
  // Longitudes on the circle: an area may run across 180° (west > east), and its margin too.
  const span = east - west >= 360 ? 360 : (((east - west) % 360) + 360) % 360;
  const inLon = (lon: number) => span + 2 * m >= 360 || (((lon - (west - m)) % 360) + 360) % 360 <= span + 2 * m;
  const outside = footprint.find(([lon, lat]) => !inLon(lon) || lat < south - m || lat > north + m);
  if (outside) {
    throw new InputRejected(
      'NOT_GEOREFERENCED',
      `the image lies at ${outside.map((v) => +v.toFixed(4)).join(', ')} (longitude, latitude), outside the area where ${crsName(epsg)} is used ` +
        `(${west}° to ${east}° longitude, ${south}° to ${north}° latitude, EPSG dataset): the CRS or the geotransform is wrong; assign the right CRS (e.g. gdal_edit.py -a_srs) or reproject the image`,
      { details: { crs: crsName(epsg), areaOfUse: area, position: outside } },
    );
  }
}

function crossesAntimeridian(near: [number, number], epsg: CrsRef): InputRejected {
  return new InputRejected(
    'CROSSES_ANTIMERIDIAN',
    `the image straddles the antimeridian (180° longitude) near ${near.map((v) => +v.toFixed(4)).join(', ')}: cut it at 180° into two images ` +
      '(e.g. gdalwarp -te with each side\'s extent) and drop them separately',
    { details: { crs: crsName(epsg) } },
  );
}

/** Fewest pixels per side: an image one pixel wide or high is a point or a line, not imagery a model can segment. */
export const MIN_IMAGE_SIDE_PIXELS = 2;

/** @throws InputRejected IMAGE_TOO_SMALL for an image of fewer than MIN_IMAGE_SIDE_PIXELS in width or height */
function checkNotDegenerate(width: number, height: number): void {
  if (width >= MIN_IMAGE_SIDE_PIXELS && height >= MIN_IMAGE_SIDE_PIXELS) return;
  throw new InputRejected(
    'IMAGE_TOO_SMALL',
    `the image is ${width} x ${height} pixel(s): a point or a line of pixels, not imagery a model can process. Drop the image it was cut from, or a crop of at least a few hundred pixels a side`,
    { details: { width, height, minSide: MIN_IMAGE_SIDE_PIXELS } },
  );
}

/** A ground pixel between 1 mm and 100 km: anything else is not imagery of the Earth as Mapflow processes it. */
export const PIXEL_SIZE_RANGE_M: readonly [number, number] = [1e-3, 1e5];

/** @throws InputRejected NOT_GEOREFERENCED for a pixel size outside PIXEL_SIZE_RANGE_M */
function checkPixelSize(pixelSizeM: [number, number], epsg: CrsRef): void {
  const [min, max] = PIXEL_SIZE_RANGE_M;
  if (pixelSizeM.every((v) => v >= min && v <= max)) return;
  throw new InputRejected(
    'NOT_GEOREFERENCED',
    `the geotransform gives pixels of ${pixelSizeM.map((v) => v.toPrecision(3)).join(' x ')} m in ${crsName(epsg)}; a ground pixel is between 1 mm and 100 km: ` +
      'the pixel size (or the unit of the CRS) is wrong; export the image again with its georeferencing',
    { details: { pixelSizeM, range: PIXEL_SIZE_RANGE_M } },
  );
}

function apply(t: Affine, col: number, row: number): [number, number] {
  return [t.a * col + t.b * row + t.c, t.d * col + t.e * row + t.f];
}

/** The outline of the image in CRS units, 8 points per edge (edges curve when reprojected). Not closed. */
function densifiedOutline(t: Affine, width: number, height: number): [number, number][] {
  const steps = 8;
  const path: [number, number][] = [];
  const edges: [number, number, number, number][] = [
    [0, 0, 0, height], // left edge, downwards: with north up, the ring runs counter-clockwise
    [0, height, width, height],
    [width, height, width, 0],
    [width, 0, 0, 0],
  ];
  for (const [c0, r0, c1, r1] of edges) {
    for (let s = 0; s < steps; s++) path.push(apply(t, c0 + ((c1 - c0) * s) / steps, r0 + ((r1 - r0) * s) / steps));
  }
  return path;
}

function readNodata(image: GeoTIFFImage): number | null {
  try {
    return image.getGDALNoData();
  } catch {
    return null;
  }
}

/**
 * Checks the pixel data: every tile or strip of the full-resolution image
 * must lie inside the file, every compressed one must decode to no more than
 * its declared size, and the first and last must decode.
 *   - a block that starts at or after the end of the file: TIFF_TRUNCATED
 *   - a block that starts inside but runs past the end, blocks that overlap,
 *     a block that fails to decode: TIFF_CORRUPT
 *   - a block that decodes to more than its declared size: TIFF_DECODED_TOO_LARGE
 *     (checked with bounded memory, every block, before geotiff.js, whose
 *     decoders have no output limit, is let near the first and the last)
 * Nothing is built per block: the offsets and byte counts stay typed arrays.
 */
async function probePixels(image: GeoTIFFImage, adapter: RangeSourceAdapter, layout: BlockLayout, source: RangeSource, deadline?: DecodeDeadline): Promise<void> {
  const directory = image.fileDirectory;
  const tiled = layout.tiled;
  const kind = tiled ? 'tile' : 'strip';
  let offsets: ArrayLike<number | bigint>;
  let counts: ArrayLike<number | bigint>;
  try {
    offsets = (await directory.loadValue(tiled ? 'TileOffsets' : 'StripOffsets')) as ArrayLike<number | bigint>;
    counts = (await directory.loadValue(tiled ? 'TileByteCounts' : 'StripByteCounts')) as ArrayLike<number | bigint>;
    if (!offsets || !counts || typeof offsets.length !== 'number' || typeof counts.length !== 'number') throw new Error('no offsets');
  } catch (cause) {
    if (cause instanceof ShortReadError || adapter.readBeyondEnd) throw truncated(cause);
    throw new InputRejected('TIFF_CORRUPT', 'the TIFF does not say where its image data is (no tile or strip offsets): export the image again', { cause });
  }
  const blockCount = Math.min(offsets.length, layout.count);
  const offsetOf = (i: number) => Number(offsets[i]);
  const countOf = (i: number) => Number(counts[i] ?? 0);
  const size = adapter.fileSize;
  let present = 0;
  let missing = 0;
  let needed = 0;
  let overrun = -1;
  for (let i = 0; i < blockCount; i++) {
    const count = countOf(i);
    if (!(count > 0)) continue;
    const offset = offsetOf(i);
    present++;
    needed = Math.max(needed, offset + count);
    if (offset >= size) missing++;
    else if (offset + count > size && overrun < 0) overrun = i;
  }
  if (present === 0) {
    // GDAL reads a block without bytes (offset and byte count 0) as nodata: an image made only of them holds no imagery.
    throw new InputRejected(
      'NO_PIXEL_DATA',
      `none of the image's ${blockCount} ${kind}s holds any data (every byte count is 0, a "sparse" file): there is no imagery to process. Export the image again with its pixels`,
      { details: { blocks: blockCount } },
    );
  }
  if (missing > 0) {
    throw new InputRejected(
      'TIFF_TRUNCATED',
      `the file is ${size} bytes but its header places image data up to byte ${needed} (${missing} of ${present} ${kind}s are missing): it was cut short; upload it again`,
      { details: { size, needed } },
    );
  }
  if (overrun >= 0) {
    throw new InputRejected(
      'TIFF_CORRUPT',
      `${kind} ${overrun} is said to span bytes ${offsetOf(overrun)}-${offsetOf(overrun) + countOf(overrun)} but the file ends at byte ${size}: the file is damaged (or was cut short); export or upload it again`,
      { details: { size, block: overrun } },
    );
  }

  if (layout.compression !== 1) await scanBlocks(source, adapter, layout, blockCount, offsetOf, countOf, deadline);

  // The first and last pixel through geotiff.js, whose decoders are safe once the streams are bounded above.
  // ZSTD is not: zstddec allocates what the frame header declares. Node's zstd decoded every block above.
  if (layout.compression === 50000) return;
  const perPlane = Math.ceil(image.getWidth() / layout.blockWidth) * Math.ceil(image.getHeight() / layout.blockHeight);
  const probed = [0, perPlane - 1];
  // geotiff.js' LZW and PackBits decoders collect their output in a plain array (8 bytes per byte).
  if ((layout.compression === 5 || layout.compression === 32773) && layout.decodedBytes > PROBE_MAX_ARRAY_DECODED_BYTES) return;
  if (probed.some((i) => !(countOf(i) > 0) || countOf(i) > PROBE_MAX_BLOCK_BYTES)) return;
  const width = image.getWidth();
  const height = image.getHeight();
  const probes: [number, number][] = [
    [0, 0],
    [width - 1, height - 1],
  ];
  for (const [x, y] of probes) {
    checkDeadline(deadline, 'decoding the image data', TIFF_TIME_FIX);
    try {
      await image.readRasters({ window: [x, y, x + 1, y + 1] });
    } catch (cause) {
      if (cause instanceof ShortReadError) throw truncated(cause);
      throw new InputRejected(
        'TIFF_CORRUPT',
        `the image data cannot be decoded (pixel ${x},${y}: ${errorText(cause)}): the file is damaged; export it again`,
        { cause, details: { x, y } },
      );
    }
  }
}

/**
 * Declared pixel data the scan decodes at most (4 GiB: a 30,000 x 30,000 RGBA
 * image, above the accounts' default maxPixelCount). Each distinct block is
 * decoded once, so the work is bounded by this, whatever the file repeats.
 */
export const MAX_SCANNED_DECODED_BYTES = 4 * 1024 ** 3;

/**
 * Every compressed block, in file order, read in windows of at most
 * SCAN_WINDOW_BYTES straight from the source (not through the header cache),
 * checked by checkBlockDecodedSize with its declared size as the limit.
 * Blocks listed twice with the same bytes are checked once; blocks that
 * overlap otherwise are refused.
 */
async function scanBlocks(
  source: RangeSource,
  adapter: RangeSourceAdapter,
  layout: BlockLayout,
  blockCount: number,
  offsetOf: (i: number) => number,
  countOf: (i: number) => number,
  deadline?: DecodeDeadline,
): Promise<void> {
  const kind = layout.tiled ? 'tile' : 'strip';
  const declared = layout.count * layout.decodedBytes;
  if (declared > MAX_SCANNED_DECODED_BYTES) {
    throw new InputRejected(
      'IMAGE_TOO_MANY_PIXELS',
      `the image's compressed pixel data decodes to ${(declared / 1024 ** 3).toFixed(1)} GiB; the bridge checks at most ${MAX_SCANNED_DECODED_BYTES / 1024 ** 3} GiB per image before uploading it (Mapflow accounts take 30,000 x 30,000 pixels by default). ` +
        'Split it into tiles (e.g. gdal_retile.py -ps 10000 10000) and drop them one by one',
      { details: { declaredBytes: declared, maxBytes: MAX_SCANNED_DECODED_BYTES } },
    );
  }
  // A compressed block much larger than what it decodes to is damaged; reading one whole must stay bounded.
  const maxCompressed = Math.max(PROBE_MAX_BLOCK_BYTES, layout.decodedBytes * MAX_COMPRESSED_RATIO + BLOCK_SLACK_BYTES);
  const order = new Uint32Array(blockCount);
  let used = 0;
  for (let i = 0; i < blockCount; i++) {
    const count = countOf(i);
    if (!(count > 0)) continue;
    if (count > maxCompressed) {
      throw new InputRejected(
        'TIFF_CORRUPT',
        `${kind} ${i} holds ${count} compressed bytes for ${layout.decodedBytes} decoded bytes: no compression grows data that much; the file is damaged or crafted; export it again`,
        { details: { block: i, compressedBytes: count, declaredBytes: layout.decodedBytes } },
      );
    }
    order[used++] = i;
  }
  const sorted = order.subarray(0, used).sort((a, b) => offsetOf(a) - offsetOf(b) || a - b);
  let k = 0;
  let lastStart = -1;
  let lastEnd = -1;
  while (k < sorted.length) {
    const start = offsetOf(sorted[k]!);
    let end = start + countOf(sorted[k]!);
    let last = k;
    while (last + 1 < sorted.length) {
      const next = sorted[last + 1]!;
      const nextEnd = offsetOf(next) + countOf(next);
      if (offsetOf(next) - end > BLOCK_SLACK_BYTES || Math.max(end, nextEnd) - start > SCAN_WINDOW_BYTES) break;
      end = Math.max(end, nextEnd);
      last++;
    }
    const window = new Uint8Array(await source.read(start, end - start));
    adapter.bytesRead += window.byteLength;
    if (window.byteLength < end - start) throw truncated(new ShortReadError(start, end - start, window.byteLength));
    for (let m = k; m <= last; m++) {
      const index = sorted[m]!;
      const offset = offsetOf(index);
      const count = countOf(index);
      if (offset === lastStart && offset + count === lastEnd) continue; // the same bytes listed again
      if (offset < lastEnd) {
        throw new InputRejected('TIFF_CORRUPT', `${kind} ${index} overlaps another ${kind}'s bytes (${offset}-${offset + count}): the file is damaged or crafted; export it again`, {
          details: { block: index },
        });
      }
      lastStart = offset;
      lastEnd = offset + count;
      checkDeadline(deadline, `decoding the image data (${kind} ${index} of ${sorted.length})`, TIFF_TIME_FIX);
      checkBlock(layout, index, window.subarray(offset - start, offset - start + count));
    }
    k = last + 1;
  }
}

/** One block's bounded decode check, its failures as rejections. */
function checkBlock(layout: BlockLayout, index: number, data: Uint8Array): void {
  const kind = layout.tiled ? 'tile' : 'strip';
  try {
    checkBlockDecodedSize(layout.compression, data, layout.decodedBytes, { width: layout.blockWidth, height: layout.blockHeight });
  } catch (cause) {
    if (cause instanceof BlockOverflow) {
      throw new InputRejected(
        'TIFF_DECODED_TOO_LARGE',
        `${kind} ${index} holds ${data.byteLength} compressed bytes that decode to more than its declared ${layout.blockWidth} x ${layout.blockHeight} pixels (${layout.decodedBytes} bytes): ` +
          'the file is damaged or crafted (a decompression bomb); export the image again from a GIS',
        { details: { block: index, compressedBytes: data.byteLength, declaredBytes: layout.decodedBytes } },
      );
    }
    if (cause instanceof LzwCodeError) {
      throw new InputRejected(
        'TIFF_CORRUPT',
        `${kind} ${index} is not a valid TIFF LZW stream (${cause.message}); decoding it would not end. The file is damaged or crafted: export it again (e.g. gdal_translate -co COMPRESS=DEFLATE in.tif out.tif)`,
        { cause, details: { block: index } },
      );
    }
    throw new InputRejected('TIFF_CORRUPT', `the image data cannot be decoded (${kind} ${index}: ${errorText(cause)}): the file is damaged; export it again`, {
      cause,
      details: { block: index },
    });
  }
}
