/**
 * Routes: which settings apply to a file dropped under the inbox.
 *
 * A route is chosen by the longest prefix of the key below the inbox prefix, so
 * `inbox/buildings/a.tif` takes the `buildings/` route and `inbox/a.tif` the root
 * route. The routes come from the ROUTES environment variable (JSON) and are
 * validated once, when the function starts: a typo must fail fast with a clear
 * message rather than silently send work to the wrong model.
 */
import { ConfigurationError } from '../core/errors.ts';

/** Imagery source of a processing (the spec's `sourceParams`). */
export type RouteSource =
  | { dataProvider: { providerName: string; zoom?: number } }
  | { userDefined: { sourceType: string; url: string; zoom?: number; crs?: string } }
  | { imagerySearch: { dataProvider: string; imageIds: string[]; zoom?: number } };

export interface Route {
  /** Unique name, e.g. 'default', 'buildings'. */
  name: string;
  /** Folder under the inbox, '' for the inbox root, otherwise ending in '/' (e.g. 'buildings/'). */
  prefix: string;
  /** Model id (uuid) or name, with or without its emoji. GeoJSON default: DEFAULT_GEOJSON_MODEL. */
  model?: string;
  /** GeoTIFF: run `model` on the uploaded image (default false = upload only). */
  processImages?: boolean;
  /** Imagery source for GeoJSON processings. Default: DEFAULT_GEOJSON_SOURCE. */
  source?: RouteSource;
  /** Mapflow project; default: the account's default project. A name is found or created. */
  project?: { id?: string; name?: string };
  blocks?: { name: string; enabled: boolean }[];
  inferenceParams?: Record<string, unknown>;
  /**
   * GeoTIFF: mosaic to upload into; an image that does not fit it is REJECTED.
   * Default: one mosaic per route and image family (CRS, bands, data type,
   * resolution), so different kinds of image never block each other (see defaultMosaicName).
   */
  mosaicName?: string;
  /**
   * A job whose estimate exceeds this many credits is REJECTED (BUDGET_EXCEEDED). Default DEFAULT_CREDIT_BUDGET.
   * Checked for accounts billed in credits (`billingType` CREDITS, or none given), see plan-processing.ts.
   */
  creditBudget?: number;
  /**
   * A job over this many km² is REJECTED (BUDGET_EXCEEDED). Default DEFAULT_AREA_BUDGET_SQ_KM. Checked for
   * accounts billed by area (`billingType` AREA), whose credits estimate means nothing to them.
   */
  areaBudgetSqKm?: number;
  /** Extra processing `meta` entries. */
  meta?: Record<string, string>;
  /** One processing per feature instead of one over all polygons. */
  splitFeatures?: boolean;
  /** Display name of the processing; only settable from a file's `mapflow` member. */
  processingName?: string;
  /**
   * GeoJSON: search the catalog for the imagery instead of `source`
   * (`{"search": {"pick": "newest", ...}}`, see functions/jobs/imagery-search.ts,
   * which checks the search itself when a job plans). A file's own `imagery` wins.
   */
  imagery?: { search: Record<string, unknown> };
  /** Files written besides result.geojson (functions/results): 'flatgeobuf' (result.fgb). Default none. */
  resultFormats?: 'flatgeobuf'[];
}

export interface Routes {
  routes: Route[];
}

export const DEFAULT_GEOJSON_MODEL = '🏠 Buildings';
export const DEFAULT_GEOJSON_SOURCE: RouteSource = { dataProvider: { providerName: 'mapbox', zoom: 18 } };
export const DEFAULT_CREDIT_BUDGET = 100;
/** The spec's "recommended area of a processing geometry: below 100 square kilometres" (Limits). */
export const DEFAULT_AREA_BUDGET_SQ_KM = 100;

/** What Mapflow requires the images of one mosaic to share. */
export interface ImageFamily {
  crs: string;
  bands: number;
  dtypes: string[];
  /** Pixel size in CRS units. */
  pixelSize: [number, number];
}

/**
 * The mosaic a GeoTIFF uploads into: the route's `mosaicName`, or
 * `mapflow-bridge-<route>` followed by the image family, e.g.
 * `mapflow-bridge-default-EPSG3857-3xuint8-0.597`. Mapflow wants every image
 * of a mosaic to share CRS, band count and resolution; naming the default
 * mosaic after them means the first image dropped cannot lock out the others.
 */
export function defaultMosaicName(route: Route, image?: ImageFamily): string {
  if (route.mosaicName) return route.mosaicName;
  const base = `mapflow-bridge-${route.name}`;
  if (!image) return base;
  const resolution = Number(image.pixelSize[0].toPrecision(3));
  const dtype = [...new Set(image.dtypes)].join('+') || 'unknown';
  return `${base}-${image.crs.replace(/[^A-Za-z0-9]/g, '')}-${image.bands}x${dtype}-${resolution}`;
}

/**
 * Built-in routes: everything at the inbox root is handled with the defaults
 * (GeoJSON: Buildings over Mapbox; GeoTIFF: upload only), and GeoTIFFs dropped
 * under `buildings/` are also processed with Buildings.
 */
export const DEFAULT_ROUTES: Routes = Object.freeze({
  routes: [
    { name: 'default', prefix: '' },
    { name: 'buildings', prefix: 'buildings/', model: DEFAULT_GEOJSON_MODEL, processImages: true },
  ],
}) as Routes;

const ROUTE_KEYS = [
  'name',
  'prefix',
  'model',
  'processImages',
  'source',
  'project',
  'blocks',
  'inferenceParams',
  'mosaicName',
  'creditBudget',
  'areaBudgetSqKm',
  'meta',
  'splitFeatures',
  'processingName',
  'imagery',
  'resultFormats',
] as const;

/**
 * Parses and validates the routes JSON. `undefined` or blank gives DEFAULT_ROUTES.
 * Accepts `{"routes": [...]}` or a bare array of routes.
 * @throws ConfigurationError naming the route and the key that is wrong
 */
export function parseRoutes(json: string | undefined): Routes {
  if (json === undefined || json.trim() === '') return structuredClone(DEFAULT_ROUTES);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (cause) {
    throw new ConfigurationError(`ROUTES is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  let list: unknown;
  if (Array.isArray(parsed)) {
    list = parsed;
  } else if (isPlainObject(parsed)) {
    const extra = Object.keys(parsed).filter((k) => k !== 'routes');
    if (extra.length > 0) throw new ConfigurationError(`ROUTES: unknown top-level key '${extra[0]}' (expected only "routes")`);
    list = parsed.routes;
  }
  if (!Array.isArray(list)) throw new ConfigurationError('ROUTES must be {"routes": [...]} or an array of routes');
  if (list.length === 0) throw new ConfigurationError('ROUTES: at least one route is needed');

  const routes = list.map((raw, i) => validateRoute(raw, i));
  assertUnique(routes, 'name');
  assertUnique(routes, 'prefix');
  return { routes };
}

function assertUnique(routes: Route[], field: 'name' | 'prefix'): void {
  const seen = new Map<string, number>();
  routes.forEach((route, i) => {
    const earlier = seen.get(route[field]);
    if (earlier !== undefined) {
      throw new ConfigurationError(
        `ROUTES: routes[${earlier}] and routes[${i}] have the same ${field} '${route[field]}'; each route needs its own ${field}`,
      );
    }
    seen.set(route[field], i);
  });
}

function validateRoute(raw: unknown, index: number): Route {
  const where = `ROUTES: routes[${index}]`;
  if (!isPlainObject(raw)) throw new ConfigurationError(`${where} must be an object`);
  const label = typeof raw.name === 'string' ? `${where} ('${raw.name}')` : where;
  const fail = (message: string): never => {
    throw new ConfigurationError(`${label}: ${message}`);
  };
  for (const key of Object.keys(raw)) {
    if (!(ROUTE_KEYS as readonly string[]).includes(key)) fail(`unknown key '${key}' (allowed: ${ROUTE_KEYS.join(', ')})`);
  }
  if (typeof raw.name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(raw.name)) {
    fail(`'name' must be 1-64 letters, digits, '-', '_' or '.'`);
  }
  if (typeof raw.prefix !== 'string') fail(`'prefix' must be a string ('' for the inbox root, or a folder such as 'buildings/')`);
  const prefix = raw.prefix as string;
  if (prefix !== '' && (!prefix.endsWith('/') || prefix.startsWith('/') || prefix.includes('//'))) {
    fail(`'prefix' '${prefix}' must be '' or a folder path like 'buildings/' (no leading '/', ending in '/')`);
  }
  const route: Route = { name: raw.name as string, prefix };
  copyOptional(raw, route, 'model', isNonEmptyString, 'a non-empty string (model id or name)', fail);
  copyOptional(raw, route, 'processImages', isBoolean, 'true or false', fail);
  copyOptional(raw, route, 'mosaicName', isNonEmptyString, 'a non-empty string', fail);
  copyOptional(raw, route, 'splitFeatures', isBoolean, 'true or false', fail);
  copyOptional(raw, route, 'processingName', isNonEmptyString, 'a non-empty string', fail);
  copyOptional(raw, route, 'inferenceParams', isPlainObject, 'an object', fail);
  copyOptional(raw, route, 'meta', isStringRecord, 'an object of string values', fail);
  copyOptional(
    raw,
    route,
    'creditBudget',
    (v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0,
    'a number of credits >= 0',
    fail,
  );
  copyOptional(
    raw,
    route,
    'areaBudgetSqKm',
    (v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0,
    'a number of km² >= 0',
    fail,
  );
  if (raw.blocks !== undefined) route.blocks = validateBlocks(raw.blocks, fail);
  if (raw.source !== undefined) route.source = validateSource(raw.source, fail);
  if (raw.resultFormats !== undefined) {
    const formats = raw.resultFormats;
    if (!Array.isArray(formats) || formats.length > 1 || formats.some((f) => f !== 'flatgeobuf')) {
      fail(`'resultFormats' must be a list of formats written besides result.geojson: ["flatgeobuf"]`);
    }
    route.resultFormats = [...new Set(formats as 'flatgeobuf'[])];
  }
  if (raw.imagery !== undefined) {
    if (!isPlainObject(raw.imagery) || !isPlainObject(raw.imagery.search) || Object.keys(raw.imagery).length !== 1) {
      fail(`'imagery' must be {"search": {"pick": "newest" | "sharpest" | "least-cloud", ...}}`);
    }
    route.imagery = structuredClone(raw.imagery as { search: Record<string, unknown> });
  }
  if (raw.project !== undefined) {
    const p = raw.project;
    if (!isPlainObject(p) || Object.keys(p).some((k) => k !== 'id' && k !== 'name')) {
      fail(`'project' must be {"id": "..."} or {"name": "..."}`);
    }
    const project = p as Record<string, unknown>;
    if ((project.id !== undefined && !isNonEmptyString(project.id)) || (project.name !== undefined && !isNonEmptyString(project.name))) {
      fail(`'project.id' and 'project.name' must be non-empty strings`);
    }
    route.project = { ...(project.id !== undefined && { id: project.id as string }), ...(project.name !== undefined && { name: project.name as string }) };
  }
  return route;
}

/** Validates the `blocks` list (shared with the `mapflow` override). */
export function validateBlocks(value: unknown, fail: (message: string) => never): { name: string; enabled: boolean }[] {
  if (!Array.isArray(value)) return fail(`'blocks' must be an array of {"name": string, "enabled": boolean}`);
  return value.map((b, i) => {
    if (!isPlainObject(b) || !isNonEmptyString(b.name) || !isBoolean(b.enabled) || Object.keys(b).length !== 2) {
      return fail(`'blocks[${i}]' must be {"name": string, "enabled": boolean}`);
    }
    return { name: b.name, enabled: b.enabled };
  });
}

/** Validates an imagery source (exactly one of dataProvider, userDefined, imagerySearch). */
export function validateSource(value: unknown, fail: (message: string) => never): RouteSource {
  const kinds = ['dataProvider', 'userDefined', 'imagerySearch'];
  if (!isPlainObject(value) || Object.keys(value).length !== 1 || !kinds.includes(Object.keys(value)[0]!)) {
    return fail(`'source' must have exactly one of ${kinds.join(', ')}`);
  }
  const [kind, body] = Object.entries(value)[0]!;
  if (!isPlainObject(body)) return fail(`'source.${kind}' must be an object`);
  const zoomOk = body.zoom === undefined || (Number.isInteger(body.zoom) && (body.zoom as number) >= 0 && (body.zoom as number) <= 22);
  if (!zoomOk) fail(`'source.${kind}.zoom' must be an integer from 0 to 22`);
  const only = (allowed: string[]) => {
    const bad = Object.keys(body).find((k) => !allowed.includes(k));
    if (bad) fail(`unknown key 'source.${kind}.${bad}' (allowed: ${allowed.join(', ')})`);
  };
  switch (kind) {
    case 'dataProvider':
      only(['providerName', 'zoom']);
      if (!isNonEmptyString(body.providerName)) fail(`'source.dataProvider.providerName' must be a provider name such as 'mapbox'`);
      break;
    case 'userDefined':
      only(['sourceType', 'url', 'zoom', 'crs']);
      if (!isNonEmptyString(body.sourceType) || !isNonEmptyString(body.url)) {
        fail(`'source.userDefined' needs 'sourceType' and 'url' strings`);
      }
      if (body.crs !== undefined && !isNonEmptyString(body.crs)) fail(`'source.userDefined.crs' must be a string`);
      break;
    default:
      only(['dataProvider', 'imageIds', 'zoom']);
      if (!isNonEmptyString(body.dataProvider) || !Array.isArray(body.imageIds) || !body.imageIds.every(isNonEmptyString)) {
        fail(`'source.imagerySearch' needs 'dataProvider' (string) and 'imageIds' (array of strings)`);
      }
  }
  return structuredClone(value) as RouteSource;
}

function copyOptional<K extends keyof Route>(
  raw: Record<string, unknown>,
  route: Route,
  key: K,
  ok: (v: unknown) => boolean,
  expected: string,
  fail: (message: string) => never,
): void {
  const value = raw[key];
  if (value === undefined) return;
  if (!ok(value)) fail(`'${key}' must be ${expected}`);
  route[key] = structuredClone(value) as Route[K];
}

/**
 * The route of a key: the one whose prefix is the longest match of the key's
 * path below the inbox. Undefined when the key is outside the inbox or no
 * route matches (no root route configured).
 */
export function resolveRoute(routes: Routes, key: string, inboxPrefix: string): Route | undefined {
  if (!key.startsWith(inboxPrefix)) return undefined;
  const rel = key.slice(inboxPrefix.length);
  let best: Route | undefined;
  for (const route of routes.routes) {
    if (rel.startsWith(route.prefix) && (best === undefined || route.prefix.length > best.prefix.length)) best = route;
  }
  return best;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function isNonEmptyString(v: unknown): v is string {
  return typeof v === 'string' && v.trim() !== '';
}
function isBoolean(v: unknown): v is boolean {
  return typeof v === 'boolean';
}
export function isStringRecord(v: unknown): v is Record<string, string> {
  return isPlainObject(v) && Object.values(v).every((x) => typeof x === 'string');
}
