/**
 * GeoTIFF: header inspection through ranged reads, and the checks that decide
 * whether Mapflow will take an image, before a byte of it is uploaded.
 */
export { fileRangeSource, s3RangeSource, RangeSourceAdapter, ShortReadError, type RangeSource } from './source.ts';
export { inspectGeoTiff, inspectGeoTiffInProcess, PROBE_MAX_BLOCK_BYTES, useGeoTiffInspector, type GeoTiffInfo, type InspectOptions } from './inspect.ts';
export {
  checkImageAgainstMosaic,
  checkImageForModel,
  checkImageLimits,
  DEFAULT_MAX_PIXEL_COUNT,
  DEFAULT_MAX_UPLOAD_FILE_SIZE,
  requirementsForModel,
  UnknownModelRequirements,
  type ModelRequirements,
} from './checks.ts';
export { projDefinition, SUPPORTED_CRS_TEXT, toWgs84 } from './crs.ts';
export {
  checkBlockDecodedSize,
  MAX_BLOCK_DECODED_BYTES,
  MAX_BLOCKS,
  MAX_IMAGE_SIDE_PIXELS,
  MAX_PLAUSIBLE_OFFSET,
} from './limits.ts';
