/**
 * Area on the WGS84 ellipsoid with GeographicLib, vertices joined by
 * geodesics: what a geography area (PostGIS ST_Area on geography, the usual
 * server-side measure) computes. The simulator's own, written apart from the
 * bridge's estimate (which follows RFC 7946's straight lon/lat edges), so the
 * two can disagree as the live service and the bridge can.
 */
import geodesic from 'geographiclib-geodesic';
import type { MultiPolygon, Polygon, Position } from 'geojson';

const WGS84 = geodesic.Geodesic.WGS84;

function ringAreaSqM(ring: Position[]): number {
  const polygon = WGS84.Polygon(false);
  // GeographicLib closes rings itself: drop the repeated closing position.
  const first = ring[0];
  const last = ring.at(-1);
  const open = ring.length > 1 && first && last && first[0] === last[0] && first[1] === last[1] ? ring.slice(0, -1) : ring;
  for (const [lon, lat] of open) polygon.AddPoint(lat!, lon!);
  return Math.abs(polygon.Compute(false, true).area ?? 0);
}

/** Outer ring minus holes, summed over polygons; square metres. */
export function geodesicAreaSqM(geometry: Polygon | MultiPolygon): number {
  const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
  let total = 0;
  for (const [outer, ...holes] of polygons) {
    if (!outer) continue;
    total += Math.max(0, ringAreaSqM(outer) - holes.reduce((sum, hole) => sum + ringAreaSqM(hole), 0));
  }
  return total;
}
