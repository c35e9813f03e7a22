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
import { InputRejected } from '../jobs/errors.ts';
import {
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

/** Keys that exist on a route but are the operator's to set. */
const OPERATOR_KEYS = ['creditBudget', 'project', 'prefix', 'mosaicName', 'processImages'];

/**
 * Applies a file's `mapflow` member to its route. `undefined`/`null` leaves the
 * route as it is. Returns a new route; the input route is not changed.
 * @throws InputRejected INVALID_ROUTE_OVERRIDE naming the offending key
 */
export function applyOverrides(route: Route, member: unknown): Route {
  if (member === undefined || member === null) return route;
  const reject = (message: string): never => {
    throw new InputRejected('INVALID_ROUTE_OVERRIDE', message, { details: { allowed: Object.keys(OVERRIDE_KEYS) } });
  };
  if (!isPlainObject(member)) return reject(`the "mapflow" member must be an object, e.g. {"model": "🏠 Buildings"}`);

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
  return result;
}

function withZoom(source: RouteSource, zoom: number): RouteSource {
  if ('dataProvider' in source) return { dataProvider: { ...source.dataProvider, zoom } };
  if ('userDefined' in source) return { userDefined: { ...source.userDefined, zoom } };
  return { imagerySearch: { ...source.imagerySearch, zoom } };
}
