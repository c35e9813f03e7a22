/**
 * Dissolves polygons into one valid geometry. Neighbourhood and parcel maps
 * share edges; listed side by side in a MultiPolygon they make an invalid
 * geometry (parts of a MultiPolygon may touch only at points), and overlaps
 * would be paid for twice.
 */
import { featureCollection, polygon as polygonFeature } from '@turf/helpers';
import { union } from '@turf/union';
import type { MultiPolygon, Polygon, Position } from 'geojson';

export function dissolvePolygons(polygons: Position[][][]): Polygon | MultiPolygon {
  if (polygons.length === 1) return { type: 'Polygon', coordinates: polygons[0]! };
  const merged = union(featureCollection(polygons.map((rings) => polygonFeature(rings))));
  if (!merged) throw new Error('the union of the AOI polygons is empty');
  return merged.geometry;
}
