/**
 * Reading an uploaded file as a GeoTIFF (geotiff.js, from the file on disk,
 * never whole in memory): its metadata as the data API reports it, its
 * footprint in EPSG:4326 (corners reprojected with proj4), a check that pixel
 * data decodes, and JPEG previews.
 */
import { open } from 'node:fs/promises';
import { fromFile, type GeoTIFF, type GeoTIFFImage } from 'geotiff';
import jpeg from 'jpeg-js';
import proj4 from 'proj4';
import type { BBox } from './geometry.ts';
import { crsFromGeoKeys } from './crs.ts';
import { placeholderPixels } from './placeholder.ts';
import type { ImageMetadata } from './store.ts';
import { checkDirectory, checkPixelsDecode, DecodeRefused, previewDecodable, type ReadBytes } from './raster-bounds.ts';

/** A file the data API refuses; `code` is the live service's detail code. */
export class RasterRejected extends Error {
  readonly code: string;
  readonly parameters: Record<string, unknown>;
  constructor(code: string, message: string, parameters: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RasterRejected';
    this.code = code;
    this.parameters = parameters;
  }
}

export interface RasterInfo {
  meta: ImageMetadata;
  footprintWkt: string;
  footprintBbox: BBox;
  groundPixelSize: number;
}

const METRES_PER_DEGREE = 111_320;

/** proj4 definition of an EPSG code the simulator can reproject, or undefined. */
function projectionOf(epsg: number): string | undefined {
  if (epsg === 4326) return 'EPSG:4326';
  if (epsg === 3857 || epsg === 900913 || epsg === 3785 || epsg === 102100) return 'EPSG:3857';
  if (epsg >= 32601 && epsg <= 32660) return `+proj=utm +zone=${epsg - 32600} +datum=WGS84 +units=m +no_defs`;
  if (epsg >= 32701 && epsg <= 32760) return `+proj=utm +zone=${epsg - 32700} +south +datum=WGS84 +units=m +no_defs`;
  return undefined;
}

function dtypeOf(image: GeoTIFFImage): string {
  const bits = image.getBitsPerSample(0);
  const format = image.getSampleFormat(0);
  const kind = format === 3 ? 'float' : format === 2 ? 'int' : 'uint';
  return `${kind}${bits}`;
}

/** Ranged reads of a file on disk (opened for each read). */
function fileReader(path: string): ReadBytes {
  return async (offset, length) => {
    const handle = await open(path, 'r');
    try {
      const bytes = new Uint8Array(length);
      const { bytesRead } = await handle.read(bytes, 0, length, offset);
      return bytes.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  };
}

async function withTiff<T>(path: string, use: (tiff: GeoTIFF) => Promise<T>): Promise<T> {
  const tiff = await fromFile(path);
  try {
    return await use(tiff);
  } finally {
    await tiff.close();
  }
}

/** Reads what the data API reports about an image, or throws RasterRejected. */
export async function inspectRaster(path: string, limits: { maxPixelCount: number }): Promise<RasterInfo> {
  // The raw directory first: geotiff.js builds an array of every index tag's declared length as it parses it.
  try {
    await checkDirectory(fileReader(path));
  } catch (cause) {
    if (cause instanceof DecodeRefused) throw new RasterRejected('FileOpenError', 'The image pixel data cannot be read', { reason: cause.message, ...cause.parameters }, { cause });
    throw cause;
  }
  let tiff: GeoTIFF;
  try {
    tiff = await fromFile(path);
  } catch (cause) {
    throw new RasterRejected('FileOpenError', 'The file cannot be opened as a GeoTIFF', { reason: (cause as Error).message }, { cause });
  }
  try {
    let image: GeoTIFFImage;
    try {
      image = await tiff.getImage();
    } catch (cause) {
      throw new RasterRejected('FileOpenError', 'The file cannot be opened as a GeoTIFF', { reason: (cause as Error).message }, { cause });
    }
    const width = image.getWidth();
    const height = image.getHeight();
    if (width > limits.maxPixelCount || height > limits.maxPixelCount) {
      throw new RasterRejected('ImageExtentTooBig', 'The image is wider or taller than allowed', { width, height, maxPixelCount: limits.maxPixelCount });
    }
    const keys = (image.getGeoKeys() ?? {}) as Record<string, unknown>;
    const epsg = Number(keys.ProjectedCSTypeGeoKey ?? keys.GeographicTypeGeoKey ?? NaN);
    const read = Number.isFinite(epsg) && projectionOf(epsg) ? undefined : crsFromGeoKeys(keys);
    const projection = (Number.isFinite(epsg) ? projectionOf(epsg) : undefined) ?? read?.projection;
    if (!projection) {
      // mapflow-qgis errors/data_errors.py: ImageOutOfBounds = "check CRS and transform of the image".
      throw new RasterRejected('ImageOutOfBounds', 'The image extent is out of coordinate range: check its CRS and transform', {
        reason: Number.isFinite(epsg) ? `EPSG:${epsg} is not supported` : 'no EPSG code in the GeoTIFF keys',
      });
    }
    let resolution: number[];
    let box: number[];
    try {
      resolution = image.getResolution();
      box = image.getBoundingBox();
    } catch (cause) {
      throw new RasterRejected('ImageOutOfBounds', 'The image extent is out of coordinate range: check its CRS and transform', { reason: (cause as Error).message }, { cause });
    }
    // Pixel data must decode: one pixel (so one block) at nine places, each block bounded before it is decoded (raster-bounds.ts).
    try {
      await checkPixelsDecode(image, fileReader(path));
    } catch (cause) {
      const parameters = cause instanceof DecodeRefused ? cause.parameters : {};
      throw new RasterRejected('FileOpenError', 'The image pixel data cannot be read', { reason: (cause as Error).message, ...parameters }, { cause });
    }

    const [west, south, east, north] = box as [number, number, number, number];
    const toWgs84 = (x: number, y: number) => proj4(projection, 'EPSG:4326', [x, y]) as [number, number];
    const corners = [toWgs84(west, south), toWgs84(east, south), toWgs84(east, north), toWgs84(west, north)];
    const ring = [...corners, corners[0]!];
    const lons = corners.map((c) => c[0]);
    const lats = corners.map((c) => c[1]);
    const footprintBbox: BBox = [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)];
    const pixelSize: [number, number] = [Math.abs(resolution[0]!), Math.abs(resolution[1]!)];
    const centreLat = (footprintBbox[1] + footprintBbox[3]) / 2;
    const groundPixelSize = epsg === 4326 || read?.geographic ? Math.max(...pixelSize) * METRES_PER_DEGREE * Math.cos((centreLat * Math.PI) / 180) : Math.max(...pixelSize);
    const nodata = image.getGDALNoData();
    const count = image.getSamplesPerPixel();
    return {
      meta: {
        crs: read?.name ?? `EPSG:${epsg}`,
        width,
        height,
        count,
        dtypes: Array.from({ length: count }, () => dtypeOf(image)),
        pixel_size: pixelSize,
        nodata: nodata === null || Number.isNaN(nodata) ? null : nodata,
      },
      footprintWkt: `POLYGON ((${ring.map(([x, y]) => `${x.toFixed(8)} ${y.toFixed(8)}`).join(', ')}))`,
      footprintBbox,
      groundPixelSize,
    };
  } finally {
    await tiff.close();
  }
}

/** Scales one band to 0..255 (uint8 as is; others stretched between their min and max). */
function toBytes(band: ArrayLike<number>, isByte: boolean): Uint8ClampedArray {
  const out = new Uint8ClampedArray(band.length);
  if (isByte) {
    for (let i = 0; i < band.length; i++) out[i] = band[i]!;
    return out;
  }
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < band.length; i++) {
    const v = band[i]!;
    if (Number.isFinite(v)) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
  }
  const span = max > min ? max - min : 1;
  for (let i = 0; i < band.length; i++) {
    const v = band[i]!;
    out[i] = Number.isFinite(v) ? ((v - min) / span) * 255 : 0;
  }
  return out;
}

/** A JPEG of size x size: the image's first bands, downsampled from the best overview. */
async function renderImage(path: string, size: number): Promise<Uint8Array> {
  return withTiff(path, async (tiff) => {
    const image = await tiff.getImage();
    const images = await Promise.all(Array.from({ length: Math.min(await tiff.getImageCount(), 17) }, (_, i) => tiff.getImage(i)));
    if (!(await previewDecodable(images, size, fileReader(path)))) throw new Error('the image cannot be decoded within the preview bounds');
    const count = image.getSamplesPerPixel();
    const samples = count >= 3 ? [0, 1, 2] : [0];
    const rasters = (await tiff.readRasters({ width: size, height: size, samples, resampleMethod: 'nearest' })) as unknown as ArrayLike<number>[];
    const isByte = image.getBitsPerSample(0) === 8 && image.getSampleFormat(0) !== 3;
    const bands = samples.map((_, i) => toBytes(rasters[i]!, isByte));
    const rgba = new Uint8Array(size * size * 4);
    for (let p = 0; p < size * size; p++) {
      rgba[p * 4] = bands[0]![p]!;
      rgba[p * 4 + 1] = (bands[1] ?? bands[0]!)[p]!;
      rgba[p * 4 + 2] = (bands[2] ?? bands[0]!)[p]!;
      rgba[p * 4 + 3] = 255;
    }
    return rgba;
  });
}

export async function renderPreview(path: string, size: number): Promise<Buffer> {
  let rgba: Uint8Array;
  try {
    rgba = await renderImage(path, size);
  } catch {
    rgba = placeholderPixels(size);
  }
  return jpeg.encode({ data: rgba, width: size, height: size }, 80).data as Buffer;
}
