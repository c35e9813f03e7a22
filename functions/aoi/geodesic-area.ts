/**
 * Area on the WGS84 ellipsoid (Karney's algorithm, GeographicLib). A spherical
 * formula, such as @turf/area's, is 0.3-1 % off at European latitudes, which
 * shows in credit estimates and in area limits near their edge.
 */
import geodesic from 'geographiclib-geodesic';
import type { MultiPolygon, Polygon, Position } from 'geojson';

const WGS84 = geodesic.Geodesic.WGS84;

function ringAreaSqM(ring: Position[]): number {
  const polygon = WGS84.Polygon(false);
  // The closing position repeats the first; GeographicLib closes rings itself.
  const open = ring.length > 1 && ring[0]![0] === ring.at(-1)![0] && ring[0]![1] === ring.at(-1)![1] ? ring.slice(0, -1) : ring;
  for (const [lon, lat] of open) polygon.AddPoint(lat!, lon!);
  return Math.abs(polygon.Compute(false, true).area ?? 0);
}

function polygonAreaSqM(rings: Position[][]): number {
  const [outer, ...holes] = rings;
  if (!outer) return 0;
  return Math.max(0, ringAreaSqM(outer) - holes.reduce((sum, hole) => sum + ringAreaSqM(hole), 0));
}

/** Geodesic area in square metres of a Polygon or MultiPolygon (holes subtracted). */
export function geodesicAreaSqM(geometry: Polygon | MultiPolygon): number {
  return geometry.type === 'Polygon'
    ? polygonAreaSqM(geometry.coordinates)
    : geometry.coordinates.reduce((sum, polygon) => sum + polygonAreaSqM(polygon), 0);
}
