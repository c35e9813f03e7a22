/**
 * Checks of an inspected image against what Mapflow will accept: the model's
 * input requirements, the account's upload limits, and the mosaic it joins.
 * Each check throws InputRejected with every problem found in one message, so
 * the user fixes the file once.
 */
import { InputRejected } from '../core/errors.ts';
import type { GeoTiffInfo } from './inspect.ts';

export interface ModelRequirements {
  /** Band counts the model takes. */
  bands: number[];
  /** Data types refused before the upload ('uint8', ...); empty: any, Mapflow's validator decides. */
  dtypes: string[];
  /** Finest accepted pixel size, m/px (0: none known). */
  minPixelSizeM: number;
  /** Coarsest accepted pixel size, m/px (Infinity: none known, Mapflow's validator decides). */
  maxPixelSizeM: number;
}

/** A model the bridge has no requirements for (a custom model): Mapflow's own validator decides. */
export class UnknownModelRequirements extends Error {
  constructor(readonly modelName: string) {
    super(`no known image requirements for model '${modelName}'`);
    this.name = 'UnknownModelRequirements';
  }
}

/**
 * Requirements of the default models, from Geoalert's reference
 * (mapflow-docs-en source/userguides/reference.rst). These checks run before
 * anything is spent and must never refuse what the live service accepts, so
 * they refuse only what a source says fails:
 * - Bands (line 21, and faq.rst line 27): uploads are "RGB composite,
 *   RGBa or Singleband" for every model. Buildings also takes 2 bands, as the
 *   spec's default-model table gives it "1 to 3".
 * - Data type (line 18): uploads are "preprocessed in Uint8"; no source says
 *   another type is refused, so none is refused here: Mapflow's validator
 *   decides (its DtypeNotAllowed ends the job REJECTED UNSUPPORTED_DATA_TYPE,
 *   functions/jobs/outcome.ts).
 * - Pixel size (lines 41-98, "Required GSD range", m/px): Buildings 0.3-1.5,
 *   Forest (and Forest Heights) 0.15-0.75, Tree crowns 0.15-0.3, Roads
 *   0.1-1.2, Constructions 0.5-2.0. Outside it "the request will fail".
 *   Buildings (Aerial) is not in that table (api_reference.rst lines
 *   1310-1311 give only its 0.1 m/px resolution), so its pixel size is left to
 *   Mapflow's validator.
 */
const RGB_RGBA_OR_SINGLE_BAND = [1, 3, 4];
const DEFAULT_MODELS: { match: (name: string) => boolean; requirements: ModelRequirements }[] = [
  { match: (n) => n.includes('buildings') && n.includes('aerial'), requirements: { bands: RGB_RGBA_OR_SINGLE_BAND, dtypes: [], minPixelSizeM: 0, maxPixelSizeM: Infinity } },
  { match: (n) => n.includes('buildings'), requirements: { bands: [1, 2, 3, 4], dtypes: [], minPixelSizeM: 0.3, maxPixelSizeM: 1.5 } },
  { match: (n) => n.includes('tree crowns'), requirements: { bands: RGB_RGBA_OR_SINGLE_BAND, dtypes: [], minPixelSizeM: 0.15, maxPixelSizeM: 0.3 } },
  { match: (n) => n.includes('forest'), requirements: { bands: RGB_RGBA_OR_SINGLE_BAND, dtypes: [], minPixelSizeM: 0.15, maxPixelSizeM: 0.75 } },
  { match: (n) => n.includes('roads'), requirements: { bands: RGB_RGBA_OR_SINGLE_BAND, dtypes: [], minPixelSizeM: 0.1, maxPixelSizeM: 1.2 } },
  { match: (n) => n.includes('construction'), requirements: { bands: RGB_RGBA_OR_SINGLE_BAND, dtypes: [], minPixelSizeM: 0.5, maxPixelSizeM: 2.0 } },
];

/**
 * Uploads finer than this are resampled to it by Mapflow before any model
 * sees them (reference.rst line 24: "Images with a pixel size less than
 * 10 cm/px will be resampled to this resolution"), so the finest pixel size a
 * model can meet is 0.1 m: a 0.05 m drone image runs on Roads (0.1-1.2).
 */
export const UPLOAD_RESAMPLED_BELOW_M = 0.1;

/**
 * Slack on the model's pixel-size bounds: the reference gives GSD in UTM
 * (reference.rst lines 48-49); the bridge measures it in the image's own CRS,
 * which may differ by a little. A border case goes to Mapflow's validator.
 */
const PIXEL_SIZE_SLACK = 0.02;

/**
 * Requirements of a default model by name, matched leniently ('🏠 Buildings',
 * 'buildings', 'Forest and trees' ...).
 * @throws UnknownModelRequirements for any other model
 */
export function requirementsForModel(modelName: string): ModelRequirements {
  const normalised = modelName
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9 ()]+/g, ' ')
    .trim();
  const entry = DEFAULT_MODELS.find((m) => m.match(normalised));
  if (!entry) throw new UnknownModelRequirements(modelName);
  return structuredClone(entry.requirements);
}

/** @throws InputRejected UNSUPPORTED_BANDS, UNSUPPORTED_DATA_TYPE, PIXEL_SIZE_TOO_COARSE, PIXEL_SIZE_TOO_FINE (first problem's code; all problems in the message) */
export function checkImageForModel(info: Pick<GeoTiffInfo, 'bands' | 'dtypes' | 'pixelSizeM'>, req: ModelRequirements): void {
  const problems: { code: string; text: string }[] = [];
  if (req.bands.length > 0 && !req.bands.includes(info.bands)) {
    problems.push({ code: 'UNSUPPORTED_BANDS', text: `it has ${info.bands} band(s), the model takes ${describeList(req.bands)}` });
  }
  const badTypes = [...new Set(info.dtypes.filter((t) => !req.dtypes.includes(t)))];
  if (req.dtypes.length > 0 && badTypes.length > 0) {
    problems.push({ code: 'UNSUPPORTED_DATA_TYPE', text: `its data type is ${badTypes.join('/')}, the model takes ${req.dtypes.join(' or ')}` });
  }
  const coarsest = Math.max(...info.pixelSizeM);
  // What the model meets: Mapflow resamples finer uploads to 0.1 m first.
  const finest = Math.max(Math.min(...info.pixelSizeM), UPLOAD_RESAMPLED_BELOW_M);
  if (coarsest > req.maxPixelSizeM * (1 + PIXEL_SIZE_SLACK)) {
    problems.push({ code: 'PIXEL_SIZE_TOO_COARSE', text: `its pixel size is ${m(coarsest)} m, coarser than the model's maximum of ${m(req.maxPixelSizeM)} m/px` });
  } else if (finest < req.minPixelSizeM * (1 - PIXEL_SIZE_SLACK)) {
    const actual = Math.min(...info.pixelSizeM);
    const resampled = actual < UPLOAD_RESAMPLED_BELOW_M ? ` (Mapflow resamples it to ${m(UPLOAD_RESAMPLED_BELOW_M)} m)` : '';
    problems.push({ code: 'PIXEL_SIZE_TOO_FINE', text: `its pixel size is ${m(actual)} m${resampled}, finer than the model's minimum of ${m(req.minPixelSizeM)} m/px` });
  }
  if (problems.length === 0) return;

  const fixes = problems.map((p) => FIXES[p.code]!);
  throw new InputRejected(problems[0]!.code, `the image does not suit the model: ${problems.map((p) => p.text).join('; ')}. ${[...new Set(fixes)].join(' ')}`, {
    details: { problems: problems.map((p) => p.code), bands: info.bands, dtypes: info.dtypes, pixelSizeM: info.pixelSizeM, requirements: req },
  });
}

const FIXES: Record<string, string> = {
  UNSUPPORTED_BANDS: 'Mapflow takes RGB, RGBA or single-band images: keep those bands (e.g. gdal_translate -b 1 -b 2 -b 3 in.tif out.tif).',
  UNSUPPORTED_DATA_TYPE: 'Convert to 8-bit (e.g. gdal_translate -ot Byte -scale in.tif out.tif).',
  PIXEL_SIZE_TOO_COARSE: 'Use sharper imagery, or a route whose model works at this resolution.',
  PIXEL_SIZE_TOO_FINE: 'Resample the image to the model\'s resolution (e.g. gdalwarp -tr 0.5 0.5 in.tif out.tif).',
};

/** Defaults the public clients use when the account does not say (real-api-notes). */
export const DEFAULT_MAX_UPLOAD_FILE_SIZE = 2 * 1024 ** 3;
export const DEFAULT_MAX_PIXEL_COUNT = 30_000;

/** @throws InputRejected FILE_TOO_LARGE, IMAGE_TOO_MANY_PIXELS, STORAGE_QUOTA_EXCEEDED */
export function checkImageLimits(
  info: Pick<GeoTiffInfo, 'width' | 'height'>,
  fileSize: number,
  limits: { maxUploadFileSize?: number; maxPixelCount?: number; freeBytes?: number },
): void {
  const maxFile = limits.maxUploadFileSize ?? DEFAULT_MAX_UPLOAD_FILE_SIZE;
  const maxPixels = limits.maxPixelCount ?? DEFAULT_MAX_PIXEL_COUNT;
  if (fileSize > maxFile) {
    throw new InputRejected('FILE_TOO_LARGE', `the image is ${bytes(fileSize)}; Mapflow accepts uploads up to ${bytes(maxFile)}. Split it into tiles (e.g. gdal_retile.py) and drop them one by one`, {
      details: { fileSize, maxUploadFileSize: maxFile },
    });
  }
  if (info.width > maxPixels || info.height > maxPixels) {
    throw new InputRejected(
      'IMAGE_TOO_MANY_PIXELS',
      `the image is ${info.width} x ${info.height} pixels; Mapflow accepts at most ${maxPixels} pixels in width and in height. Split it into tiles (e.g. gdal_retile.py)`,
      { details: { width: info.width, height: info.height, maxPixelCount: maxPixels } },
    );
  }
  if (limits.freeBytes !== undefined && fileSize > limits.freeBytes) {
    throw new InputRejected(
      'STORAGE_QUOTA_EXCEEDED',
      `the image needs ${bytes(fileSize)} but the Mapflow account has ${bytes(Math.max(0, limits.freeBytes))} of storage free: delete old mosaics or images, or ask for more storage`,
      { details: { fileSize, freeBytes: limits.freeBytes } },
    );
  }
}

/**
 * All images of a mosaic must have the same band count; nothing else. The
 * live service reprojects and resamples a new image "to match the CRS and
 * GSD (pixel size) of other images in collection" (mapflow-docs-en
 * source/userguides/reference.rst lines 25-26), so a CRS or pixel size unlike
 * the mosaic's is no reason to refuse it. Compares the image with the
 * metadata of the images already in the mosaic.
 * @throws InputRejected MOSAIC_MISMATCH when the band count differs
 */
export function checkImageAgainstMosaic(info: Pick<GeoTiffInfo, 'bands'>, existing: { crs?: string; count?: number; pixel_size?: number[] }[]): void {
  const reference = existing.find((e) => e.count !== undefined);
  if (!reference || reference.count === info.bands) return;
  const difference = `${info.bands} band(s) instead of ${reference.count}`;
  throw new InputRejected(
    'MOSAIC_MISMATCH',
    `the image does not match the images already in its mosaic: ${difference}. All images of a mosaic need the same band count (Mapflow reprojects and resamples the rest): convert it to ${reference.count} band(s), or drop it under a route with another mosaic`,
    { details: { differences: [difference] } },
  );
}

function describeList(values: number[]): string {
  if (values.length === 1) return `${values[0]}`;
  const sorted = [...values].sort((a, b) => a - b);
  const contiguous = sorted.every((v, i) => i === 0 || v === sorted[i - 1]! + 1);
  return contiguous ? `${sorted[0]} to ${sorted[sorted.length - 1]}` : sorted.join(', ');
}

function m(value: number): string {
  return value >= 10 ? value.toFixed(0) : String(Number(value.toFixed(value >= 1 ? 2 : 3)));
}

function bytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(2)} GiB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${n} bytes`;
}
