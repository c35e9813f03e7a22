/**
 * Routing: the routes configuration, job ids and the S3 key layout.
 * Pure functions only (no AWS calls), shared by dispatch and the task handlers.
 */
export {
  DEFAULT_AREA_BUDGET_SQ_KM,
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
// Every export of keys.ts, so its export list is the one list of them.
export * from './keys.ts';
