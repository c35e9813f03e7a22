/**
 * Typed errors of the bridge. The `name` of an error is what a Lambda reports
 * as its errorType, and so what the state machine's Retry and Catch match on:
 * keep these names stable.
 */

import { wellFormed } from './text.ts';

/**
 * Base class: keeps the cause (like Powertools' errors) and a stable code.
 * The message quotes user text (names, values from files): a lone surrogate
 * in it becomes U+FFFD, so the ledger, the report and the event can carry it.
 */
export class BridgeError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(wellFormed(message), options);
    this.name = 'BridgeError';
    this.code = code;
  }
}

/**
 * The input cannot be processed as it is. Nothing was spent; the job ends
 * REJECTED. The message is `CODE: text` so the code survives Step Functions'
 * error serialisation (which keeps only errorType and errorMessage).
 */
export class InputRejected extends BridgeError {
  readonly details?: Record<string, unknown>;
  constructor(code: RejectionCode | string, message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(code, `${code}: ${message}`, options);
    this.name = 'InputRejected';
    this.details = options?.details;
  }
}

/** Configuration that cannot work (bad routes JSON, missing secret): fail fast. */
export class ConfigurationError extends BridgeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFIGURATION', message, options);
    this.name = 'ConfigurationError';
  }
}

/**
 * A ledger write that met a transaction in flight on the same row every time
 * it was tried (TransactionConflict: a hot `#slots` row under many parts).
 * Nothing was written and nothing is wrong with the job: the state machine's
 * Retry tries the step again later (lib/private/defaults.ts TRANSIENT_ERRORS),
 * where the plain TransactionCanceledException would have failed the part.
 */
export class LedgerContention extends BridgeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEDGER_CONTENTION', message, options);
    this.name = 'LedgerContention';
  }
}

/**
 * Rejection codes. Each comes with a message that tells the user what to fix.
 * Grouped by input kind; extend as new checks are added.
 */
export const REJECTION_CODES = [
  // any input
  'NO_ROUTE',
  'PROCESSING_REJECTED',
  'EMPTY_FILE',
  'UNSUPPORTED_FILE_TYPE',
  'INVALID_KEY',
  'FILE_TOO_LARGE',
  'UNKNOWN_MODEL',
  'UNKNOWN_PROVIDER',
  'INVALID_ROUTE_OVERRIDE',
  'BUDGET_EXCEEDED',
  'INSUFFICIENT_CREDITS',
  'INPUT_TOO_COMPLEX',
  // GeoJSON
  'NOT_JSON',
  'NOT_GEOJSON',
  'NO_POLYGONS',
  'INVALID_GEOMETRY',
  'SELF_INTERSECTING',
  'COORDINATES_OUT_OF_RANGE',
  'AREA_TOO_LARGE',
  'AREA_TOO_SMALL',
  'TOO_MANY_FEATURES',
  'TOO_MANY_AOIS',
  'TOO_MANY_POLYGONS',
  'TOO_MANY_RINGS',
  'TOO_MANY_POSITIONS',
  'GEOMETRY_TOO_COMPLEX',
  'JSON_TOO_DEEP',
  'JSON_TOO_MANY_VALUES',
  'CROSSES_ANTIMERIDIAN',
  'OVERRIDE_TOO_LARGE',
  'OVERRIDE_BAD_CHARACTERS',
  'NO_IMAGERY',
  'INVALID_IMAGERY_SEARCH',
  // GeoTIFF
  'NOT_GEOTIFF',
  'TIFF_TRUNCATED',
  'TIFF_CORRUPT',
  'NOT_GEOREFERENCED',
  'UNSUPPORTED_BANDS',
  'UNSUPPORTED_DATA_TYPE',
  'PIXEL_SIZE_TOO_COARSE',
  'PIXEL_SIZE_TOO_FINE',
  'IMAGE_TOO_MANY_PIXELS',
  'MOSAIC_MISMATCH',
  'IMAGE_PREPROCESSING_FAILED',
  'IMAGE_INCOMPATIBLE',
  'STORAGE_QUOTA_EXCEEDED',
  'TIFF_BLOCK_TOO_LARGE',
  'TIFF_TOO_MANY_BLOCKS',
  'TIFF_DECODED_TOO_LARGE',
  'TIFF_UNSUPPORTED_COMPRESSION',
  'TIFF_TOO_MANY_BANDS',
  // issue 38: geotransforms that disagree, images that cannot hold imagery
  'GEOTRANSFORM_CONFLICT',
  'IMAGE_TOO_SMALL',
  'NO_PIXEL_DATA',
  // issue 25: the live service's limits and refusals
  'IMAGE_AREA_TOO_LARGE',
  'SEARCH_AREA_TOO_LARGE',
  'CATALOG_SEARCH_REFUSED',
] as const;
export type RejectionCode = (typeof REJECTION_CODES)[number];

/** Reads `CODE: text` back out of a serialised InputRejected message. */
export function parseCodedMessage(message: string): { code?: string; text: string } {
  const match = /^([A-Z][A-Z0-9_.]+): ([\s\S]*)$/.exec(message);
  return match ? { code: match[1], text: match[2] } : { text: message };
}
