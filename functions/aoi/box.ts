/**
 * The longitude/latitude box around rings of positions: the one bbox loop of
 * the AOI room (@turf/bbox's), for the validation, the dissolve and the area
 * checks alike.
 */
import { bbox } from '@turf/bbox';
import type { Position } from 'geojson';

/** [west, south, east, north] in degrees. */
export type Box = [west: number, south: number, east: number, north: number];

/** The box around every position of `rings` ([Infinity, Infinity, -Infinity, -Infinity] when there is none). */
export function boxOf(rings: readonly Position[][]): Box {
  return bbox({ type: 'Polygon', coordinates: rings as Position[][] }) as Box;
}
