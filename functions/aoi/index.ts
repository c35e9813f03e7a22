/**
 * AOI: reads a dropped GeoJSON into the polygons Mapflow will process.
 *
 * Accepted: a FeatureCollection, a Feature, a bare Polygon or MultiPolygon, or
 * a GeometryCollection. Polygons and MultiPolygons are kept; points and lines
 * have no area and are counted and skipped (reported to the user, not fatal).
 * Anything that would make Mapflow fail later, after credits are reserved, is
 * rejected here with a message that says what to fix.
 */
import { dissolvePolygons } from './dissolve.ts';
import { geodesicAreaSqM } from './geodesic-area.ts';
import type { MultiPolygon, Polygon } from 'geojson';
import { InputRejected } from '../jobs/errors.ts';
import { describePlace, validatePolygon, type PolygonPlace } from './geometry.ts';
import { formatBytes, looksBinary, printable, sniffFormat } from '../storage/describe.ts';

export { KINKS_MAX_POSITIONS } from './geometry.ts';

export interface AoiFeature {
  /** Position of the feature in the file (0-based), or of the member of a top-level GeometryCollection. */
  index: number;
  /** The feature's `name` (or `title`, `id`) property, else its index as text. */
  name: string;
  geometry: Polygon | MultiPolygon;
  /** Geodesic area in m². */
  areaSqM: number;
}

export interface ParsedAoi {
  features: AoiFeature[];
  /** All polygons combined (MultiPolygon when more than one). */
  geometry: Polygon | MultiPolygon;
  /** Geodesic area of all polygons, m². */
  areaSqM: number;
  /** [minLon, minLat, maxLon, maxLat] of all polygons. */
  bbox: [number, number, number, number];
  /** The `mapflow` foreign member, if any (see routing's applyOverrides). */
  overrides?: unknown;
  /** Features skipped: points, lines, and features without geometry. */
  ignored: { points: number; lines: number; empty: number };
}

export interface ParseAoiOptions {
  /** The account's aoiAreaLimit in m²: the total and each polygon's lat/lon bounding box must stay under it. */
  aoiAreaLimitSqM?: number;
  /** Largest file accepted, bytes (default MAX_GEOJSON_BYTES). */
  maxBytes?: number;
}

/**
 * The largest GeoJSON the bridge accepts, the one limit every reader and the
 * docs use (docs/inputs.md, docs/workflow.md): the file is parsed whole in the
 * Plan Processing Lambda's memory.
 */
export const MAX_GEOJSON_BYTES = 20 * 1024 * 1024;

/** FILE_TOO_LARGE for a GeoJSON, saying what to do; `size` when known (a streamed read stops at the limit). */
export function geoJsonTooLarge(maxBytes: number, size?: number): InputRejected {
  const found = size !== undefined ? formatBytes(size) : `over ${formatBytes(maxBytes)}`;
  return new InputRejected(
    'FILE_TOO_LARGE',
    `the GeoJSON is ${found}; at most ${formatBytes(maxBytes)} is accepted. Split it into several files (each one job), simplify the polygons ` +
      `(e.g. QGIS "Simplify" or mapshaper -simplify), or remove the properties you do not need`,
    { details: { maxBytes, ...(size !== undefined && { size }) } },
  );
}

const GEOJSON_TYPES = ['FeatureCollection', 'Feature', 'Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'GeometryCollection'];

/**
 * Parses and validates a GeoJSON AOI.
 * @throws InputRejected EMPTY_FILE, FILE_TOO_LARGE, NOT_JSON, NOT_GEOJSON, NO_POLYGONS, INVALID_GEOMETRY,
 *   SELF_INTERSECTING, COORDINATES_OUT_OF_RANGE, AREA_TOO_LARGE
 */
export function parseAoi(file: string | Uint8Array, options: ParseAoiOptions = {}): ParsedAoi {
  const maxBytes = options.maxBytes ?? MAX_GEOJSON_BYTES;
  const size = typeof file === 'string' ? Buffer.byteLength(file, 'utf8') : file.byteLength;
  if (size > maxBytes) throw geoJsonTooLarge(maxBytes, size);
  const text = typeof file === 'string' ? file : new TextDecoder('utf-8').decode(file);
  const body = text.replace(/^\uFEFF/, '');
  if (body.trim() === '') throw new InputRejected('EMPTY_FILE', 'the file is empty: drop a GeoJSON with at least one Polygon or MultiPolygon');

  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (cause) {
    const head = typeof file === 'string' ? Buffer.from(file.slice(0, 8), 'utf8') : file.subarray(0, 8);
    throw new InputRejected('NOT_JSON', notJsonMessage(head, body, cause), { cause });
  }
  if (!isObject(doc) || typeof doc.type !== 'string' || !GEOJSON_TYPES.includes(doc.type)) {
    const found = isObject(doc) ? (typeof doc.type === 'string' ? `"type": "${printable(doc.type)}"` : 'an object without "type"') : `a JSON ${Array.isArray(doc) ? 'array' : typeof doc}`;
    throw new InputRejected(
      'NOT_GEOJSON',
      `expected a GeoJSON FeatureCollection, Feature, Polygon, MultiPolygon or GeometryCollection, found ${found}`,
    );
  }
  assertWgs84(doc);

  const collected = collectFeatures(doc);
  const ignored = collected.ignored;
  if (collected.features.length === 0) {
    const skipped = [
      ignored.points && `${ignored.points} point feature(s)`,
      ignored.lines && `${ignored.lines} line feature(s)`,
      ignored.empty && `${ignored.empty} feature(s) without geometry`,
    ].filter(Boolean);
    throw new InputRejected(
      'NO_POLYGONS',
      `the file has no Polygon or MultiPolygon${skipped.length ? ` (found ${skipped.join(', ')})` : ''}: draw the area to process as polygons`,
      { details: { ignored } },
    );
  }

  const features = collected.features.map(({ index, name, polygons }): AoiFeature => {
    const valid = polygons.map((coordinates, polygonIndex) =>
      validatePolygon(coordinates, { featureIndex: index, featureName: name, polygonIndex, polygonCount: polygons.length }),
    );
    const geometry = dissolvePolygons(valid.map((p) => p.coordinates));
    return { index, name: name ?? String(index), geometry, areaSqM: geodesicAreaSqM(geometry) };
  });

  const allPolygons = features.flatMap((f) => (f.geometry.type === 'Polygon' ? [f.geometry.coordinates] : f.geometry.coordinates));
  // One valid geometry for the whole file: shared edges dissolved, overlaps counted once.
  const geometry = dissolvePolygons(allPolygons);
  const areaSqM = geodesicAreaSqM(geometry);

  if (options.aoiAreaLimitSqM !== undefined) checkAreaLimit(features, areaSqM, options.aoiAreaLimitSqM);

  return {
    features,
    geometry,
    areaSqM,
    bbox: bboxOf(allPolygons.map((p) => p[0]!)),
    ...(isObject(doc) && doc.mapflow !== undefined && { overrides: doc.mapflow }),
    ignored,
  };
}

/**
 * Why the text is not JSON, never quoting binary bytes: a known binary format
 * is named with what to do; other binary files are called binary; for text,
 * the parser's reason is quoted as a short printable excerpt.
 */
function notJsonMessage(head: Uint8Array, body: string, cause: unknown): string {
  const format = sniffFormat(head);
  if (format) return `the file is not JSON: this looks like ${format.description}: ${format.advice}`;
  if (looksBinary(body)) return 'the file is not JSON: it is a binary file, not text. Drop GeoJSON (.geojson) files as text, or GeoTIFF images named .tif';
  const reason = cause instanceof Error ? cause.message : String(cause);
  return `the file is not valid JSON (${printable(reason, 160)}); save it again as GeoJSON`;
}

interface CollectedFeature {
  index: number;
  name?: string;
  /** Polygon coordinate arrays, not yet validated. */
  polygons: unknown[];
}

/** Walks the document into features with their (unvalidated) polygons, counting what has no area. */
function collectFeatures(doc: Record<string, unknown>): { features: CollectedFeature[]; ignored: ParsedAoi['ignored'] } {
  const ignored = { points: 0, lines: 0, empty: 0 };
  const features: CollectedFeature[] = [];
  const addFeature = (feature: unknown, index: number) => {
    if (!isObject(feature) || feature.type !== 'Feature') {
      throw new InputRejected('NOT_GEOJSON', `feature ${index} is not a GeoJSON Feature ({"type": "Feature", "geometry": ..., "properties": ...})`);
    }
    const name = featureName(feature);
    if (feature.geometry === null || feature.geometry === undefined) {
      ignored.empty++;
      return;
    }
    const polygons = polygonsOf(feature.geometry, index, name, ignored);
    if (polygons.length > 0) features.push({ index, ...(name !== undefined && { name }), polygons });
  };

  switch (doc.type) {
    case 'FeatureCollection':
      if (!Array.isArray(doc.features)) throw new InputRejected('NOT_GEOJSON', 'a FeatureCollection needs a "features" array');
      doc.features.forEach(addFeature);
      break;
    case 'Feature':
      addFeature(doc, 0);
      break;
    case 'GeometryCollection':
      // Each member is its own AOI, as if it were a feature.
      geometriesOf(doc, 0).forEach((member, index) => {
        const polygons = polygonsOf(member, index, undefined, ignored);
        if (polygons.length > 0) features.push({ index, polygons });
      });
      break;
    default:
      {
        const polygons = polygonsOf(doc, 0, undefined, ignored);
        if (polygons.length > 0) features.push({ index: 0, polygons });
      }
  }
  return { features, ignored };
}

/** The polygon coordinate arrays of one geometry (GeometryCollections flattened). */
function polygonsOf(geometry: unknown, index: number, name: string | undefined, ignored: ParsedAoi['ignored']): unknown[] {
  const where = describePlace({ featureIndex: index, featureName: name, polygonIndex: 0, polygonCount: 1 });
  if (!isObject(geometry) || typeof geometry.type !== 'string') {
    throw new InputRejected('NOT_GEOJSON', `${where}: "geometry" must be a GeoJSON geometry object or null`);
  }
  switch (geometry.type) {
    case 'Polygon':
      return [geometry.coordinates];
    case 'MultiPolygon':
      if (!Array.isArray(geometry.coordinates)) {
        throw new InputRejected('INVALID_GEOMETRY', `${where}: a MultiPolygon needs "coordinates": [polygon, ...]`, { details: { featureIndex: index } });
      }
      return geometry.coordinates;
    case 'Point':
    case 'MultiPoint':
      ignored.points++;
      return [];
    case 'LineString':
    case 'MultiLineString':
      ignored.lines++;
      return [];
    case 'GeometryCollection':
      return geometriesOf(geometry, index).flatMap((member) => polygonsOf(member, index, name, ignored));
    default:
      throw new InputRejected('NOT_GEOJSON', `${where}: unknown geometry type "${printable(geometry.type)}"`);
  }
}

function geometriesOf(collection: Record<string, unknown>, index: number): unknown[] {
  if (!Array.isArray(collection.geometries)) {
    throw new InputRejected('NOT_GEOJSON', `feature ${index}: a GeometryCollection needs a "geometries" array`);
  }
  return collection.geometries;
}

function featureName(feature: Record<string, unknown>): string | undefined {
  const props = isObject(feature.properties) ? feature.properties : {};
  for (const candidate of [props.name, props.title, props.id, feature.id]) {
    if ((typeof candidate === 'string' && candidate.trim() !== '') || typeof candidate === 'number') return String(candidate).trim();
  }
  return undefined;
}

/**
 * The legacy (2008) GeoJSON `crs` member: only WGS84 longitude/latitude is
 * GeoJSON today, so any other declared CRS is refused before its numbers are
 * misread as degrees.
 */
function assertWgs84(doc: Record<string, unknown>): void {
  const crs = doc.crs;
  if (crs === undefined || crs === null) return;
  const name = isObject(crs) && isObject(crs.properties) ? String(crs.properties.name ?? '') : '';
  if (/CRS84$|EPSG:+4326$/i.test(name)) return;
  throw new InputRejected(
    'COORDINATES_OUT_OF_RANGE',
    `the file declares the coordinate reference system "${printable(name || JSON.stringify(crs))}"; GeoJSON must be in WGS84 longitude/latitude (EPSG:4326): export it again in that CRS`,
  );
}

/**
 * Mapflow refuses a processing (TOO_LARGE_PROCESSING) when the total area, or
 * the lat/lon bounding box of any one AOI, exceeds the account's aoiAreaLimit.
 * Each polygon becomes one AOI, so each polygon's box is checked.
 */
function checkAreaLimit(features: AoiFeature[], totalSqM: number, limitSqM: number): void {
  const limit = formatKm2(limitSqM);
  if (totalSqM > limitSqM) {
    throw new InputRejected(
      'AREA_TOO_LARGE',
      `the polygons cover ${formatKm2(totalSqM)} in all, more than the account's AOI limit of ${limit}. Split the area into several files, each under ${limit}`,
      { details: { areaSqM: totalSqM, aoiAreaLimitSqM: limitSqM } },
    );
  }
  for (const feature of features) {
    const polygons = feature.geometry.type === 'Polygon' ? [feature.geometry.coordinates] : feature.geometry.coordinates;
    polygons.forEach((polygon, polygonIndex) => {
      const boxSqM = boxAreaSqM(polygon);
      if (boxSqM > limitSqM) {
        const place: PolygonPlace = { featureIndex: feature.index, featureName: feature.name, polygonIndex, polygonCount: polygons.length };
        throw new InputRejected(
          'AREA_TOO_LARGE',
          `${describePlace(place)}: its longitude/latitude bounding box covers ${formatKm2(boxSqM)}, more than the account's AOI limit of ${limit} ` +
            `(Mapflow limits the box around each polygon, not only its area). Cut it into smaller polygons`,
          { details: { featureIndex: feature.index, polygonIndex, bboxAreaSqM: boxSqM, aoiAreaLimitSqM: limitSqM } },
        );
      }
    });
  }
}

/**
 * Checks the geometry actually sent as one processing (for a whole file, its
 * polygons dissolved together): Mapflow makes one AOI per polygon and refuses
 * any whose longitude/latitude box exceeds the AOI limit. Neighbourhoods that
 * each pass can merge into one polygon that does not.
 */
export function checkProcessingGeometry(geometry: Polygon | MultiPolygon, limitSqM: number, label: string): void {
  const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
  for (const polygon of polygons) {
    const boxSqM = boxAreaSqM(polygon);
    if (boxSqM > limitSqM) {
      throw new InputRejected(
        'AREA_TOO_LARGE',
        `${label}: merged together, the polygons make an area whose longitude/latitude bounding box covers ${formatKm2(boxSqM)}, ` +
          `more than the account's AOI limit of ${formatKm2(limitSqM)} (Mapflow limits the box around each polygon). ` +
          `Set "splitFeatures": true (in the route, or in the file's "mapflow" member) to run one processing per feature, or split the file`,
        { details: { bboxAreaSqM: boxSqM, aoiAreaLimitSqM: limitSqM } },
      );
    }
  }
}

/** Area of the longitude/latitude box around a polygon's outer ring. */
function boxAreaSqM(polygon: number[][][]): number {
  const [w, s, e, n] = bboxOf([polygon[0]!]);
  return geodesicAreaSqM({ type: 'Polygon', coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] });
}

function bboxOf(rings: number[][][]): [number, number, number, number] {
  let [w, s, e, n] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const ring of rings) {
    for (const [lon, lat] of ring) {
      w = Math.min(w, lon!);
      e = Math.max(e, lon!);
      s = Math.min(s, lat!);
      n = Math.max(n, lat!);
    }
  }
  return [w, s, e, n];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function formatKm2(sqM: number): string {
  const km2 = sqM / 1e6;
  return `${km2.toLocaleString('en-US', { maximumFractionDigits: km2 < 10 ? 2 : 1 })} km²`;
}
