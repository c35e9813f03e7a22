/**
 * A small reader of WKT POLYGON / MULTIPOLYGON text (Mapflow's image
 * footprints) into GeoJSON. Other geometry types are not expected there and
 * yield undefined, so the caller falls back to the inspected footprint.
 */
import type { GeoJsonMultiPolygon, GeoJsonPolygon } from './workflow.ts';

export function parseWktPolygon(wkt: string | undefined | null): GeoJsonPolygon | GeoJsonMultiPolygon | undefined {
  if (!wkt) return undefined;
  const match = /^\s*(?:SRID=\d+;\s*)?(MULTIPOLYGON|POLYGON)\s*(?:Z|M|ZM)?\s*(\(.*\))\s*$/is.exec(wkt);
  if (!match) return undefined;
  const type = match[1]!.toUpperCase();
  let nested: unknown;
  try {
    // "((1 2, 3 4), (...))" -> "[[[1,2],[3,4]],[...]]" and parse as JSON.
    const json = match[2]!
      .replace(/\(/g, '[')
      .replace(/\)/g, ']')
      .replace(/(-?[\d.eE+-]+)\s+(-?[\d.eE+-]+)(?:\s+-?[\d.eE+-]+)*/g, '[$1,$2]');
    nested = JSON.parse(json);
  } catch {
    return undefined;
  }
  const depth = type === 'POLYGON' ? 3 : 4;
  if (!hasDepth(nested, depth)) return undefined;
  return type === 'POLYGON'
    ? { type: 'Polygon', coordinates: nested as number[][][] }
    : { type: 'MultiPolygon', coordinates: nested as number[][][][] };
}

function hasDepth(value: unknown, depth: number): boolean {
  if (depth === 0) return typeof value === 'number' && Number.isFinite(value);
  if (!Array.isArray(value) || value.length === 0) return false;
  if (depth === 1) return value.length >= 2 && value.every((v) => hasDepth(v, 0));
  return value.every((v) => hasDepth(v, depth - 1));
}

/** True when every position is a longitude/latitude pair. */
export function isLonLat(geometry: GeoJsonPolygon | GeoJsonMultiPolygon): boolean {
  const rings = geometry.type === 'Polygon' ? geometry.coordinates : geometry.coordinates.flat();
  return rings.every((ring) => ring.every(([x, y]) => Math.abs(x!) <= 180 && Math.abs(y!) <= 90));
}
