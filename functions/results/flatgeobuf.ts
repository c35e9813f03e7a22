/**
 * FlatGeobuf beside result.geojson, written feature by feature: QGIS, GDAL
 * and DuckDB read it without parsing a JSON document of 100k+ features.
 *
 * A FlatGeobuf header names its columns before the first feature, and a
 * GeoJSON result only shows its properties feature by feature, so the result
 * is read twice as a stream (functions/geojson's FeatureScanner, one
 * feature in memory at a time): the first pass collects the column names and
 * types and the geometry types, the second encodes each feature with
 * flatgeobuf's own builders and streams it out. No spatial index (it would
 * need every feature's box first); the feature count is written.
 */
import { PassThrough, type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { magicbytes } from 'flatgeobuf/lib/mjs/constants.js';
import { buildFeature } from 'flatgeobuf/lib/mjs/generic/feature.js';
import { buildHeader } from 'flatgeobuf/lib/mjs/generic/featurecollection.js';
import { parseGeometry } from 'flatgeobuf/lib/mjs/geojson/geometry.js';
import { ColumnType } from 'flatgeobuf/lib/mjs/flat-geobuf/column-type.js';
import { GeometryType } from 'flatgeobuf/lib/mjs/flat-geobuf/geometry-type.js';
import type { ColumnMeta } from 'flatgeobuf/lib/mjs/column-meta.js';
import type { HeaderMeta } from 'flatgeobuf/lib/mjs/header-meta.js';
import { FeatureScanner } from '../geojson/features.ts';

export const FLATGEOBUF_FILE = 'result.fgb';
export const FLATGEOBUF_CONTENT_TYPE = 'application/flatgeobuf';
/** EPSG code of GeoJSON coordinates (RFC 7946: WGS 84). */
const WGS84 = 4326;

const GEOMETRY_TYPES: Record<string, GeometryType> = {
  Point: GeometryType.Point,
  MultiPoint: GeometryType.MultiPoint,
  LineString: GeometryType.LineString,
  MultiLineString: GeometryType.MultiLineString,
  Polygon: GeometryType.Polygon,
  MultiPolygon: GeometryType.MultiPolygon,
};

type Kind = 'number' | 'boolean' | 'string' | 'json';

/** What the first pass learns: columns in first-seen order, geometry types, feature count. */
export interface ResultSchema {
  columns: Map<string, Kind>;
  geometryTypes: Set<GeometryType>;
  features: number;
}

function kindOf(value: unknown): Kind | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return 'string';
  return 'json';
}

/** Features of a GeoJSON stream that have a supported geometry, one at a time. */
async function eachFeature(source: Readable, onFeature: (geometry: { type: string; coordinates: unknown }, properties: Record<string, unknown>) => void | Promise<void>): Promise<void> {
  const decoder = new StringDecoder('utf8');
  let pending: { geometry: { type: string; coordinates: unknown }; properties: Record<string, unknown> }[] = [];
  const scanner = new FeatureScanner({
    onFeature: (feature) => {
      const geometry = feature.geometry as { type?: unknown; coordinates?: unknown } | null;
      if (!geometry || typeof geometry.type !== 'string' || !(geometry.type in GEOMETRY_TYPES) || !Array.isArray(geometry.coordinates)) return;
      const properties = feature.properties && typeof feature.properties === 'object' ? (feature.properties as Record<string, unknown>) : {};
      pending.push({ geometry: geometry as { type: string; coordinates: unknown }, properties });
    },
  });
  for await (const chunk of source) {
    scanner.push(typeof chunk === 'string' ? chunk : decoder.write(chunk as Buffer));
    const batch = pending;
    pending = [];
    for (const f of batch) await onFeature(f.geometry, f.properties);
  }
  scanner.push(decoder.end());
  for (const f of pending) await onFeature(f.geometry, f.properties);
}

/** First pass: the columns and geometry types of a result. */
export async function scanResultSchema(source: Readable): Promise<ResultSchema> {
  // undefined: only nulls seen so far.
  const seen = new Map<string, Kind | undefined>();
  const schema: ResultSchema = { columns: new Map(), geometryTypes: new Set(), features: 0 };
  await eachFeature(source, (geometry, properties) => {
    schema.features += 1;
    schema.geometryTypes.add(GEOMETRY_TYPES[geometry.type]!);
    for (const [name, value] of Object.entries(properties)) {
      const kind = kindOf(value);
      const known = seen.get(name);
      if (!seen.has(name) || known === undefined) seen.set(name, kind);
      // Mixed kinds fall back to JSON text, which holds any of them.
      else if (kind !== undefined && kind !== known) seen.set(name, 'json');
    }
  });
  for (const [name, kind] of seen) schema.columns.set(name, kind ?? 'string');
  return schema;
}

const COLUMN_TYPES: Record<Kind, ColumnType> = {
  number: ColumnType.Double,
  boolean: ColumnType.Bool,
  string: ColumnType.String,
  json: ColumnType.Json,
};

export function headerOf(schema: ResultSchema): HeaderMeta {
  const columns: ColumnMeta[] = [...schema.columns].map(([name, kind]) => ({
    name, type: COLUMN_TYPES[kind], title: null, description: null, width: -1, precision: -1, scale: -1, nullable: true, unique: false, primary_key: false,
  }));
  return {
    geometryType: schema.geometryTypes.size === 1 ? [...schema.geometryTypes][0]! : GeometryType.Unknown,
    columns: columns.length > 0 ? columns : null,
    envelope: null,
    featuresCount: schema.features,
    indexNodeSize: 0,
    crs: null,
    title: null,
    description: null,
    metadata: null,
  };
}

/** A value as its column stores it (null for absent; numbers and booleans as text in a text column). */
function columnValue(value: unknown, kind: Kind): unknown {
  if (value === undefined || value === null) return null;
  if (kind === 'string') return typeof value === 'string' ? value : JSON.stringify(value);
  if (kind === 'number' && typeof value !== 'number') return null;
  if (kind === 'boolean' && typeof value !== 'boolean') return null;
  return value;
}

/**
 * Second pass: the FlatGeobuf bytes of a result as a stream. `open` opens the
 * GeoJSON result again for each pass.
 */
export async function flatGeobufStream(open: () => Promise<Readable>): Promise<{ body: Readable; done: Promise<number> }> {
  const schema = await scanResultSchema(await open());
  const header = headerOf(schema);
  const out = new PassThrough();
  const write = async (bytes: Uint8Array): Promise<void> => {
    if (!out.write(bytes)) await new Promise<void>((resolve) => out.once('drain', resolve));
  };
  const done = (async () => {
    let count = 0;
    try {
      await write(magicbytes);
      await write(buildHeader(header, WGS84));
      const kinds = [...schema.columns];
      await eachFeature(await open(), async (geometry, properties) => {
        const values = Object.fromEntries(kinds.map(([name, kind]) => [name, columnValue(properties[name], kind)]));
        await write(buildFeature(parseGeometry(geometry as never), values as never, header));
        count += 1;
      });
      out.end();
    } catch (error) {
      out.destroy(error as Error);
    }
    return count;
  })();
  return { body: out, done };
}
