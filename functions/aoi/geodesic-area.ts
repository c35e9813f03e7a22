/**
 * Area on the WGS84 ellipsoid (Karney's algorithm, GeographicLib). A spherical
 * formula, such as @turf/area's, is 0.3-1 % off at European latitudes, which
 * shows in credit estimates and in area limits near their edge.
 */
import geodesic from 'geographiclib-geodesic';
import type { MultiPolygon, Polygon, Position } from 'geojson';

const WGS84 = geodesic.Geodesic.WGS84;

/**
 * RFC 7946 edges are straight in longitude/latitude; GeographicLib joins
 * points by geodesics. They agree on short edges; a long one (a box's
 * 10° top edge) is followed in steps of at most this many degrees.
 */
export const AREA_EDGE_STEP_DEG = 1;

/** Most intermediate points added per area computation (a few hundred milliseconds); beyond, steps grow. */
export const AREA_MAX_EXTRA_POINTS = 200_000;

function ringAreaSqM(ring: Position[], step: number): number {
  const polygon = WGS84.Polygon(false);
  // The closing position repeats the first; GeographicLib closes rings itself.
  const open = ring.length > 1 && ring[0]![0] === ring.at(-1)![0] && ring[0]![1] === ring.at(-1)![1] ? ring.slice(0, -1) : ring;
  for (let i = 0; i < open.length; i++) {
    const [lon, lat] = open[i]!;
    const [nextLon, nextLat] = open[(i + 1) % open.length]!;
    polygon.AddPoint(lat!, lon!);
    const steps = Math.ceil(edgeSpan(lon!, lat!, nextLon!, nextLat!) / step);
    for (let k = 1; k < steps; k++) polygon.AddPoint(lat! + ((nextLat! - lat!) * k) / steps, lon! + ((nextLon! - lon!) * k) / steps);
  }
  return Math.abs(polygon.Compute(false, true).area ?? 0);
}

function edgeSpan(lon: number, lat: number, nextLon: number, nextLat: number): number {
  return Math.max(Math.abs(nextLon - lon), Math.abs(nextLat - lat));
}

function polygonAreaSqM(rings: Position[][], step: number): number {
  const [outer, ...holes] = rings;
  if (!outer) return 0;
  return Math.max(0, ringAreaSqM(outer, step) - holes.reduce((sum, hole) => sum + ringAreaSqM(hole, step), 0));
}

/** The step for a geometry: AREA_EDGE_STEP_DEG, or coarser so that at most AREA_MAX_EXTRA_POINTS are added. */
function stepFor(polygons: Position[][][]): number {
  let span = 0;
  for (const rings of polygons) {
    for (const ring of rings) {
      for (let i = 1; i < ring.length; i++) span += edgeSpan(ring[i - 1]![0]!, ring[i - 1]![1]!, ring[i]![0]!, ring[i]![1]!);
    }
  }
  return Math.max(AREA_EDGE_STEP_DEG, span / AREA_MAX_EXTRA_POINTS);
}

/** Geodesic area in square metres of a Polygon or MultiPolygon (holes subtracted). */
export function geodesicAreaSqM(geometry: Polygon | MultiPolygon): number {
  const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
  const step = stepFor(polygons);
  return polygons.reduce((sum, polygon) => sum + polygonAreaSqM(polygon, step), 0);
}
