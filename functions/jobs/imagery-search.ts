/**
 * Jobs that find their own imagery: a GeoJSON whose `mapflow` member (or its
 * route) holds
 *
 *   "imagery": {"search": {"from": "2025-06-01", "to": "2025-09-30",
 *     "maxCloudCover": 10, "maxOffNadir": 20, "minResolution": 0.3, "maxResolution": 0.5,
 *     "providers": ["maxar"], "minIntersection": 100, "pick": "newest"}}
 *
 * is processed on one catalog product instead of a fixed source: Plan
 * Processing searches `/catalog/meta` over the job's AOI, keeps the products
 * that pass every filter (checked here again, whatever the server did) and
 * cover at least `minIntersection` percent of the AOI (computed here from the
 * footprint), picks one by the rule, records it in the ledger (and so in the
 * events and job.json) and runs the processing with the `imagerySearch`
 * source. Mapflow may then hold it AWAITING until the provider delivers.
 * Nothing found is REJECTED NO_IMAGERY with what was searched.
 *
 * Pick rules: `newest` (latest acquisition), `sharpest` (smallest pixel size;
 * an unknown size, 0 or missing, comes last), `least-cloud` (smallest cloud
 * cover). Ties go to the newer product, then the smaller id.
 */
import area from '@turf/area';
import intersect from '@turf/intersect';
import { featureCollection, feature } from '@turf/helpers';
import type { ImageryChoice } from '../events/types.ts';
import { AUTH_ERROR_CODES, MapflowError, type CatalogProduct, type CatalogSearch, type DataProviderInfo, type MapflowClient, type SourceParams } from '../mapflow/index.ts';
import { geodesicAreaSqM } from '../aoi/geodesic-area.ts';
import { formatKm2 } from '../aoi/index.ts';
import { isPlainObject } from '../routing/routes.ts';
import { InputRejected } from '../core/errors.ts';
import type { GeoJsonMultiPolygon, GeoJsonPolygon } from './workflow.ts';
import type { StepContext } from './context.ts';

export const PICK_RULES = ['newest', 'sharpest', 'least-cloud'] as const;
export type PickRule = (typeof PICK_RULES)[number];

export interface ImagerySearchSpec {
  pick: PickRule;
  /** Acquired on or after (ISO 8601 date or date-time; a date means its first second, UTC). */
  from?: string;
  /** Acquired on or before (a date means its last second, UTC). */
  to?: string;
  /** Percent, 0 to 100. */
  maxCloudCover?: number;
  /** Degrees; the size of the angle (either side). */
  maxOffNadir?: number;
  /** Pixel size bounds in metres per pixel, as Mapflow's search body has them. */
  minResolution?: number;
  maxResolution?: number;
  /** Catalog provider names (any case), e.g. ["maxar", "pleiades"]. */
  providers?: string[];
  /** Least share of the AOI the product must cover, percent. Default 100. */
  minIntersection?: number;
  /** Zoom of the processing (Mapflow's imagerySearch.zoom). */
  zoom?: number;
}

export const DEFAULT_MIN_INTERSECTION = 100;
/** Products asked for per search: the server sorts by the rule's key, so the best are in this page. */
export const SEARCH_LIMIT = 100;
const SPEC_KEYS = ['pick', 'from', 'to', 'maxCloudCover', 'maxOffNadir', 'minResolution', 'maxResolution', 'providers', 'minIntersection', 'zoom'];
const MAX_PROVIDERS = 20;

type Geometry = GeoJsonPolygon | GeoJsonMultiPolygon;

function invalid(message: string): never {
  throw new InputRejected('INVALID_IMAGERY_SEARCH', `"imagery.search": ${message}`, { details: { allowed: SPEC_KEYS, pick: PICK_RULES } });
}

function dateBound(value: unknown, key: 'from' | 'to'): string {
  if (typeof value !== 'string' || value.length > 40) invalid(`'${key}' must be an ISO 8601 date such as "2025-06-01"`);
  const text = value as string;
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const iso = dateOnly ? `${text}T${key === 'from' ? '00:00:00.000' : '23:59:59.999'}Z` : text;
  if (!/^\d{4}-\d{2}-\d{2}T/.test(iso) || Number.isNaN(Date.parse(iso))) invalid(`'${key}' must be an ISO 8601 date such as "2025-06-01"`);
  return new Date(iso).toISOString();
}

function numberIn(value: unknown, key: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) invalid(`'${key}' must be a number from ${min} to ${max}`);
  return value as number;
}

/**
 * Validates an `imagery` value (`{"search": {...}}`) from a file or a route.
 * @throws InputRejected INVALID_IMAGERY_SEARCH naming what is wrong
 */
export function parseImagerySearch(value: unknown): ImagerySearchSpec {
  if (!isPlainObject(value) || !isPlainObject(value.search) || Object.keys(value).length !== 1) {
    invalid(`write it as {"imagery": {"search": {"pick": "newest", ...}}}`);
  }
  const raw = (value as { search: Record<string, unknown> }).search;
  const unknown = Object.keys(raw).find((key) => !SPEC_KEYS.includes(key));
  if (unknown !== undefined) invalid(`unknown key '${unknown.slice(0, 60)}' (allowed: ${SPEC_KEYS.join(', ')})`);
  if (!PICK_RULES.includes(raw.pick as PickRule)) invalid(`'pick' must be one of ${PICK_RULES.join(', ')}`);
  const spec: ImagerySearchSpec = { pick: raw.pick as PickRule };
  if (raw.from !== undefined) spec.from = dateBound(raw.from, 'from');
  if (raw.to !== undefined) spec.to = dateBound(raw.to, 'to');
  if (spec.from && spec.to && spec.from > spec.to) invalid(`'from' (${spec.from}) is after 'to' (${spec.to})`);
  if (raw.maxCloudCover !== undefined) spec.maxCloudCover = numberIn(raw.maxCloudCover, 'maxCloudCover', 0, 100);
  if (raw.maxOffNadir !== undefined) spec.maxOffNadir = numberIn(raw.maxOffNadir, 'maxOffNadir', 0, 90);
  if (raw.minResolution !== undefined) spec.minResolution = numberIn(raw.minResolution, 'minResolution', 0, 1000);
  if (raw.maxResolution !== undefined) spec.maxResolution = numberIn(raw.maxResolution, 'maxResolution', 0, 1000);
  if (spec.minResolution !== undefined && spec.maxResolution !== undefined && spec.minResolution > spec.maxResolution) {
    invalid(`'minResolution' is above 'maxResolution'`);
  }
  if (raw.minIntersection !== undefined) spec.minIntersection = numberIn(raw.minIntersection, 'minIntersection', 0.1, 100);
  if (raw.zoom !== undefined) {
    if (!Number.isInteger(raw.zoom) || (raw.zoom as number) < 0 || (raw.zoom as number) > 22) invalid(`'zoom' must be an integer from 0 to 22`);
    spec.zoom = raw.zoom as number;
  }
  if (raw.providers !== undefined) {
    const list = raw.providers;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_PROVIDERS || list.some((p) => typeof p !== 'string' || p.trim() === '' || p.length > 100)) {
      invalid(`'providers' must be a list of 1 to ${MAX_PROVIDERS} provider names`);
    }
    spec.providers = (list as string[]).map((p) => p.trim());
  }
  return spec;
}

/**
 * Takes `imagery` out of a file's `mapflow` member (the rest goes on to
 * applyOverrides), or else from the route. The file's search wins over the route's.
 */
export function takeImagerySearch(member: unknown, routeImagery?: unknown): { member: unknown; search?: ImagerySearchSpec } {
  if (isPlainObject(member) && 'imagery' in member) {
    const { imagery, ...rest } = member;
    return { member: Object.keys(rest).length > 0 ? rest : undefined, search: parseImagerySearch(imagery) };
  }
  return { member, ...(routeImagery !== undefined && { search: parseImagerySearch(routeImagery) }) };
}

/** The search body for Mapflow: the filters, plus the server-side sort of the rule's key. */
export function searchBody(spec: ImagerySearchSpec, aoi: Geometry): CatalogSearch {
  const sort: Record<PickRule, Pick<CatalogSearch, 'sortBy' | 'sortOrder'>> = {
    newest: { sortBy: 'ACQUISITION_DATE', sortOrder: 'DESC' },
    sharpest: { sortBy: 'PIXEL_RESOLUTION', sortOrder: 'ASC' },
    'least-cloud': { sortBy: 'CLOUD_COVER', sortOrder: 'ASC' },
  };
  return {
    aoi: aoi as never,
    ...(spec.from && { acquisitionDateFrom: spec.from }),
    ...(spec.to && { acquisitionDateTo: spec.to }),
    ...(spec.maxCloudCover !== undefined && { maxCloudCover: spec.maxCloudCover }),
    ...(spec.maxOffNadir !== undefined && { maxOffNadirAngle: spec.maxOffNadir }),
    ...(spec.minResolution !== undefined && { minResolution: spec.minResolution }),
    ...(spec.maxResolution !== undefined && { maxResolution: spec.maxResolution }),
    ...(spec.providers && { dataProviders: spec.providers }),
    minAoiIntersectionPercent: spec.minIntersection ?? DEFAULT_MIN_INTERSECTION,
    hideUnavailable: true,
    limit: SEARCH_LIMIT,
    ...sort[spec.pick],
  };
}

/** Share of the AOI (0-100) a product's footprint covers; undefined without a footprint. */
export function coveragePercent(product: CatalogProduct, aoi: Geometry): number | undefined {
  const footprint = product.footprint as Geometry | undefined;
  if (!footprint || (footprint.type !== 'Polygon' && footprint.type !== 'MultiPolygon')) return undefined;
  const aoiArea = area(aoi as never);
  if (aoiArea === 0) return undefined;
  const overlap = intersect(featureCollection([feature(aoi as never), feature(footprint as never)]) as never);
  const covered = overlap ? area(overlap) : 0;
  // Floor to 0.1: an AOI that sticks out by a sliver does not read as 100.
  return Math.min(100, Math.floor((covered / aoiArea) * 1000 + 1e-6) / 10);
}

const time = (p: CatalogProduct): number => (p.acquisitionDate ? Date.parse(p.acquisitionDate) || 0 : 0);
const sharpness = (p: CatalogProduct): number => (typeof p.pixelResolution === 'number' && p.pixelResolution > 0 ? p.pixelResolution : Number.POSITIVE_INFINITY);
const cloud = (p: CatalogProduct): number => (typeof p.cloudCover === 'number' ? p.cloudCover : Number.POSITIVE_INFINITY);
const known = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/**
 * Whether a product passes the search's filters. A value the product does
 * not have matches any condition on it (mapflow-qgis spec/002_D_search_api.md
 * lines 31-35: "a missing (null) value matches any condition", as the server
 * filters): My Imagery items carry no date, cloud cover or angles, and a
 * mosaic's pixel size of 0.0 means "not known", not "sharper than any".
 */
export function passesFilters(p: CatalogProduct, spec: ImagerySearchSpec): boolean {
  if (!p.id || !p.providerName) return false;
  if ((p as { available?: unknown }).available === false) return false;
  const acquired = p.acquisitionDate ? Date.parse(p.acquisitionDate) : Number.NaN;
  if (!Number.isNaN(acquired)) {
    if (spec.from && !(acquired >= Date.parse(spec.from))) return false;
    if (spec.to && !(acquired <= Date.parse(spec.to))) return false;
  }
  if (spec.maxCloudCover !== undefined && known(p.cloudCover) && !(p.cloudCover <= spec.maxCloudCover)) return false;
  if (spec.maxOffNadir !== undefined && known(p.offNadirAngle) && !(Math.abs(p.offNadirAngle) <= spec.maxOffNadir)) return false;
  const resolution = known(p.pixelResolution) && p.pixelResolution > 0 ? p.pixelResolution : undefined;
  if (spec.minResolution !== undefined && resolution !== undefined && !(resolution >= spec.minResolution)) return false;
  if (spec.maxResolution !== undefined && resolution !== undefined && !(resolution <= spec.maxResolution)) return false;
  if (spec.providers && !spec.providers.some((name) => name.toLowerCase() === p.providerName!.toLowerCase())) return false;
  return true;
}

export interface PickedProduct {
  product: CatalogProduct;
  intersectionPercent: number;
  candidates: number;
}

/** The product the rule picks among those that pass the filters and cover enough of the AOI. */
export function pickProduct(products: readonly CatalogProduct[], spec: ImagerySearchSpec, aoi: Geometry): PickedProduct | undefined {
  const ranked = rankProducts(products, spec, aoi);
  const best = ranked[0];
  return best && { ...best, candidates: ranked.length };
}

/** The products that pass the filters and cover enough of the AOI, best first by the rule. */
export function rankProducts(products: readonly CatalogProduct[], spec: ImagerySearchSpec, aoi: Geometry): { product: CatalogProduct; intersectionPercent: number }[] {
  const minimum = spec.minIntersection ?? DEFAULT_MIN_INTERSECTION;
  const candidates = products
    .filter((p) => passesFilters(p, spec))
    .map((product) => ({ product, intersectionPercent: coveragePercent(product, aoi) }))
    .filter((c): c is { product: CatalogProduct; intersectionPercent: number } => c.intersectionPercent !== undefined && c.intersectionPercent >= minimum);
  const key: Record<PickRule, (p: CatalogProduct) => number> = {
    newest: (p) => -time(p),
    sharpest: sharpness,
    'least-cloud': cloud,
  };
  const by = key[spec.pick];
  candidates.sort((a, b) => by(a.product) - by(b.product) || time(b.product) - time(a.product) || (a.product.id < b.product.id ? -1 : 1));
  return candidates;
}

/**
 * The least area (km²) a processing on a catalog product needs: the larger of
 * the product's own `minAreaSqkm` and its provider's in `searchDataProviders`
 * of /user/status, matched by name or display name in any case, as Geoalert's
 * plugin keys them (mapflow-qgis mapflow/mapflow.py lines 3080-3095,
 * functional/service/provider_service.py lines 228-265,
 * processing_service.py lines 175-235). Undefined when neither says.
 */
export function productMinAreaSqKm(product: CatalogProduct, searchProviders: readonly DataProviderInfo[] = []): number | undefined {
  const name = product.providerName?.toLowerCase();
  const provider = name === undefined ? undefined : searchProviders.find((p) => p.name.toLowerCase() === name || p.displayName?.toLowerCase() === name);
  const minimums = [product.minAreaSqKm, provider?.minAreaSqKm].filter((v): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0);
  return minimums.length > 0 ? Math.max(...minimums) : undefined;
}

/**
 * The route's `providers` in the account's own names: each matched against
 * `searchDataProviders` of /user/status by name or display name, in any case
 * (the plugin searches only through the account's providers: mapflow-qgis
 * mapflow/mapflow.py lines 3107-3114). Names the account lacks are dropped;
 * when the status lists no search providers, the route's names go as written.
 * @throws InputRejected UNKNOWN_PROVIDER when none of them is the account's
 */
export function accountSearchProviders(spec: ImagerySearchSpec, searchProviders: readonly DataProviderInfo[] | undefined): ImagerySearchSpec {
  if (!spec.providers || searchProviders === undefined) return spec;
  const matched = spec.providers
    .map((wanted) => searchProviders.find((p) => p.name.toLowerCase() === wanted.toLowerCase() || p.displayName?.toLowerCase() === wanted.toLowerCase())?.name)
    .filter((name): name is string => name !== undefined);
  if (matched.length === 0) {
    const available = searchProviders.map((p) => p.name);
    throw new InputRejected(
      'UNKNOWN_PROVIDER',
      `"imagery.search": none of the providers ${spec.providers.join(', ')} is a catalog provider of this Mapflow account, so nothing was searched or spent; ${available.length > 0 ? `use one of: ${available.join(', ')}` : 'the account has no catalog providers: ask Mapflow to link one'}, or leave 'providers' out to search them all.`,
      { details: { providers: spec.providers, available } },
    );
  }
  return { ...spec, providers: [...new Set(matched)] };
}

/** What was searched, for the NO_IMAGERY message and report. */
function describeSearch(spec: ImagerySearchSpec): string {
  const parts = [
    spec.from || spec.to ? `acquired ${spec.from ? `from ${spec.from.slice(0, 10)}` : ''}${spec.from && spec.to ? ' ' : ''}${spec.to ? `to ${spec.to.slice(0, 10)}` : ''}` : '',
    spec.maxCloudCover !== undefined ? `cloud cover ≤ ${spec.maxCloudCover}%` : '',
    spec.maxOffNadir !== undefined ? `off-nadir ≤ ${spec.maxOffNadir}°` : '',
    spec.minResolution !== undefined ? `pixel size ≥ ${spec.minResolution} m` : '',
    spec.maxResolution !== undefined ? `pixel size ≤ ${spec.maxResolution} m` : '',
    spec.providers ? `providers ${spec.providers.join(', ')}` : '',
    `covering ≥ ${spec.minIntersection ?? DEFAULT_MIN_INTERSECTION}% of the AOI`,
  ];
  return parts.filter(Boolean).join(', ');
}

/**
 * Searches the catalog for a job, picks a product, records the choice in the
 * ledger and returns the imagerySearch source to process with.
 * @throws InputRejected NO_IMAGERY when nothing passes (with the search in its details)
 */
export async function findImageryForJob(
  ctx: StepContext,
  client: MapflowClient,
  jobId: string,
  aoi: Geometry,
  asked: ImagerySearchSpec,
  searchAreaLimitSqM?: number,
  searchProviders?: readonly DataProviderInfo[],
): Promise<{ sourceParams: SourceParams; choice: ImageryChoice; footprint?: Geometry }> {
  checkSearchArea(aoi, searchAreaLimitSqM);
  const spec = accountSearchProviders(asked, searchProviders);
  const body = searchBody(spec, aoi);
  const result = await client.searchCatalog(body).catch((err: unknown) => {
    throw searchRefusal(err) ?? err;
  });
  const ranked = rankProducts(result.images, spec, aoi);
  // A candidate whose provider needs more area than the AOI has inside its footprint would be refused
  // (ProviderMinAreaError): the next candidate is taken instead (processing_service.py lines 175-235).
  const tooSmall: { productId: string; providerName?: string; areaSqKm: number; minAreaSqKm: number }[] = [];
  const usable = ranked.find(({ product }) => {
    const minAreaSqKm = productMinAreaSqKm(product, searchProviders);
    if (minAreaSqKm === undefined) return true;
    const cropped = cropToFootprint(aoi, product.footprint as Geometry | undefined);
    const areaSqKm = cropped ? geodesicAreaSqM(cropped) / 1e6 : 0;
    if (areaSqKm >= minAreaSqKm) return true;
    tooSmall.push({ productId: product.id, ...(product.providerName && { providerName: product.providerName }), areaSqKm, minAreaSqKm });
    return false;
  });
  if (tooSmall.length > 0) ctx.logger.info('catalog images skipped: the area inside their footprint is below their provider\'s minimum', { jobId, skipped: tooSmall.slice(0, 10) });
  if (!usable && tooSmall.length > 0) {
    const least = Math.min(...tooSmall.map((s) => s.minAreaSqKm));
    throw new InputRejected(
      'AREA_TOO_SMALL',
      `every catalog image that matched (${tooSmall.length}) needs a larger area than the ${formatKm2(tooSmall[0]!.areaSqKm * 1e6)} of the AOI it covers (their providers' minimum, at least ${least} km²); nothing was spent. Draw a larger area, or name other providers in "imagery.search".`,
      { details: { skipped: tooSmall.slice(0, 10), candidates: ranked.length } },
    );
  }
  const picked = usable && { ...usable, candidates: ranked.length };
  if (!picked) {
    const { aoi: _aoi, ...searched } = body;
    throw new InputRejected(
      'NO_IMAGERY',
      `no catalog image matched: searched ${describeSearch(spec)}; the catalog returned ${result.images.length} products and none passed. Widen the dates, the cloud or off-nadir limits, or the providers, or lower minIntersection.`,
      { details: { search: searched, returned: result.images.length } },
    );
  }
  const { product } = picked;
  const providerName = product.providerName!;
  const zoom = productZoom(product) ?? spec.zoom;
  if (spec.zoom !== undefined && zoom !== spec.zoom) {
    ctx.logger.info('the catalog product sets the zoom; the search\'s zoom is not used', { jobId, productZoom: zoom, searchZoom: spec.zoom });
  }
  const choice: ImageryChoice = {
    productId: product.id,
    providerName,
    rule: spec.pick,
    ...(product.acquisitionDate && { acquisitionDate: product.acquisitionDate }),
    ...(typeof product.cloudCover === 'number' && { cloudCover: product.cloudCover }),
    ...(typeof product.offNadirAngle === 'number' && { offNadirAngle: product.offNadirAngle }),
    ...(typeof product.pixelResolution === 'number' && { pixelResolution: product.pixelResolution }),
    intersectionPercent: picked.intersectionPercent,
    candidates: picked.candidates,
  };
  await ctx.ledger.update(jobId, { imagery: choice });
  ctx.logger.info('catalog image picked', { jobId, ...choice });
  // As Geoalert's plugin builds it (mapflow-qgis mapflow/entity/provider/default.py lines 47-53):
  // the catalog's provider name lower-cased, and the zoom of the chosen product.
  const sourceParams = { imagerySearch: { dataProvider: providerName.toLowerCase(), imageIds: [product.id], ...(zoom !== undefined && { zoom }) } };
  return { sourceParams: sourceParams as SourceParams, choice, footprint: product.footprint as Geometry };
}

/**
 * The zoom of a catalog product (the search answer's `zoom`, a string in
 * mapflow-qgis mapflow/schema/catalog.py line 81). The plugin sets the
 * processing's zoom from the selected product and disables its own zoom box
 * for search results (mapflow-qgis mapflow/mapflow.py lines 2031-2032 and
 * 2928-2934).
 */
export function productZoom(product: CatalogProduct): number | undefined {
  const raw = (product as { zoom?: unknown }).zoom;
  const zoom = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  return typeof zoom === 'number' && Number.isInteger(zoom) && zoom >= 0 && zoom <= 22 ? zoom : undefined;
}

/**
 * The part of an AOI inside the chosen products' footprint: what Geoalert's
 * plugin sends to the cost and create calls for a search result
 * (mapflow-qgis mapflow/functional/service/area_calculator_service.py lines
 * 177-179 and 231-244, processing_service.py lines 437-445), so an AOI only
 * half covered is billed for the covered half. Undefined when nothing overlaps.
 */
export function cropToFootprint(aoi: Geometry, footprint: Geometry | undefined): Geometry | undefined {
  if (!footprint || (footprint.type !== 'Polygon' && footprint.type !== 'MultiPolygon')) return aoi;
  const overlap = intersect(featureCollection([feature(aoi as never), feature(footprint as never)]) as never) as { geometry: Geometry } | null;
  const covered = overlap ? area(overlap as never) : 0;
  if (covered === 0) return undefined;
  // Wholly covered: the AOI as it was (not a re-noded copy of it).
  return covered >= area(aoi as never) * (1 - 1e-9) ? aoi : overlap!.geometry;
}

/**
 * `searchAreaLimit` of /user/status (m²): above it Geoalert's plugin never
 * runs an immediate search, it offers a Planned Search instead
 * (mapflow-qgis mapflow/mapflow.py lines 2339-2349,
 * spec/002_F_plan_processing_api.md lines 328-341). The bridge runs no
 * planned searches, so such a job is REJECTED before the search.
 * @throws InputRejected SEARCH_AREA_TOO_LARGE
 */
export function checkSearchArea(aoi: Geometry, limitSqM: number | undefined): void {
  if (limitSqM === undefined || !(limitSqM > 0)) return;
  const areaSqM = geodesicAreaSqM(aoi);
  if (areaSqM <= limitSqM) return;
  throw new InputRejected(
    'SEARCH_AREA_TOO_LARGE',
    `the area covers ${formatKm2(areaSqM)}, more than the ${formatKm2(limitSqM)} Mapflow searches its catalog over at once (searchAreaLimit); nothing was searched or spent. Split the area into files of less than ${formatKm2(limitSqM)}, or process it with a fixed source instead of "imagery.search".`,
    { details: { areaSqM, searchAreaLimitSqM: limitSqM } },
  );
}

/** A search Mapflow refused (4xx other than authentication) as a rejection that says why; else undefined. */
function searchRefusal(err: unknown): InputRejected | undefined {
  if (!(err instanceof MapflowError) || err.status === undefined || err.status < 400 || err.status >= 500 || err.status === 429 || err.status === 408) return undefined;
  if (err.name === 'MapflowAuthError' && err.status !== 403) return undefined; // the token hint (outcome.ts)
  if (err.code !== undefined && AUTH_ERROR_CODES.includes(err.code)) return undefined;
  const mapflowMessage = err.message.replace(/^Mapflow [A-Z]+ \S+ answered /, '');
  return new InputRejected(
    'CATALOG_SEARCH_REFUSED',
    `Mapflow refused the catalog search (${mapflowMessage}); check "imagery.search" (dates, limits, providers) and the area, then drop the file again under a new name (the same file under the same name is the same job).`,
    { cause: err, details: { mapflowCode: err.code, status: err.status } },
  );
}
