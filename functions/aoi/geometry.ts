/**
 * Checks of one polygon's coordinates, in the order a user would fix them:
 * structure and numbers, range, ring closure and size, self-intersection,
 * holes inside their outer ring. Every failure names the feature, the polygon
 * and the ring, so the user can find it in a GIS.
 */
import { booleanPointInPolygon } from '@turf/boolean-point-in-polygon';
import { kinks } from '@turf/kinks';
import { boxOf } from './box.ts';
import { countCrossings } from './crossings.ts';
import type { Polygon, Position } from 'geojson';
import { InputRejected } from '../core/errors.ts';
import { printable } from '../storage/describe.ts';

/**
 * Above this many positions in one polygon the self-intersection test (which
 * compares every pair of segments: 5,000 positions take about 1.5 s) is
 * skipped to keep the check in seconds; Mapflow still validates the geometry
 * (`geometry.Invalid`). parseAoi also bounds the test's total work per file.
 */
export const KINKS_MAX_POSITIONS = 5_000;

/** Where in the file a polygon is, for messages. */
export interface PolygonPlace {
  featureIndex: number;
  featureName?: string;
  /** Index of the polygon within its feature (MultiPolygon part or GeometryCollection member). */
  polygonIndex: number;
  /** Number of polygons in the feature (the polygon index is only named when > 1). */
  polygonCount: number;
}

export function describePlace(place: PolygonPlace): string {
  const feature = `feature ${place.featureIndex}${place.featureName ? ` ('${printable(place.featureName, 60)}')` : ''}`;
  return place.polygonCount > 1 ? `${feature}, polygon ${place.polygonIndex}` : feature;
}

function ringLabel(ringIndex: number): string {
  return ringIndex === 0 ? 'ring 0 (outer ring)' : `ring ${ringIndex} (hole)`;
}

/**
 * Validates the coordinates of one polygon (the `coordinates` member of a
 * Polygon) and returns a clean copy: 2D positions, consecutive repeated
 * positions removed (they are legal GeoJSON but read as self-intersections).
 * @throws InputRejected INVALID_GEOMETRY, COORDINATES_OUT_OF_RANGE, CROSSES_ANTIMERIDIAN, SELF_INTERSECTING, GEOMETRY_TOO_COMPLEX
 */
export function validatePolygon(
  coordinates: unknown,
  place: PolygonPlace,
  /** checkCrossings false: the sweep instead of kinks (the file's kinks budget is spent); sweepBudget: the file's pairs left for the sweep. */
  options: { checkCrossings?: boolean; sweepBudget?: { pairs: number } } = {},
): Polygon {
  const where = describePlace(place);
  const details = { featureIndex: place.featureIndex, polygonIndex: place.polygonIndex };
  const invalid = (message: string, ringIndex?: number): never => {
    throw new InputRejected('INVALID_GEOMETRY', message, { details: { ...details, ringIndex } });
  };
  if (!Array.isArray(coordinates) || coordinates.length === 0) {
    return invalid(`${where}: a polygon needs "coordinates": [[[lon, lat], ...]] with at least an outer ring`);
  }
  const rings: Position[][] = coordinates.map((ring, r) => {
    if (!Array.isArray(ring)) return invalid(`${where}, ${ringLabel(r)}: a ring must be an array of [lon, lat] positions`, r);
    return ring.map((position, p) => readPosition(position, `${where}, ${ringLabel(r)}, position ${p}`, { ...details, ringIndex: r, positionIndex: p }));
  });

  const cleaned = rings.map((ring, r) => {
    const first = ring[0];
    const last = ring[ring.length - 1];
    if (ring.length > 0 && (first![0] !== last![0] || first![1] !== last![1])) {
      invalid(
        `${where}, ${ringLabel(r)} is not closed: its last position ${fmt(last!)} must repeat its first ${fmt(first!)}. Close the ring (most GIS tools do so when you save the polygon again)`,
        r,
      );
    }
    const deduped = ring.filter((pos, i) => i === 0 || pos[0] !== ring[i - 1]![0] || pos[1] !== ring[i - 1]![1]);
    if (deduped.length < 4) {
      invalid(
        `${where}, ${ringLabel(r)} has ${deduped.length} distinct positions (counting the closing one); a ring needs at least 4 (a triangle plus the closing position)`,
        r,
      );
    }
    return deduped;
  });
  cleaned.forEach((ring, r) => checkAntimeridian(ring, `${where}, ${ringLabel(r)}`, { ...details, ringIndex: r }));
  const polygon: Polygon = { type: 'Polygon', coordinates: cleaned };

  const positions = cleaned.reduce((n, ring) => n + ring.length, 0);
  if (!((options.checkCrossings ?? true) && positions <= KINKS_MAX_POSITIONS)) {
    // Too large for kinks (every pair of segments): a bounded sweep instead. A figure-eight left unchecked had
    // its lobes cancel in the area, and the budget guard priced 43 km² as 9 credits.
    checkCrossingsBySweep(cleaned, where, details, options.sweepBudget);
  } else {
    const crossings = kinks(polygon).features;
    if (crossings.length > 0) {
      const at = crossings[0]!.geometry.coordinates;
      throw new InputRejected(
        'SELF_INTERSECTING',
        `${where} intersects itself at ${fmt(at)}${crossings.length > 1 ? ` and ${crossings.length - 1} more place(s)` : ''}. ` +
          'Redraw the outline so its edges do not cross (a figure-eight must be two polygons), e.g. with "Fix geometries" in QGIS',
        { details: { ...details, at, count: crossings.length } },
      );
    }
  }

  // After the crossing test: a figure-eight's two lobes cancel out in the signed area.
  cleaned.forEach((ring, r) => {
    if (hasNoArea(ring)) invalid(`${where}, ${ringLabel(r)} has no area (all its positions lie on one line)`, r);
  });

  const outer: Polygon = { type: 'Polygon', coordinates: [cleaned[0]!] };
  // Every hole position against the outer ring costs holes x outer positions: a large polygon gets the box test only.
  const [w, s, e, n] = boxOf([cleaned[0]!]);
  const inside =
    positions <= KINKS_MAX_POSITIONS
      ? (pos: Position) => booleanPointInPolygon(pos, outer)
      : (pos: Position) => pos[0]! >= w && pos[0]! <= e && pos[1]! >= s && pos[1]! <= n;
  cleaned.slice(1).forEach((hole, h) => {
    const outside = hole.find((pos) => !inside(pos));
    if (outside) {
      invalid(`${where}, ${ringLabel(h + 1)} is not inside the outer ring (position ${fmt(outside)} lies outside it): a hole must lie within its polygon`, h + 1);
    }
  });
  return polygon;
}

/** Segment pairs the sweep may compare per file, shared by the polygons kinks does not test. */
export const SELF_CROSSING_SWEEP_PAIRS = 50_000_000;

/**
 * Self-intersections of a polygon too large for kinks, by the bounded sweep
 * of crossings.ts: any edge crossing, or an edge ending inside another, is
 * one. When the file's budget of pairs is spent, the polygon is refused
 * rather than passed unchecked.
 * @throws InputRejected SELF_INTERSECTING, GEOMETRY_TOO_COMPLEX
 */
function checkCrossingsBySweep(rings: Position[][], where: string, details: Record<string, unknown>, budget: { pairs: number } = { pairs: SELF_CROSSING_SWEEP_PAIRS }): void {
  // A ring that passes through one of its own vertices again crosses (or touches) itself there: the sweep skips shared vertices.
  let repeated: Position | undefined;
  for (const ring of rings) {
    const seen = new Set<string>();
    for (let i = 0; i < ring.length - 1 && !repeated; i++) {
      const key = `${ring[i]![0]},${ring[i]![1]}`;
      if (seen.has(key)) repeated = ring[i];
      seen.add(key);
    }
  }
  const count = repeated ? undefined : countCrossings([rings], 0, Math.max(0, budget.pairs));
  if (count) budget.pairs -= count.pairs;
  if (repeated || count!.crossings > 0) {
    const at = (repeated as [number, number] | undefined) ?? count!.at!;
    throw new InputRejected(
      'SELF_INTERSECTING',
      `${where} intersects itself at ${fmt(at)}. Redraw the outline so its edges do not cross (a figure-eight must be two polygons), e.g. with "Fix geometries" in QGIS`,
      { details: { ...details, at } },
    );
  }
  if (count!.stopped) {
    throw new InputRejected(
      'GEOMETRY_TOO_COMPLEX',
      `${where} could not be checked for self-intersections within the bridge's limits (${SELF_CROSSING_SWEEP_PAIRS.toLocaleString('en-US')} segment pairs per file): ` +
        'simplify the polygons (e.g. mapshaper -simplify) or split the file into several files',
      { details: { ...details, maxPairs: SELF_CROSSING_SWEEP_PAIRS } },
    );
  }
}

/**
 * RFC 7946 (3.1.9): a geometry that crosses the antimeridian is cut in two
 * there. A ring with an edge spanning more than 180° of longitude means the
 * short way across ±180°, which Mapflow (and every planar tool) reads as a
 * band around the world the long way: its area and box would be wrong by
 * orders of magnitude. Refused, with how to cut it.
 * @throws InputRejected CROSSES_ANTIMERIDIAN
 */
function checkAntimeridian(ring: Position[], where: string, details: Record<string, unknown>): void {
  for (let i = 1; i < ring.length; i++) {
    const a = ring[i - 1]!;
    const b = ring[i]!;
    if (Math.abs(b[0]! - a[0]!) > 180) {
      throw new InputRejected(
        'CROSSES_ANTIMERIDIAN',
        `${where} crosses the antimeridian (180° longitude) between ${fmt(a)} and ${fmt(b)}. GeoJSON (RFC 7946) cuts such a polygon in two at ±180°: ` +
          'make it a MultiPolygon with one part east and one part west of 180° (e.g. ogr2ogr -wrapdateline, or two files), so its area and box are what you meant',
        { details: { ...details, from: a, to: b } },
      );
    }
  }
}

/** A position as [lon, lat] numbers within WGS84 range; a third value (height) is dropped. */
function readPosition(position: unknown, where: string, details: Record<string, unknown>): Position {
  if (!Array.isArray(position) || position.length < 2) {
    throw new InputRejected('INVALID_GEOMETRY', `${where}: a position must be [longitude, latitude]`, { details });
  }
  const [lon, lat] = position as unknown[];
  if (typeof lon !== 'number' || typeof lat !== 'number' || !Number.isFinite(lon) || !Number.isFinite(lat)) {
    throw new InputRejected(
      'INVALID_GEOMETRY',
      `${where}: coordinates must be plain numbers, found ${describePosition(position)}. ` +
        'Write each position as [longitude, latitude] in degrees (numbers beyond ±1.8e308, such as 1e400, are infinite)',
      { details },
    );
  }
  if (lon < -180 || lon > 180 || lat < -90 || lat > 90) {
    throw new InputRejected('COORDINATES_OUT_OF_RANGE', `${where}: ${fmt([lon, lat])} is outside longitude -180..180 / latitude -90..90. ${rangeHint(lon, lat)}`, {
      details,
    });
  }
  return [lon, lat];
}

function rangeHint(lon: number, lat: number): string {
  if (Math.abs(lon) > 1000 || Math.abs(lat) > 1000) {
    return 'These look like projected coordinates (metres); GeoJSON must be in WGS84 longitude/latitude (EPSG:4326): export it again in that CRS';
  }
  if (Math.abs(lat) > 90 && Math.abs(lon) <= 90) return 'Longitude and latitude look swapped: GeoJSON positions are [longitude, latitude]';
  return 'GeoJSON positions must be [longitude, latitude] in WGS84 (EPSG:4326)';
}

/** All positions on one line: the area is nothing against the ring's box (rounding keeps it from being exactly 0). */
function hasNoArea(ring: Position[]): boolean {
  const [minX, minY, maxX, maxY] = boxOf([ring]);
  const box = (maxX - minX) * (maxY - minY);
  return Math.abs(planarArea(ring)) <= 1e-10 * box;
}

/** Shoelace area in degrees², only to detect rings without any area. */
function planarArea(ring: Position[]): number {
  let sum = 0;
  for (let i = 0; i < ring.length - 1; i++) sum += ring[i]![0]! * ring[i + 1]![1]! - ring[i + 1]![0]! * ring[i]![1]!;
  return sum / 2;
}

function fmt(position: Position): string {
  return `[${position.map((v) => +v.toFixed(7)).join(', ')}]`;
}

/** A position as the user wrote it, for messages: infinite numbers as numbers (JSON.stringify writes them as null), nesting not followed. */
function describePosition(position: unknown): string {
  if (!Array.isArray(position)) return typeof position === 'string' ? JSON.stringify(position.slice(0, 40)) : String(position).slice(0, 40);
  const parts = position.slice(0, 3).map((v: unknown) => {
    if (typeof v === 'number') return Number.isFinite(v) ? String(v) : v > 0 ? 'an infinite number (beyond 1.8e308)' : v < 0 ? 'a negative infinite number' : 'NaN';
    if (Array.isArray(v)) return 'a nested array';
    return typeof v === 'string' ? JSON.stringify(v.slice(0, 20)) : String(v);
  });
  return `[${parts.join(', ')}${position.length > 3 ? ', ...' : ''}]`;
}
