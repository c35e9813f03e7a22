/**
 * AOI: reads a dropped GeoJSON into the polygons Mapflow will process.
 *
 * Accepted: a FeatureCollection, a Feature, a bare Polygon or MultiPolygon, or
 * a GeometryCollection. Polygons and MultiPolygons are kept; points and lines
 * have no area and are counted and skipped (reported to the user, not fatal).
 * Anything that would make Mapflow fail later, after credits are reserved, is
 * rejected here with a message that says what to fix.
 */
import { boxOf } from './box.ts';
import { DISSOLVE_BUDGET_MS, cpuTimeMs, dissolvePolygons } from './dissolve.ts';
import { geodesicAreaSqM } from './geodesic-area.ts';
import type { MultiPolygon, Polygon } from 'geojson';
import { InputRejected } from '../core/errors.ts';
import { checkDeadline, type DecodeDeadline } from '../core/deadline.ts';
import { describePlace, SELF_CROSSING_SWEEP_PAIRS, validatePolygon, type PolygonPlace } from './geometry.ts';
import { checkJsonCounts } from '../geojson/bounds.ts';
import { formatBytes, looksBinary, printable, sniffFormat } from '../storage/describe.ts';

export { DISSOLVE_BATCH, DISSOLVE_BUDGET_MS } from './dissolve.ts';

/*
 * Counts bounded before any geometry work, so the time and memory of the
 * validation and the dissolve are bounded by construction (figures in
 * docs/inputs.md and README, measured by packages/bench/hostile.ts).
 */
/** Most polygons (Polygons and MultiPolygon parts) in one file. */
export const MAX_POLYGONS = 2_500;
/** Most rings (outer rings and holes) in one file. */
export const MAX_RINGS = 10_000;
/** Most positions in one file. */
export const MAX_POSITIONS = 100_000;
/**
 * Deepest nesting of arrays and objects anywhere in the file. GeoJSON needs
 * 9 (a MultiPolygon's positions in a Feature in a FeatureCollection), 17
 * with GeometryCollections nested MAX_GEOMETRY_NESTING deep; the rest is left
 * for properties. Every later walk (the checks, messages, the copy to a
 * worker) may recurse: 5,000 levels in a `crs` member or a position, or a
 * 40,000-deep `mapflow` array, overflowed the stack (issue 23).
 */
export const MAX_JSON_DEPTH = 64;

/** Deepest GeometryCollection nesting (RFC 7946 advises against any). */
export const MAX_GEOMETRY_NESTING = 4;

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
  /** When validating and merging must stop (the step's time, core/deadline.ts): DecodeTimedOut, INPUT_TOO_COMPLEX. */
  deadline?: DecodeDeadline;
}

/** What to do about a GeoJSON that takes too long to validate and merge. */
const AOI_TIME_FIX = 'Simplify the polygons (e.g. QGIS "Simplify" or mapshaper -simplify), merge them in a GIS first ("Dissolve"), or split the file into several files';

/**
 * The largest GeoJSON the bridge accepts, the one limit every reader and the
 * docs use (docs/inputs.md, docs/workflow.md): the file is parsed whole in the
 * Plan Processing Lambda's memory.
 */
export const MAX_GEOJSON_BYTES = 20 * 1024 * 1024;

/** FILE_TOO_LARGE for a GeoJSON, saying what to do; `size` when known (a streamed read stops at the limit). */
export function geoJsonTooLarge(maxBytes: number, size?: number): InputRejected {
  // A size just over the limit rounds to the limit's own figure ("20 MiB" for 21 MB): then the bytes say it.
  const exact = (n: number) => `${(n / 1024 ** 2).toFixed(2)} MiB (${n.toLocaleString('en-US')} bytes)`;
  const close = size !== undefined && formatBytes(size) === formatBytes(maxBytes);
  const found = size === undefined ? `over ${formatBytes(maxBytes)}` : close ? exact(size) : formatBytes(size);
  return new InputRejected(
    'FILE_TOO_LARGE',
    `the GeoJSON is ${found}; at most ${close ? exact(maxBytes) : formatBytes(maxBytes)} is accepted. Split it into several files (each one job), simplify the polygons ` +
      `(e.g. QGIS "Simplify" or mapshaper -simplify), or remove the properties you do not need`,
    { details: { maxBytes, ...(size !== undefined && { size }) } },
  );
}

const GEOJSON_TYPES = ['FeatureCollection', 'Feature', 'Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'GeometryCollection'];

/**
 * Parses and validates a GeoJSON AOI.
 * @throws InputRejected EMPTY_FILE, FILE_TOO_LARGE, NOT_JSON, NOT_GEOJSON, NO_POLYGONS, INVALID_GEOMETRY,
 *   SELF_INTERSECTING, COORDINATES_OUT_OF_RANGE, CROSSES_ANTIMERIDIAN, AREA_TOO_LARGE, TOO_MANY_POLYGONS,
 *   TOO_MANY_RINGS, TOO_MANY_POSITIONS, GEOMETRY_TOO_COMPLEX, JSON_TOO_MANY_VALUES
 */
export function parseAoi(file: string | Uint8Array, options: ParseAoiOptions = {}): ParsedAoi {
  const maxBytes = options.maxBytes ?? MAX_GEOJSON_BYTES;
  const size = typeof file === 'string' ? Buffer.byteLength(file, 'utf8') : file.byteLength;
  if (size > maxBytes) throw geoJsonTooLarge(maxBytes, size);
  if (typeof file !== 'string') rejectUtf16(file);
  const text = typeof file === 'string' ? file : new TextDecoder('utf-8').decode(file);
  const body = text.replace(/^\uFEFF/, '');
  if (body.trim() === '') throw new InputRejected('EMPTY_FILE', 'the file is empty: drop a GeoJSON with at least one Polygon or MultiPolygon');

  // Counted on the text first: what JSON.parse would build is bounded before it builds it.
  checkJsonCounts(body);
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (cause) {
    const head = typeof file === 'string' ? Buffer.from(file.slice(0, 8), 'utf8') : file.subarray(0, 8);
    throw new InputRejected('NOT_JSON', notJsonMessage(head, body, cause), { cause });
  }
  checkNesting(doc);
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

  checkCounts(collected.features);
  const stepDeadline = options.deadline;
  checkDeadline(stepDeadline, 'reading the GeoJSON', AOI_TIME_FIX);

  // One budget of CPU time for every dissolve of the file (each feature's, then the whole file's).
  const deadline = cpuTimeMs() + DISSOLVE_BUDGET_MS;
  const sweepBudget = { pairs: SELF_CROSSING_SWEEP_PAIRS };
  const features = collected.features.map(({ index, name, polygons }): AoiFeature => {
    const valid = polygons.map((coordinates, polygonIndex) => {
      checkDeadline(stepDeadline, 'validating the polygons', AOI_TIME_FIX);
      return validatePolygon(coordinates, { featureIndex: index, featureName: name, polygonIndex, polygonCount: polygons.length }, { sweepBudget });
    });
    const label = describePlace({ featureIndex: index, featureName: name, polygonIndex: 0, polygonCount: 1 });
    const geometry = dissolvePolygons(
      valid.map((p) => p.coordinates),
      { budgetMs: deadline - cpuTimeMs(), label: `the polygons of ${label}`, ...(stepDeadline && { deadline: stepDeadline }) },
    );
    return { index, name: name ?? String(index), geometry, areaSqM: geodesicAreaSqM(geometry) };
  });

  const allPolygons = features.flatMap((f) => (f.geometry.type === 'Polygon' ? [f.geometry.coordinates] : f.geometry.coordinates));
  // One valid geometry for the whole file: shared edges dissolved, overlaps counted once.
  checkDeadline(stepDeadline, 'validating and merging the polygons', AOI_TIME_FIX);
  const geometry = dissolvePolygons(allPolygons, { budgetMs: deadline - cpuTimeMs(), label: 'the polygons of the file', ...(stepDeadline && { deadline: stepDeadline }) });
  checkMergedCounts(geometry);
  const areaSqM = geodesicAreaSqM(geometry);

  if (options.aoiAreaLimitSqM !== undefined) checkAreaLimit(features, areaSqM, options.aoiAreaLimitSqM);

  return {
    features,
    geometry,
    areaSqM,
    bbox: boxOf(allPolygons.map((p) => p[0]!)),
    ...(isObject(doc) && doc.mapflow !== undefined && { overrides: doc.mapflow }),
    ignored,
  };
}

type AoiParser = (file: string | Uint8Array, options: ParseAoiOptions) => Promise<ParsedAoi>;
let aoiParser: AoiParser | undefined;

/**
 * Where parseAoiOffThread runs parseAoi: in this thread by default (a Lambda
 * runs one step at a time); local mode passes a worker-thread runner
 * (packages/local/src/engine/workers.ts) so one heavy file does not stall the other jobs
 * or the progress display. `undefined` restores the default.
 */
export function useAoiParser(parser: AoiParser | undefined): void {
  aoiParser = parser;
}

/** parseAoi, in a worker thread when one is installed (local mode). */
export async function parseAoiOffThread(file: string | Uint8Array, options: ParseAoiOptions = {}): Promise<ParsedAoi> {
  return aoiParser ? aoiParser(file, options) : parseAoi(file, options);
}

/**
 * JSON text is UTF-8 (RFC 8259, RFC 7946). UTF-16 (a byte-order mark, or
 * ASCII with every other byte zero) is named as such, with how to fix it,
 * instead of "binary".
 * @throws InputRejected NOT_JSON
 */
function rejectUtf16(bytes: Uint8Array): void {
  const [a, b, c, d] = bytes;
  // UTF-32 first: its little-endian mark starts like UTF-16's (FF FE), then two zeros.
  let utf32: string | undefined;
  if (a === 0xff && b === 0xfe && c === 0 && d === 0) utf32 = 'little-endian';
  else if (a === 0 && b === 0 && c === 0xfe && d === 0xff) utf32 = 'big-endian';
  else if (bytes.length >= 8 && a !== 0 && b === 0 && c === 0 && d === 0 && bytes[5] === 0 && bytes[6] === 0 && bytes[7] === 0) utf32 = 'little-endian';
  else if (bytes.length >= 8 && a === 0 && b === 0 && c === 0 && d !== 0 && bytes[4] === 0 && bytes[5] === 0 && bytes[6] === 0) utf32 = 'big-endian';
  if (utf32) {
    throw new InputRejected(
      'NOT_JSON',
      `the file is UTF-32 text (${utf32}); GeoJSON must be UTF-8 (RFC 7946). Save it again as UTF-8 (e.g. in a text editor's "Save with encoding", or iconv -f UTF-32 -t UTF-8)`,
      { details: { encoding: `UTF-32 ${utf32}` } },
    );
  }
  let order: string | undefined;
  if (a === 0xff && b === 0xfe && !(c === 0 && d === 0)) order = 'little-endian';
  else if (a === 0xfe && b === 0xff) order = 'big-endian';
  else if (bytes.length >= 4 && a !== 0 && b === 0 && c !== 0 && d === 0) order = 'little-endian';
  else if (bytes.length >= 4 && a === 0 && b !== 0 && c === 0 && d !== 0) order = 'big-endian';
  if (!order) return;
  throw new InputRejected(
    'NOT_JSON',
    `the file is UTF-16 text (${order}); GeoJSON must be UTF-8 (RFC 7946). Save it again as UTF-8 (e.g. in a text editor's "Save with encoding", or iconv -f UTF-16 -t UTF-8)`,
    { details: { encoding: `UTF-16 ${order}` } },
  );
}

/**
 * Polygon, ring and position counts of the whole file, against MAX_POLYGONS,
 * MAX_RINGS and MAX_POSITIONS: a walk over the arrays, before any copy.
 * @throws InputRejected TOO_MANY_POLYGONS, TOO_MANY_RINGS, TOO_MANY_POSITIONS
 */
function checkCounts(features: CollectedFeature[]): void {
  let polygons = 0;
  let rings = 0;
  let positions = 0;
  for (const feature of features) {
    polygons += feature.polygons.length;
    for (const polygon of feature.polygons) {
      if (!Array.isArray(polygon)) continue;
      rings += polygon.length;
      for (const ring of polygon) if (Array.isArray(ring)) positions += ring.length;
    }
  }
  const fix = 'Simplify the polygons (e.g. QGIS "Simplify" or mapshaper -simplify), merge neighbours in a GIS ("Dissolve"), or split the file into several files';
  if (polygons > MAX_POLYGONS) {
    throw new InputRejected('TOO_MANY_POLYGONS', `the file has ${polygons} polygons; one file may have at most ${MAX_POLYGONS}. ${fix}`, {
      details: { polygons, maxPolygons: MAX_POLYGONS },
    });
  }
  if (rings > MAX_RINGS) {
    throw new InputRejected('TOO_MANY_RINGS', `the file's polygons have ${rings} rings (outer rings and holes); one file may have at most ${MAX_RINGS}. Fill small holes, or ${fix.toLowerCase()}`, {
      details: { rings, maxRings: MAX_RINGS },
    });
  }
  if (positions > MAX_POSITIONS) {
    throw new InputRejected('TOO_MANY_POSITIONS', `the file's polygons have ${positions} positions (vertices); one file may have at most ${MAX_POSITIONS}. ${fix}`, {
      details: { positions, maxPositions: MAX_POSITIONS },
    });
  }
}

/**
 * The nesting of the parsed document, walked without recursion, before
 * anything else looks at it.
 * @throws InputRejected JSON_TOO_DEEP (OVERRIDE_TOO_LARGE in the mapflow member, GEOMETRY_TOO_COMPLEX in GeometryCollections)
 */
function checkNesting(doc: unknown): void {
  // Only objects and arrays go on the stack, with their depth and the top-level member they are in (no per-node objects or paths:
  // a 17 MB file has millions of nodes).
  const values: object[] = [];
  const depths: number[] = [];
  const tops: string[] = [];
  if (typeof doc === 'object' && doc !== null) values.push(doc), depths.push(0), tops.push('');
  while (values.length > 0) {
    const value = values.pop()!;
    const depth = depths.pop()!;
    const top = tops.pop()!;
    if (depth >= MAX_JSON_DEPTH) throw tooDeep(pathTo(doc, top));
    const children = Array.isArray(value) ? value : Object.values(value);
    const keys = depth === 0 && !Array.isArray(value) ? Object.keys(value) : undefined;
    for (let i = 0; i < children.length; i++) {
      const child: unknown = children[i];
      if (typeof child !== 'object' || child === null) continue;
      values.push(child);
      depths.push(depth + 1);
      tops.push(keys ? keys[i]! : top);
    }
  }
}

/** A readable path into the deep member `top`: its first few levels, following the first nested value. */
function pathTo(doc: unknown, top: string): string {
  const path = top ? [top] : [];
  let value: unknown = top && typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)[top] : doc;
  while (path.length < 4 && typeof value === 'object' && value !== null) {
    const entry = Array.isArray(value) ? value.findIndex((v) => typeof v === 'object' && v !== null) : Object.keys(value).find((k) => typeof (value as Record<string, unknown>)[k] === 'object');
    if (entry === undefined || entry === -1) break;
    path.push(String(entry));
    value = (value as Record<string, unknown>)[entry as string];
  }
  return path.join('.');
}

/** The rejection for nesting beyond MAX_JSON_DEPTH, with the code of the part it is in (the mapflow member and GeometryCollections have their own). */
function tooDeep(path: string): InputRejected {
  const where = printable(path.split('.').filter(Boolean).slice(0, 4).join('.'), 80);
  if (where.startsWith('mapflow')) {
    return new InputRejected('OVERRIDE_TOO_LARGE', `"mapflow": ${where} is nested more than ${MAX_JSON_DEPTH} levels deep (its values may nest ${OVERRIDE_NESTING}). Keep per-file settings short (a model, a few blocks, small inferenceParams); larger settings belong in the route`, {
      details: { maxDepth: MAX_JSON_DEPTH, path: where },
    });
  }
  if (/(^|\.)geometries(\.|$)/.test(where)) {
    return new InputRejected(
      'GEOMETRY_TOO_COMPLEX',
      `GeometryCollections are nested more than ${MAX_GEOMETRY_NESTING} deep (under "${where}"); list the polygons in one MultiPolygon or as features instead (RFC 7946 advises against nesting)`,
      { details: { maxNesting: MAX_GEOMETRY_NESTING, path: where } },
    );
  }
  return new InputRejected(
    'JSON_TOO_DEEP',
    `the JSON is nested more than ${MAX_JSON_DEPTH} levels deep (under "${where}"); GeoJSON needs fewer than 20. ` +
      'Write positions as [longitude, latitude], keep properties and the "crs" member flat, and export the file again',
    { details: { maxDepth: MAX_JSON_DEPTH, path: where } },
  );
}

/** Nesting the mapflow member's values may have (OVERRIDE_LIMITS in functions/routing/overrides.ts). */
const OVERRIDE_NESTING = 8;

/**
 * The merged geometry is what travels on (work objects, Mapflow's request):
 * the union adds a position at every crossing, so it is held to the same
 * ring and position limits as the file.
 * @throws InputRejected GEOMETRY_TOO_COMPLEX
 */
function checkMergedCounts(geometry: Polygon | MultiPolygon): void {
  const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
  let rings = 0;
  let positions = 0;
  for (const polygon of polygons) {
    rings += polygon.length;
    for (const ring of polygon) positions += ring.length;
  }
  if (rings <= MAX_RINGS && positions <= MAX_POSITIONS) return;
  throw new InputRejected(
    'GEOMETRY_TOO_COMPLEX',
    `merged together, the polygons make ${rings} rings and ${positions} positions; the bridge sends at most ${MAX_RINGS} rings and ${MAX_POSITIONS} positions. ` +
      'Dissolve and simplify them in a GIS first (e.g. mapshaper -simplify), or split the file into several files',
    { details: { rings, positions, maxRings: MAX_RINGS, maxPositions: MAX_POSITIONS } },
  );
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
        const polygons = polygonsOf(member, index, undefined, ignored, 1);
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
function polygonsOf(geometry: unknown, index: number, name: string | undefined, ignored: ParsedAoi['ignored'], depth = 0): unknown[] {
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
      if (depth >= MAX_GEOMETRY_NESTING) {
        throw new InputRejected(
          'GEOMETRY_TOO_COMPLEX',
          `${where}: GeometryCollections are nested more than ${MAX_GEOMETRY_NESTING} deep; list the polygons in one MultiPolygon or as features instead (RFC 7946 advises against nesting)`,
          { details: { featureIndex: index, maxNesting: MAX_GEOMETRY_NESTING } },
        );
      }
      return geometriesOf(geometry, index).flatMap((member) => polygonsOf(member, index, name, ignored, depth + 1));
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
  const [w, s, e, n] = boxOf([polygon[0]!]);
  return geodesicAreaSqM({ type: 'Polygon', coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function formatKm2(sqM: number): string {
  const km2 = sqM / 1e6;
  return `${km2.toLocaleString('en-US', { maximumFractionDigits: km2 < 10 ? 2 : 1 })} km²`;
}
