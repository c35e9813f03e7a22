/**
 * Checks of one polygon's coordinates, in the order a user would fix them:
 * structure and numbers, range, ring closure and size, then validity by the
 * OGC rules at any size (validity.ts: crossings, touches, holes inside their
 * outer ring, not nested, not repeated, the interior in one piece). Every failure names the feature, the polygon
 * and the ring, so the user can find it in a GIS.
 */
import { boxOf } from './box.ts';
import { FINEST_PIXEL_DEG } from './imagery-extent.ts';
import { checkPolygonValidity, type ValidityProblem } from './validity.ts';
import type { Polygon, Position } from 'geojson';
import { InputRejected } from '../core/errors.ts';
import { printable } from '../storage/describe.ts';

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
  /** sweepBudget: the file's work left for the validity check (validity.ts), shared by its polygons. */
  options: { sweepBudget?: { pairs: number } } = {},
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

  const result = checkPolygonValidity(cleaned, options.sweepBudget ?? { pairs: SELF_CROSSING_SWEEP_PAIRS });
  const problem = result.problem;
  // A flat ring folds back on itself (its edges overlap): said as what it is. Not by its signed area alone: a
  // figure-eight's two lobes cancel out in it.
  cleaned.forEach((ring, r) => {
    const folded = problem !== undefined && (problem.kind === 'overlap' || problem.kind === 'self-touch') && onOneLine(ring);
    if (folded || (problem === undefined && hasNoArea(ring))) invalid(`${where}, ${ringLabel(r)} has no area (all its positions lie on one line)`, r);
  });
  if (problem) rejectInvalid(problem, where, details);
  checkNotSliver(cleaned[0]!, where, details);
  return polygon;
}

/**
 * The rejection for what checkPolygonValidity found, naming the rings and the place.
 * @throws InputRejected SELF_INTERSECTING, INVALID_GEOMETRY, GEOMETRY_TOO_COMPLEX
 */
function rejectInvalid(problem: ValidityProblem, where: string, details: Record<string, unknown>): never {
  const redraw = 'Redraw the outline so its edges do not cross (a figure-eight must be two polygons), e.g. with "Fix geometries" in QGIS';
  switch (problem.kind) {
    case 'crossing':
    case 'overlap': {
      const [a, b] = problem.rings;
      const what =
        a === b
          ? `${ringLabel(a)} ${problem.kind === 'crossing' ? 'crosses itself' : 'runs back over its own edge'}`
          : `${ringLabel(a)} and ${ringLabel(b)} ${problem.kind === 'crossing' ? 'cross' : 'share an edge'}`;
      throw new InputRejected('SELF_INTERSECTING', `${where} intersects itself at ${fmt(problem.at)}: ${what} there. ${redraw}`, {
        details: { ...details, at: problem.at, rings: problem.rings },
      });
    }
    case 'self-touch':
      throw new InputRejected(
        'SELF_INTERSECTING',
        `${where} intersects itself at ${fmt(problem.at)}: ${ringLabel(problem.ring)} passes through it twice (a ring may not touch itself; a pinched part must be a polygon of its own or a hole). ${redraw}`,
        { details: { ...details, at: problem.at, ringIndex: problem.ring } },
      );
    case 'duplicate-hole':
      throw new InputRejected(
        'INVALID_GEOMETRY',
        `${where}, ${ringLabel(problem.ring)} repeats ${ringLabel(problem.of)}: the same hole twice (Mapflow refuses it as geometry.Invalid). Remove one of them`,
        { details: { ...details, ringIndex: problem.ring, duplicateOf: problem.of } },
      );
    case 'disconnected': {
      const [a, b] = problem.rings;
      throw new InputRejected(
        'INVALID_GEOMETRY',
        `${where}: ${ringLabel(a)} and ${ringLabel(b)} touch at ${fmt(problem.at)} and at another point too, which cuts the polygon's interior in two ` +
          '(rings may touch at one point only). Make it two polygons, or move the hole off the outline',
        { details: { ...details, at: problem.at, rings: problem.rings } },
      );
    }
    case 'hole-outside':
      throw new InputRejected(
        'INVALID_GEOMETRY',
        `${where}, ${ringLabel(problem.ring)} is not inside the outer ring (position ${fmt(problem.at)} lies outside it): a hole must lie within its polygon`,
        { details: { ...details, ringIndex: problem.ring, at: problem.at } },
      );
    case 'nested-hole':
      throw new InputRejected(
        'INVALID_GEOMETRY',
        `${where}, ${ringLabel(problem.ring)} lies inside ${ringLabel(problem.inside)} (position ${fmt(problem.at)}): a hole may not lie in another hole. ` +
          'Make the inner one a polygon of its own',
        { details: { ...details, ringIndex: problem.ring, inside: problem.inside, at: problem.at } },
      );
    case 'too-complex':
      throw new InputRejected(
        'GEOMETRY_TOO_COMPLEX',
        `${where} could not be checked for validity within the bridge's limits (${SELF_CROSSING_SWEEP_PAIRS.toLocaleString('en-US')} segment pairs per file): ` +
          'simplify the polygons (e.g. mapshaper -simplify) or split the file into several files',
        { details: { ...details, maxPairs: SELF_CROSSING_SWEEP_PAIRS } },
      );
  }
}

/** Work (segment pairs compared, edges visited) the validity check may spend per file, shared by its polygons. */
export const SELF_CROSSING_SWEEP_PAIRS = 50_000_000;

/**
 * A polygon narrower, in longitude or latitude, than one pixel of the finest
 * zoom any tile source has (22) holds no pixel at any zoom: its imagery cannot
 * exist, yet Mapflow bills its area at the 1 km² minimum (imagery-extent.ts).
 * @throws InputRejected INVALID_GEOMETRY
 */
function checkNotSliver(outer: Position[], where: string, details: Record<string, unknown>): void {
  const [w, s, e, n] = boxOf([outer]);
  // A pixel's height in degrees of latitude shrinks with the cosine of the latitude in Web Mercator.
  const pixelLat = FINEST_PIXEL_DEG * Math.cos((((s + n) / 2) * Math.PI) / 180);
  const wide = e - w;
  const high = n - s;
  if (wide >= FINEST_PIXEL_DEG && high >= pixelLat) return;
  throw new InputRejected(
    'INVALID_GEOMETRY',
    `${where} is ${wide < FINEST_PIXEL_DEG ? `${wide.toExponential(1)}° wide` : `${high.toExponential(1)}° high`}, narrower than one pixel of the finest imagery ` +
      `(zoom 22: ${FINEST_PIXEL_DEG.toExponential(1)}°, about 4 cm): no imagery of it can exist. Draw the area you want processed, or remove this sliver (QGIS: "Remove slivers" / "Eliminate")`,
    { details: { ...details, widthDeg: wide, heightDeg: high, pixelDeg: FINEST_PIXEL_DEG } },
  );
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

/** Every position within a billionth of the ring's extent of the line through its first position and the one farthest from it. */
function onOneLine(ring: Position[]): boolean {
  const [ax, ay] = ring[0] as [number, number];
  let far = ring[0]!;
  let farthest = 0;
  for (const p of ring) {
    const d = Math.hypot(p[0]! - ax, p[1]! - ay);
    if (d > farthest) (farthest = d), (far = p);
  }
  if (farthest === 0) return true;
  const [bx, by] = far as [number, number];
  return ring.every((p) => Math.abs((bx - ax) * (p[1]! - ay) - (by - ay) * (p[0]! - ax)) / farthest <= 1e-9 * farthest);
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
