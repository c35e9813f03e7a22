/**
 * The `mapflow` foreign member of a dropped GeoJSON: per-file settings that
 * refine its route, e.g.
 *
 *   { "type": "FeatureCollection", "features": [...],
 *     "mapflow": { "model": "🌲 Forest", "zoom": 17, "splitFeatures": true } }
 *
 * Only settings that change *what* is computed are accepted. What a job may
 * spend (creditBudget) and where it is billed (project) belong to the operator
 * of the route, so a file cannot change them.
 */
import { InputRejected } from '../core/errors.ts';
import { printable } from '../storage/describe.ts';
import {
  DEFAULT_GEOJSON_MODEL,
  DEFAULT_GEOJSON_SOURCE,
  isPlainObject,
  isStringRecord,
  validateBlocks,
  validateSource,
  type Route,
  type RouteSource,
} from './routes.ts';

/** Keys a file may set, with what each expects (also used in messages). */
export const OVERRIDE_KEYS: Record<string, string> = {
  model: 'a model id or name, e.g. "🏠 Buildings"',
  blocks: 'an array of {"name": string, "enabled": boolean}',
  inferenceParams: 'an object',
  source: '{"dataProvider": {"providerName": string, "zoom"?: integer}}',
  zoom: 'an integer from 0 to 22',
  meta: 'an object of string values',
  splitFeatures: 'true or false',
  processingName: 'a non-empty string of at most 200 characters',
  name: 'a non-empty string of at most 200 characters (same as processingName)',
};

/**
 * Bounds of the `mapflow` member: it travels in the job's execution state
 * (256 KB on AWS, shared with everything else) and into Mapflow requests,
 * logs and events. Values past these are REJECTED (OVERRIDE_TOO_LARGE), never
 * forwarded. Documented with their reasons in docs/inputs.md.
 */
export const OVERRIDE_LIMITS = {
  /** The whole member, as JSON. */
  totalBytes: 16 * 1024,
  /** inferenceParams, as JSON. */
  inferenceParamsBytes: 8 * 1024,
  /** Nesting of objects and arrays anywhere in the member. */
  depth: 8,
  /** Names: model, providerName, processingName, block names. */
  nameChars: 200,
  blocks: 64,
  metaKeys: 32,
  metaKeyChars: 64,
  metaValueChars: 256,
} as const;

/**
 * Control characters (NUL, newline, escape...) and bidirectional overrides
 * (which make a name read differently from what it is) have no place in a
 * name; they would also reach log lines and HTTP requests.
 */
const BAD_CHARACTERS = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u;

/** Keys that exist on a route but are the operator's to set. */
const OPERATOR_KEYS = ['creditBudget', 'areaBudgetSqKm', 'project', 'prefix', 'mosaicName', 'processImages'];

/**
 * Applies a file's `mapflow` member to its route. `undefined`/`null` leaves the
 * route as it is. Returns a new route; the input route is not changed.
 * @throws InputRejected INVALID_ROUTE_OVERRIDE naming the offending key; OVERRIDE_TOO_LARGE or
 *   OVERRIDE_BAD_CHARACTERS when a value is beyond OVERRIDE_LIMITS or holds control characters
 */
export function applyOverrides(route: Route, member: unknown): Route {
  if (member === undefined || member === null) return route;
  const reject = (message: string): never => {
    throw new InputRejected('INVALID_ROUTE_OVERRIDE', message, { details: { allowed: Object.keys(OVERRIDE_KEYS) } });
  };
  if (!isPlainObject(member)) return reject(`the "mapflow" member must be an object, e.g. {"model": "🏠 Buildings"}`);
  checkOverrideBounds(member);

  const result: Route = structuredClone(route);
  for (const [key, value] of Object.entries(member)) {
    const bad = (): never => reject(`"mapflow.${key}" must be ${OVERRIDE_KEYS[key]}; remove it or correct its value`);
    const failWith = (message: string): never => reject(`"mapflow": ${message}`);
    switch (key) {
      case 'model':
        if (typeof value !== 'string' || value.trim() === '') bad();
        result.model = value as string;
        break;
      case 'blocks':
        result.blocks = validateBlocks(value, failWith);
        break;
      case 'inferenceParams':
        if (!isPlainObject(value)) bad();
        result.inferenceParams = structuredClone(value as Record<string, unknown>);
        break;
      case 'source': {
        const source = validateSource(value, failWith);
        // Only built-in providers: a URL source or a catalog order from a file
        // could point the account at imagery (and costs) the operator never chose.
        if (!('dataProvider' in source)) {
          reject(`"mapflow.source" may only choose a built-in provider: {"dataProvider": {"providerName": ..., "zoom": ...}}`);
        }
        result.source = source;
        break;
      }
      case 'zoom':
        if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 22) bad();
        break; // applied after the loop, on top of whichever source is chosen
      case 'meta':
        if (!isStringRecord(value)) bad();
        result.meta = { ...route.meta, ...(value as Record<string, string>) };
        break;
      case 'splitFeatures':
        if (typeof value !== 'boolean') bad();
        result.splitFeatures = value as boolean;
        break;
      case 'processingName':
      case 'name':
        if (typeof value !== 'string' || value.trim() === '' || value.length > 200) bad();
        result.processingName = (value as string).trim();
        break;
      default:
        if (OPERATOR_KEYS.includes(key)) {
          reject(`"mapflow.${key}" cannot be set from a file; it is fixed by the route '${route.name}' (ask the bridge operator)`);
        }
        reject(`unknown key "mapflow.${key}"; allowed keys: ${Object.keys(OVERRIDE_KEYS).join(', ')}`);
    }
  }
  if (member.zoom !== undefined) result.source = withZoom(result.source ?? DEFAULT_GEOJSON_SOURCE, member.zoom as number);
  if (member.zoom !== undefined || member.source !== undefined || member.model !== undefined) checkZoomForModel(result, reject);
  return result;
}

/**
 * The lowest zoom each default model takes, from Geoalert's reference
 * (mapflow-docs-en source/userguides/reference.rst, "Required zoom range":
 * "imagery with resolution outside of this range will be rejected from
 * processing and the request will fail"). Published versions of the table
 * differ (Forest 17-18 in one, 18-20 in the latest; Tree crowns 18, then
 * 19-20): the lowest minimum any of them gives is kept, so nothing the live
 * service takes is refused. Only the minimum: Mapflow's own validator refuses
 * a zoom below the model's (`source-validator.TooLowZoom`, "Zoom must be not
 * lower than {min_zoom}"), but above it only beyond 0-22
 * (`source-validator.TooHighZoom`, "Zoom must be between 0 and 22"):
 * mapflow-qgis mapflow/errors/processing_errors.py lines 28-29. Buildings
 * (Aerial) is in no current table and custom models in none: left to Mapflow.
 */
export const MODEL_MIN_ZOOM: readonly { match: (normalisedName: string) => boolean; model: string; minZoom: number }[] = [
  { match: (n) => n.includes('buildings') && n.includes('aerial'), model: 'Buildings (Aerial)', minZoom: 0 },
  { match: (n) => n.includes('buildings'), model: 'Buildings', minZoom: 17 },
  { match: (n) => n.includes('tree crowns'), model: 'Tree crowns', minZoom: 18 },
  { match: (n) => n.includes('forest'), model: 'Forest', minZoom: 17 },
  { match: (n) => n.includes('roads'), model: 'Roads', minZoom: 17 },
  { match: (n) => n.includes('construction'), model: 'Constructions', minZoom: 17 },
];

/** The lowest zoom the model named takes, when it is a default model with one (names matched as the image checks match them). */
export function minZoomForModel(modelName: string): { model: string; minZoom: number } | undefined {
  const normalised = modelName
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9 ()]+/g, ' ')
    .trim();
  const entry = MODEL_MIN_ZOOM.find((m) => m.match(normalised));
  return entry && entry.minZoom > 0 ? { model: entry.model, minZoom: entry.minZoom } : undefined;
}

/** A file's zoom, source or model whose zoom is below the model's lowest: Mapflow would refuse the processing (TooLowZoom). */
function checkZoomForModel(route: Route, reject: (message: string) => never): void {
  const source = route.source ?? DEFAULT_GEOJSON_SOURCE;
  const zoom = 'dataProvider' in source ? source.dataProvider.zoom : 'userDefined' in source ? source.userDefined.zoom : source.imagerySearch.zoom;
  const needs = minZoomForModel(route.model ?? DEFAULT_GEOJSON_MODEL);
  if (zoom === undefined || !needs || zoom >= needs.minZoom) return;
  reject(
    `zoom ${zoom} is below what the model ${needs.model} takes (zoom ${needs.minZoom} or more, Geoalert's reference): Mapflow would refuse the processing. ` +
      `Set "mapflow.zoom" to ${needs.minZoom} or more, or leave it out to use the route's`,
  );
}

/**
 * Size, nesting and characters of the whole member, by an iterative walk
 * (no recursion a deep value could overflow) that stops at the first excess.
 * @throws InputRejected OVERRIDE_TOO_LARGE, OVERRIDE_BAD_CHARACTERS
 */
export function checkOverrideBounds(member: Record<string, unknown>): void {
  const L = OVERRIDE_LIMITS;
  const tooLarge = (what: string, details: Record<string, unknown>): never => {
    throw new InputRejected('OVERRIDE_TOO_LARGE', `"mapflow": ${what}. Keep per-file settings short (a model, a few blocks, small inferenceParams); larger settings belong in the route`, {
      details: { ...details, limits: L },
    });
  };
  const walk = (root: unknown, path: string, maxBytes: number): void => {
    let bytes = 0;
    const stack: { value: unknown; path: string; depth: number }[] = [{ value: root, path, depth: 1 }];
    while (stack.length > 0) {
      const { value, path: at, depth } = stack.pop()!;
      if (typeof value === 'string') {
        bytes += value.length + 2;
        if (BAD_CHARACTERS.test(value)) badCharacters(at, value);
      } else if (Array.isArray(value) || isPlainObject(value)) {
        if (depth > L.depth) tooLarge(`${at} is nested more than ${L.depth} levels deep`, { path: at, maxDepth: L.depth });
        bytes += 2;
        for (const [key, child] of Object.entries(value)) {
          bytes += key.length + 4;
          if (!Array.isArray(value) && BAD_CHARACTERS.test(key)) badCharacters(`${at} key`, key);
          stack.push({ value: child, path: Array.isArray(value) ? `${at}[${key}]` : `${at}.${key}`, depth: depth + 1 });
          if (bytes > maxBytes) tooLarge(`${path} is over ${maxBytes} bytes as JSON`, { path, maxBytes });
        }
      } else {
        bytes += String(value).length + 1;
      }
      if (bytes > maxBytes) tooLarge(`${path} is over ${maxBytes} bytes as JSON`, { path, maxBytes });
    }
  };
  walk(member, 'mapflow', L.totalBytes);
  if (member.inferenceParams !== undefined) walk(member.inferenceParams, 'mapflow.inferenceParams', L.inferenceParamsBytes);

  const nameTooLong = (path: string, value: unknown) => {
    if (typeof value === 'string' && value.length > L.nameChars) tooLarge(`${path} is ${value.length} characters long; at most ${L.nameChars}`, { path, maxChars: L.nameChars });
  };
  nameTooLong('mapflow.model', member.model);
  nameTooLong('mapflow.processingName', member.processingName);
  nameTooLong('mapflow.name', member.name);
  const source = member.source as { dataProvider?: { providerName?: unknown } } | undefined;
  nameTooLong('mapflow.source.dataProvider.providerName', isPlainObject(source) && isPlainObject(source.dataProvider) ? source.dataProvider.providerName : undefined);
  if (Array.isArray(member.blocks)) {
    if (member.blocks.length > L.blocks) tooLarge(`"blocks" lists ${member.blocks.length} blocks; at most ${L.blocks}`, { blocks: member.blocks.length, maxBlocks: L.blocks });
    member.blocks.forEach((block, i) => nameTooLong(`mapflow.blocks[${i}].name`, isPlainObject(block) ? block.name : undefined));
  }
  if (isPlainObject(member.meta)) {
    const entries = Object.entries(member.meta);
    if (entries.length > L.metaKeys) tooLarge(`"meta" has ${entries.length} keys; at most ${L.metaKeys}`, { keys: entries.length, maxKeys: L.metaKeys });
    for (const [key, value] of entries) {
      if (key.length > L.metaKeyChars) tooLarge(`a "meta" key is ${key.length} characters long; at most ${L.metaKeyChars}`, { maxKeyChars: L.metaKeyChars });
      if (typeof value === 'string' && value.length > L.metaValueChars) {
        tooLarge(`"meta.${printable(key, 40)}" is ${value.length} characters long; at most ${L.metaValueChars}`, { maxValueChars: L.metaValueChars });
      }
    }
  }
}

function badCharacters(path: string, value: string): never {
  throw new InputRejected(
    'OVERRIDE_BAD_CHARACTERS',
    `"mapflow": ${path} contains a control or text-direction character ('${printable(value, 60)}'): names and values may not contain NUL, line breaks, escapes or bidirectional overrides; type the value again as plain text`,
    { details: { path } },
  );
}

function withZoom(source: RouteSource, zoom: number): RouteSource {
  if ('dataProvider' in source) return { dataProvider: { ...source.dataProvider, zoom } };
  if ('userDefined' in source) return { userDefined: { ...source.userDefined, zoom } };
  return { imagerySearch: { ...source.imagerySearch, zoom } };
}
