/**
 * Routing: the routes configuration, job ids and the S3 key layout.
 * Pure functions only (no AWS calls), shared by dispatch and the task handlers.
 */
export {
  DEFAULT_CREDIT_BUDGET,
  DEFAULT_GEOJSON_MODEL,
  DEFAULT_GEOJSON_SOURCE,
  DEFAULT_ROUTES,
  defaultMosaicName,
  parseRoutes,
  resolveRoute,
  type Route,
  type RouteSource,
  type Routes,
} from './routes.ts';
export { applyOverrides, OVERRIDE_KEYS, OVERRIDE_LIMITS } from './overrides.ts';
export {
  DEFAULT_PREFIXES,
  decodeS3EventKey,
  fileStem,
  inputKind,
  INVALID_KEYS_FOLDER,
  invalidKeyRejection,
  isHiddenPath,
  jobIdFor,
  keyProblem,
  normaliseEtag,
  partNameFor,
  recordedKind,
  relativeInputPath,
  reportKey,
  resultKeys,
  resultPrefix,
  sanitisePathSegment,
  splitPartNames,
  workKey,
  type KeyPrefixes,
} from './keys.ts';
