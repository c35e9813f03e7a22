/**
 * AOI geometry: structural checks, splitting into per-AOI polygons, geodesic
 * areas, bounding boxes and containment. Areas are square metres throughout.
 */
import { geodesicAreaSqM } from './geodesic-area.ts';
import { bbox as turfBbox } from '@turf/bbox';
import { booleanPointInPolygon } from '@turf/boolean-point-in-polygon';
import { kinks } from '@turf/kinks';
import type { MultiPolygon, Polygon, Position } from 'geojson';

export type AoiGeometry = Polygon | MultiPolygon;
export type BBox = [number, number, number, number];

/** A geometry that cannot be read as a Polygon or MultiPolygon at all. */
export class MalformedGeometry extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedGeometry';
  }
}

function checkPosition(position: unknown, where: string): asserts position is Position {
  if (!Array.isArray(position) || position.length < 2) throw new MalformedGeometry(`${where}: a position must be [longitude, latitude]`);
  const [lon, lat] = position as unknown[];
  if (typeof lon !== 'number' || typeof lat !== 'number' || !Number.isFinite(lon) || !Number.isFinite(lat)) {
    throw new MalformedGeometry(`${where}: coordinates must be finite numbers`);
  }
  if (lon < -180 || lon > 180 || lat < -90 || lat > 90) throw new MalformedGeometry(`${where}: coordinates out of longitude/latitude range`);
}

function checkPolygonRings(rings: unknown, where: string): void {
  if (!Array.isArray(rings) || rings.length === 0) throw new MalformedGeometry(`${where}: a polygon needs at least one ring`);
  rings.forEach((ring, r) => {
    if (!Array.isArray(ring) || ring.length < 4) throw new MalformedGeometry(`${where} ring ${r}: a ring needs at least 4 positions`);
    ring.forEach((position, i) => checkPosition(position, `${where} ring ${r} position ${i}`));
    const first = ring[0] as Position;
    const last = ring[ring.length - 1] as Position;
    if (first[0] !== last[0] || first[1] !== last[1]) throw new MalformedGeometry(`${where} ring ${r}: a ring must be closed`);
  });
}

/**
 * Reads a request's geometry. Only a Polygon or MultiPolygon is accepted (the
 * spec's create and search bodies); anything unreadable is MalformedGeometry.
 */
export function parseAoiGeometry(value: unknown): AoiGeometry {
  if (typeof value !== 'object' || value === null) throw new MalformedGeometry('geometry must be a GeoJSON Polygon or MultiPolygon');
  const geometry = value as { type?: unknown; coordinates?: unknown };
  if (geometry.type === 'Polygon') {
    checkPolygonRings(geometry.coordinates, 'Polygon');
    return value as Polygon;
  }
  if (geometry.type === 'MultiPolygon') {
    if (!Array.isArray(geometry.coordinates) || geometry.coordinates.length === 0) throw new MalformedGeometry('MultiPolygon: no polygons');
    geometry.coordinates.forEach((rings, p) => checkPolygonRings(rings, `MultiPolygon polygon ${p}`));
    return value as MultiPolygon;
  }
  throw new MalformedGeometry(`geometry type ${String(geometry.type)} is not supported; send a Polygon or MultiPolygon`);
}

/** One AOI per polygon. */
export function splitPolygons(geometry: AoiGeometry): Polygon[] {
  if (geometry.type === 'Polygon') return [geometry];
  return geometry.coordinates.map((coordinates) => ({ type: 'Polygon', coordinates }));
}

/** Geodesic area in square metres, on the WGS84 ellipsoid. */
export function areaSqM(geometry: AoiGeometry): number {
  return geodesicAreaSqM(geometry);
}

/**
 * True when a ring crosses itself or another ring of its polygon
 * (geometry.Invalid). Each polygon is checked on its own: the parts of a
 * MultiPolygon may touch at a point, and Mapflow makes one AOI per polygon.
 */
export function selfIntersects(geometry: AoiGeometry): boolean {
  return splitPolygons(geometry).some((polygon) => kinks(polygon).features.length > 0);
}

export function bboxOf(geometry: AoiGeometry): BBox {
  return turfBbox(geometry) as BBox;
}

export function bboxPolygon([west, south, east, north]: BBox): Polygon {
  return { type: 'Polygon', coordinates: [[[west, south], [east, south], [east, north], [west, north], [west, south]]] };
}

/** Area of a lat/lon bounding box, square metres (the live service limits it too). */
export function bboxAreaSqM(box: BBox): number {
  return geodesicAreaSqM(bboxPolygon(box));
}

export function bboxesIntersect(a: BBox, b: BBox): boolean {
  return a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];
}

export function contains(geometry: AoiGeometry, point: Position): boolean {
  return booleanPointInPolygon(point, geometry);
}
