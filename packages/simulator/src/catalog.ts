/**
 * The imagery catalog (POST /catalog/meta): a deterministic synthetic set of
 * Scenes and Mosaics around any AOI (seeded by the simulator seed and the AOI's
 * bounding box), filtered, sorted and paged as the spec's search body asks.
 */
import type { MultiPolygon, Polygon, Position } from 'geojson';
import { CATALOG_PROVIDERS } from './catalogue.ts';
import { json, type Reply, type Route, type RouteRequest, type SimContext } from './context.ts';
import { areaSqM, bboxOf, MalformedGeometry, parseAoiGeometry, splitPolygons, type AoiGeometry, type BBox } from './geometry.ts';
import { badRequest, readJsonObject, SimHttpError } from './http.ts';
import { encodePng } from './png.ts';
import { between, integerBetween, pick, seededRandom, seedFrom } from './random.ts';

export interface CatalogProduct {
  id: string;
  productType: string;
  acquisitionDate: string;
  sensor: string;
  pixelResolution: number;
  /** null with `--real-shapes` for providers without the metadata (a null matches any filter). */
  cloudCover: number | null;
  offNadirAngle: number | null;
  colorBandOrder: string;
  providerName: string;
  /** The zoom it is processed at, a string as the live service sends it. */
  zoom: string;
  previewType: 'png' | 'xyz';
  previewUrl: string;
  footprint: Polygon | MultiPolygon;
  /** Extras beyond the spec's fields (extra fields never break a client). */
  available: boolean;
  aoiIntersectionPercent: number;
}

const PRODUCTS_PER_AOI = 40;
/** Acquisition dates lie before this fixed day so that results never depend on today's date. */
const LATEST_ACQUISITION = Date.parse('2025-06-01T00:00:00Z');
const DAY = 86_400_000;

const rectangle = ([west, south, east, north]: BBox): Position[][] => [[[west, south], [east, south], [east, north], [west, north], [west, south]]];

/** Clips one ring to a rectangle (Sutherland-Hodgman; exact for a convex clip window). */
function clipRing(ring: Position[], [west, south, east, north]: BBox): Position[] {
  const edges: Array<{ inside: (p: Position) => boolean; cross: (a: Position, b: Position) => Position }> = [
    { inside: (p) => p[0]! >= west, cross: (a, b) => at(a, b, (west - a[0]!) / (b[0]! - a[0]!)) },
    { inside: (p) => p[0]! <= east, cross: (a, b) => at(a, b, (east - a[0]!) / (b[0]! - a[0]!)) },
    { inside: (p) => p[1]! >= south, cross: (a, b) => at(a, b, (south - a[1]!) / (b[1]! - a[1]!)) },
    { inside: (p) => p[1]! <= north, cross: (a, b) => at(a, b, (north - a[1]!) / (b[1]! - a[1]!)) },
  ];
  let points = ring.slice(0, -1);
  for (const edge of edges) {
    const input = points;
    points = [];
    input.forEach((current, i) => {
      const previous = input[(i + input.length - 1) % input.length]!;
      if (edge.inside(current)) {
        if (!edge.inside(previous)) points.push(edge.cross(previous, current));
        points.push(current);
      } else if (edge.inside(previous)) {
        points.push(edge.cross(previous, current));
      }
    });
    if (points.length === 0) return [];
  }
  return points.length < 3 ? [] : [...points, points[0]!];
}

function at(a: Position, b: Position, t: number): Position {
  return [a[0]! + (b[0]! - a[0]!) * t, a[1]! + (b[1]! - a[1]!) * t];
}

/**
 * Percentage of the AOI's area covered by a rectangular footprint: the AOI is
 * clipped to the rectangle exactly, so 100 means the whole AOI lies inside it.
 * Rounded down to 0.1 so that a nearly covered AOI never reads as 100.
 */
function coveragePercent(aoi: AoiGeometry, box: BBox): number {
  const total = areaSqM(aoi);
  if (total === 0) return 100;
  const clipped: Position[][][] = [];
  for (const polygon of splitPolygons(aoi)) {
    const [outer, ...holes] = polygon.coordinates.map((ring) => clipRing(ring, box));
    if (outer && outer.length > 0) clipped.push([outer, ...holes.filter((h) => h.length > 0)]);
  }
  const covered = clipped.length === 0 ? 0 : areaSqM({ type: 'MultiPolygon', coordinates: clipped });
  return Math.min(100, Math.floor((covered / total) * 1000 + 1e-9) / 10);
}

function hexId(random: () => number, length: number): string {
  return Array.from({ length }, () => Math.floor(random() * 16).toString(16)).join('').toUpperCase();
}

/** The products the catalog holds around an AOI (before filters). */
export function productsAround(aoi: AoiGeometry, seed: number, baseUrl: string, live = false): CatalogProduct[] {
  const box = bboxOf(aoi);
  const random = seededRandom(seedFrom(seed, 'catalog', ...box.map((v) => v.toFixed(4))));
  const spanX = Math.max(box[2] - box[0], 0.01);
  const spanY = Math.max(box[3] - box[1], 0.01);
  const products: CatalogProduct[] = [];
  for (let n = 0; n < PRODUCTS_PER_AOI; n++) {
    const provider = pick(random, CATALOG_PROVIDERS);
    const sensor = pick(random, provider.sensors);
    const acquired = LATEST_ACQUISITION - integerBetween(random, 0, 1500) * DAY + integerBetween(random, 9, 12) * 3_600_000;
    if (provider.productType === 'Mosaic') {
      const margin = 0.1;
      const cover: BBox = [box[0] - margin * spanX, box[1] - margin * spanY, box[2] + margin * spanX, box[3] + margin * spanY];
      const id = `${provider.name}-${hexId(random, 12)}`;
      products.push({
        id,
        productType: 'Mosaic',
        acquisitionDate: new Date(acquired).toISOString(),
        sensor,
        pixelResolution: random() < 0.5 ? 0.0 : provider.resolution[1],
        cloudCover: Math.round(between(random, 0, 5) * 10) / 10,
        offNadirAngle: Math.round(between(random, 0, 15) * 10) / 10,
        colorBandOrder: 'RGB',
        providerName: live ? provider.catalogName : provider.name,
        zoom: String(provider.zoom),
        previewType: 'xyz',
        previewUrl: `${baseUrl}/catalog/preview/${id}/{z}/{x}/{-y}.png`,
        footprint: { type: 'MultiPolygon', coordinates: [rectangle(cover)] },
        available: true,
        aoiIntersectionPercent: 100,
      });
      continue;
    }
    // A scene: a rectangle of 0.6-2 AOI spans, shifted so that it covers some or all of the AOI.
    const width = spanX * between(random, 0.6, 2);
    const height = spanY * between(random, 0.6, 2);
    const centreX = (box[0] + box[2]) / 2 + spanX * between(random, -0.6, 0.6);
    const centreY = (box[1] + box[3]) / 2 + spanY * between(random, -0.6, 0.6);
    const footprint: BBox = [centreX - width / 2, centreY - height / 2, centreX + width / 2, centreY + height / 2];
    const id = hexId(random, 16);
    products.push({
      id,
      productType: 'Scene',
      acquisitionDate: new Date(acquired).toISOString(),
      sensor,
      pixelResolution: Math.round(between(random, provider.resolution[0], provider.resolution[1]) * 100) / 100,
      cloudCover: live && provider.sparseMetadata ? null : Math.round(between(random, 0, 80) * 10) / 10,
      offNadirAngle: live && provider.sparseMetadata ? null : Math.round(between(random, -35, 35) * 10) / 10,
      colorBandOrder: sensor.startsWith('WV') || sensor.startsWith('GE') ? 'Red,Green,Blue,NIR' : 'RGB',
      providerName: live ? provider.catalogName : provider.name,
      zoom: String(provider.zoom),
      previewType: 'png',
      previewUrl: `${baseUrl}/catalog/preview/${id}.png`,
      footprint: { type: 'Polygon', coordinates: rectangle(footprint) },
      available: random() >= 0.2,
      aoiIntersectionPercent: coveragePercent(aoi, footprint),
    });
  }
  return products;
}

function optionalNumber(body: Record<string, unknown>, field: string, min?: number, max?: number): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw badRequest(`${field} must be a number`);
  if ((min !== undefined && value < min) || (max !== undefined && value > max)) throw badRequest(`${field} must be between ${min} and ${max}`);
  return value;
}

function optionalDate(body: Record<string, unknown>, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  const time = typeof value === 'string' ? Date.parse(value) : NaN;
  if (Number.isNaN(time)) throw badRequest(`${field} must be an ISO 8601 UTC datetime`);
  return time;
}

function optionalList(body: Record<string, unknown>, field: string): string[] | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw badRequest(`${field} must be an array of strings`);
  return (value as string[]).map((v) => v.toUpperCase());
}

const SORT_KEYS: Record<string, keyof CatalogProduct> = {
  ACQUISITION_DATE: 'acquisitionDate',
  CLOUD_COVER: 'cloudCover',
  PIXEL_RESOLUTION: 'pixelResolution',
  RESOLUTION: 'pixelResolution',
  OFF_NADIR_ANGLE: 'offNadirAngle',
  AOI_INTERSECTION_PERCENT: 'aoiIntersectionPercent',
};

async function searchCatalog(ctx: SimContext, { req }: RouteRequest): Promise<Reply> {
  const body = await readJsonObject(req);
  let aoi: AoiGeometry;
  try {
    aoi = parseAoiGeometry(body.aoi);
  } catch (error) {
    if (error instanceof MalformedGeometry) throw ctx.realShapes ? new SimHttpError(400, 'BAD_REQUEST', `aoi: ${error.message}`) : new SimHttpError(400, 'geometry.Invalid', `aoi: ${error.message}`);
    throw error;
  }
  const area = areaSqM(aoi);
  const searchLimit = ctx.live.searchAreaLimitSqM;
  if (ctx.realShapes && searchLimit > 0 && area > searchLimit) {
    // `searchAreaLimit` (mapflow-qgis spec/002_F_plan_processing_api.md lines 328-341): the plugin never runs an
    // immediate search above it, so no source shows the server's answer; the simulator refuses as the
    // server's own checks do (BadRequest, code BAD_REQUEST).
    throw new SimHttpError(400, 'BAD_REQUEST', `The search area ${Math.round(area)} sq.m. exceeds the search area limit of ${searchLimit} sq.m.`);
  }
  if (!ctx.realShapes && area > ctx.limits.aoiAreaLimitSqM) {
    throw new SimHttpError(400, 'TOO_LARGE_AOI', `The search area ${Math.round(area)} m² exceeds the AOI area limit`, {
      area: Math.round(area),
      aoiAreaLimit: ctx.limits.aoiAreaLimitSqM,
    });
  }
  const from = optionalDate(body, 'acquisitionDateFrom');
  const to = optionalDate(body, 'acquisitionDateTo');
  const minResolution = optionalNumber(body, 'minResolution', 0);
  const maxResolution = optionalNumber(body, 'maxResolution', 0);
  const maxCloudCover = optionalNumber(body, 'maxCloudCover', 0, 100);
  const minOffNadir = optionalNumber(body, 'minOffNadirAngle');
  const maxOffNadir = optionalNumber(body, 'maxOffNadirAngle');
  const minIntersection = optionalNumber(body, 'minAoiIntersectionPercent', 0, 100);
  const limit = optionalNumber(body, 'limit', 0) ?? 100;
  const offset = optionalNumber(body, 'offset', 0) ?? 0;
  if (!Number.isInteger(limit) || !Number.isInteger(offset)) throw badRequest('limit and offset must be integers');
  const providers = optionalList(body, 'dataProviders');
  const productTypes = optionalList(body, 'productTypes');
  const sortBy = typeof body.sortBy === 'string' ? body.sortBy.toUpperCase() : 'ACQUISITION_DATE';
  const sortKey = SORT_KEYS[sortBy];
  if (!sortKey) throw badRequest(`sortBy must be one of ${Object.keys(SORT_KEYS).join(', ')}`);
  const sortOrder = typeof body.sortOrder === 'string' ? body.sortOrder.toUpperCase() : 'DESC';
  if (sortOrder !== 'ASC' && sortOrder !== 'DESC') throw badRequest('sortOrder must be ASC or DESC');

  // A null value matches any condition on it (mapflow-qgis spec/002_D_search_api.md lines 31-35).
  const matches = productsAround(aoi, ctx.seed, ctx.baseUrl(), ctx.realShapes).filter((p) => {
    const time = Date.parse(p.acquisitionDate);
    // Off-nadir bounds apply to the angle's size: a negative angle is the same tilt to the other side.
    const offNadir = p.offNadirAngle === null ? null : Math.abs(p.offNadirAngle);
    const type = p.productType === 'Mosaic' ? 'MOSAIC' : 'IMAGE';
    return (
      (from === undefined || time >= from) &&
      (to === undefined || time <= to) &&
      (minResolution === undefined || p.pixelResolution >= minResolution) &&
      (maxResolution === undefined || p.pixelResolution <= maxResolution) &&
      (maxCloudCover === undefined || p.cloudCover === null || p.cloudCover <= maxCloudCover) &&
      (minOffNadir === undefined || offNadir === null || offNadir >= minOffNadir) &&
      (maxOffNadir === undefined || offNadir === null || offNadir <= maxOffNadir) &&
      (minIntersection === undefined || p.aoiIntersectionPercent >= minIntersection) &&
      (body.hideUnavailable !== true || p.available) &&
      (providers === undefined || providers.includes(p.providerName.toUpperCase())) &&
      (productTypes === undefined || productTypes.includes(type) || (type === 'IMAGE' && productTypes.includes('SCENE')))
    );
  });
  const direction = sortOrder === 'ASC' ? 1 : -1;
  matches.sort((a, b) => {
    const x = a[sortKey] as string | number;
    const y = b[sortKey] as string | number;
    return (x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : 1) * direction;
  });
  const page = matches.slice(offset, offset + limit);
  if (!ctx.realShapes) return json(page);
  // Each result carries its provider's minimum area, minAreaSqkm (mapflow-qgis schema/catalog.py line 82).
  const minAreaOf = (p: CatalogProduct) => ctx.live.catalogMinAreasSqKm[p.providerName.toLowerCase()];
  const images = page.map((p) => ({ ...p, productType: p.productType === 'Scene' ? 'Image' : p.productType, ...(minAreaOf(p) !== undefined && { minAreaSqkm: minAreaOf(p) }) }));
  return json({ images, total: matches.length, limit, offset });
}

/**
 * A product's preview (previewType png) or one tile of a mosaic's preview layer
 * (previewType xyz, `{z}/{x}/{-y}`): a synthetic 256x256 PNG, so that the
 * previewUrl a search hands out resolves. The colours come from the product id
 * and the tile, so neighbouring tiles and products differ.
 */
async function catalogPreview(_ctx: SimContext, { params }: RouteRequest): Promise<Reply> {
  const [id, z, x, y] = params as [string, string | undefined, string | undefined, string | undefined];
  if (z !== undefined && (Number(z) < 0 || Number(z) > 22)) throw badRequest(`zoom ${z} is outside 0-22`);
  const random = seededRandom(seedFrom(0, 'preview', id, z ?? '', x ?? '', y ?? ''));
  const base = [integerBetween(random, 40, 120), integerBetween(random, 60, 140), integerBetween(random, 30, 90)];
  const size = 256;
  const rgb = new Uint8Array(size * size * 3);
  for (let row = 0; row < size; row++) {
    for (let col = 0; col < size; col++) {
      const shade = Math.round(((row + col) / (2 * size)) * 80);
      for (let band = 0; band < 3; band++) rgb[(row * size + col) * 3 + band] = Math.min(255, base[band]! + shade);
    }
  }
  return { kind: 'binary', contentType: 'image/png', body: encodePng(size, size, rgb) };
}

export const catalogRoutes: Route[] = [
  { method: 'POST', pattern: /^\/catalog\/meta$/, family: 'api', handle: searchCatalog },
  { method: 'GET', pattern: /^\/catalog\/preview\/([A-Za-z0-9_-]+)\.png$/, family: 'api', handle: catalogPreview },
  { method: 'GET', pattern: /^\/catalog\/preview\/([A-Za-z0-9_-]+)\/(\d+)\/(\d+)\/(-?\d+)\.png$/, family: 'api', handle: catalogPreview },
];
