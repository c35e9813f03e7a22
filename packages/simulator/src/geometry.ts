/**
 * AOI geometry: structural checks, splitting into per-AOI polygons, geodesic
 * areas, bounding boxes and containment. Areas are square metres throughout.
 */
import { geodesicAreaSqM } from './geodesic-area.ts';
import { bbox as turfBbox } from '@turf/bbox';
import { booleanPointInPolygon } from '@turf/boolean-point-in-polygon';
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
 * True when a polygon is not valid by OGC rules (geometry.Invalid): see
 * validityOf. Each polygon is checked on its own: the parts of a
 * MultiPolygon may touch at a point, and Mapflow makes one AOI per polygon.
 */
export function selfIntersects(geometry: AoiGeometry): boolean {
  return !validityOf(geometry).valid;
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

/**
 * A point-in-geometry test for many points against one geometry: its edges
 * sorted once into horizontal bands (about the square root of the edge
 * count), so that each test crosses only the edges of its band (even-odd
 * rule over every ring; holes and the parts of a MultiPolygon included).
 */
export function containment(geometry: AoiGeometry): (point: Position) => boolean {
  const edges: number[] = [];
  for (const polygon of splitPolygons(geometry)) {
    for (const ring of polygon.coordinates) {
      for (let i = 0; i + 1 < ring.length; i++) {
        const [x1, y1] = ring[i] as [number, number];
        const [x2, y2] = ring[i + 1] as [number, number];
        if (y1 !== y2) edges.push(x1, y1, x2, y2);
      }
    }
  }
  const count = edges.length / 4;
  const [, south, , north] = bboxOf(geometry);
  const bandCount = Math.max(1, Math.ceil(Math.sqrt(count)));
  const height = (north - south) / bandCount || 1;
  const bandOf = (y: number) => Math.min(bandCount - 1, Math.max(0, Math.floor((y - south) / height)));
  const bands: number[][] = Array.from({ length: bandCount }, () => []);
  for (let e = 0; e < count; e++) {
    const y1 = edges[4 * e + 1]!;
    const y2 = edges[4 * e + 3]!;
    for (let b = bandOf(Math.min(y1, y2)); b <= bandOf(Math.max(y1, y2)); b++) bands[b]!.push(e);
  }
  return ([x, y]: Position) => {
    if (y! < south || y! > north) return false;
    let inside = false;
    for (const e of bands[bandOf(y!)]!) {
      const x1 = edges[4 * e]!;
      const y1 = edges[4 * e + 1]!;
      const x2 = edges[4 * e + 2]!;
      const y2 = edges[4 * e + 3]!;
      if (y1 > y! !== y2 > y! && x! < ((x2 - x1) * (y! - y1)) / (y2 - y1) + x1) inside = !inside;
    }
    return inside;
  };
}

/** Positions of every ring of every polygon. */
export function positionCount(geometry: AoiGeometry): number {
  return splitPolygons(geometry).reduce((sum, polygon) => sum + polygon.coordinates.reduce((n, ring) => n + ring.length, 0), 0);
}

/** A segment of a ring, oriented left to right (by x, then y). */
interface Segment {
  ax: number;
  ay: number;
  bx: number;
  by: number;
  ring: number;
  /** Position of the segment in its ring, and the ring's segment count (for adjacency). */
  index: number;
  ringSize: number;
}

/** What validityOf found, with the segment pairs it compared. */
export interface Validity {
  valid: boolean;
  reason?: string;
  comparisons: number;
}

/**
 * OGC validity of the rings of a Polygon or MultiPolygon, each polygon on its
 * own (Mapflow makes one AOI per polygon; parts may touch): no ring crosses or
 * touches itself, no two rings cross or share an edge (duplicate holes share
 * all of theirs: the live service answers geometry.Invalid), and two rings
 * touch at most at one point (a hole touching its shell at a single point is
 * valid in OGC terms, two points would cut the interior in two).
 *
 * A Shamos-Hoey sweep: segments enter and leave an ordered list at their
 * endpoints, and only neighbours in that list are compared, so the work is
 * O(n log n) comparisons (the count is returned: a 99k-vertex circle is about
 * 6 comparisons per segment, where the pairwise check made 5 billion).
 */
export function validityOf(geometry: AoiGeometry): Validity {
  let comparisons = 0;
  for (const polygon of splitPolygons(geometry)) {
    const verdict = polygonValidity(polygon.coordinates);
    comparisons += verdict.comparisons;
    if (!verdict.valid) return { ...verdict, comparisons };
  }
  return { valid: true, comparisons };
}

function polygonValidity(rings: Position[][]): Validity {
  const segments: Segment[] = [];
  rings.forEach((ring, r) => {
    // Repeated consecutive positions are valid and make no segment.
    const points = ring.filter((p, i) => i === 0 || p[0] !== ring[i - 1]![0] || p[1] !== ring[i - 1]![1]);
    const size = points.length - 1;
    for (let i = 0; i < size; i++) {
      const [x1, y1] = points[i] as [number, number];
      const [x2, y2] = points[i + 1] as [number, number];
      const forward = x1 < x2 || (x1 === x2 && y1 < y2);
      segments.push(forward ? { ax: x1, ay: y1, bx: x2, by: y2, ring: r, index: i, ringSize: size } : { ax: x2, ay: y2, bx: x1, by: y1, ring: r, index: i, ringSize: size });
    }
  });
  // Events: every segment's left end (enter) and right end (leave), by x then y, entries first at one point.
  const events = new Uint32Array(segments.length * 2);
  for (let i = 0; i < segments.length; i++) {
    events[2 * i] = 2 * i;
    events[2 * i + 1] = 2 * i + 1;
  }
  const pointOf = (event: number): [number, number] => {
    const s = segments[event >> 1]!;
    return event & 1 ? [s.bx, s.by] : [s.ax, s.ay];
  };
  events.sort((e, f) => {
    const [ex, ey] = pointOf(e);
    const [fx, fy] = pointOf(f);
    return ex - fx || ey - fy || (e & 1) - (f & 1);
  });
  const active: Segment[] = [];
  const touches = new Map<string, string>();
  let comparisons = 0;
  let sweepX = 0;
  const yAt = (s: Segment, x: number) => (s.ax === s.bx ? s.ay : s.ay + ((s.by - s.ay) * (x - s.ax)) / (s.bx - s.ax));
  const slope = (s: Segment) => (s.ax === s.bx ? Number.POSITIVE_INFINITY : (s.by - s.ay) / (s.bx - s.ax));
  const order = (a: Segment, b: Segment) => yAt(a, sweepX) - yAt(b, sweepX) || slope(a) - slope(b);
  const position = (s: Segment) => {
    let lo = 0;
    let hi = active.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      comparisons++;
      if (order(active[mid]!, s) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const check = (a: Segment | undefined, b: Segment | undefined): string | undefined => {
    if (!a || !b) return undefined;
    comparisons++;
    return conflict(a, b, touches);
  };
  for (const event of events) {
    const s = segments[event >> 1]!;
    if ((event & 1) === 0) {
      sweepX = s.ax;
      const at = position(s);
      active.splice(at, 0, s);
      const reason = check(active[at - 1], s) ?? check(s, active[at + 1]);
      if (reason) return { valid: false, reason, comparisons };
    } else {
      sweepX = s.bx;
      let at = active.indexOf(s, Math.max(0, position(s) - 2));
      if (at < 0) at = active.indexOf(s);
      active.splice(at, 1);
      const reason = check(active[at - 1], active[at]);
      if (reason) return { valid: false, reason, comparisons };
    }
  }
  return { valid: true, comparisons };
}

/** Why two segments may not meet as they do, or undefined when they may. */
function conflict(a: Segment, b: Segment, touches: Map<string, string>): string | undefined {
  const o1 = orient(a.ax, a.ay, a.bx, a.by, b.ax, b.ay);
  const o2 = orient(a.ax, a.ay, a.bx, a.by, b.bx, b.by);
  const o3 = orient(b.ax, b.ay, b.bx, b.by, a.ax, a.ay);
  const o4 = orient(b.ax, b.ay, b.bx, b.by, a.bx, a.by);
  if (o1 === 0 && o2 === 0) {
    // Collinear: they may share one end, never a stretch.
    const vertical = a.ax === a.bx;
    const [a0, a1] = vertical ? [Math.min(a.ay, a.by), Math.max(a.ay, a.by)] : [a.ax, a.bx];
    const [b0, b1] = vertical ? [Math.min(b.ay, b.by), Math.max(b.ay, b.by)] : [b.ax, b.bx];
    const overlap = Math.min(a1, b1) - Math.max(a0, b0);
    if (overlap > 0) return a.ring === b.ring ? 'a ring runs back over itself' : 'two rings share an edge (a duplicate hole, or a hole on its shell)';
    if (overlap < 0) return undefined;
    return touch(a, b, meeting(a, b), touches);
  }
  if (o1 * o2 > 0 || o3 * o4 > 0) return undefined;
  if (o1 !== 0 && o2 !== 0 && o3 !== 0 && o4 !== 0) return a.ring === b.ring ? 'a ring crosses itself' : 'two rings cross';
  // They meet at an end of one of them.
  const point = o1 === 0 ? [b.ax, b.ay] : o2 === 0 ? [b.bx, b.by] : o3 === 0 ? [a.ax, a.ay] : [a.bx, a.by];
  return touch(a, b, point as [number, number], touches);
}

function meeting(a: Segment, b: Segment): [number, number] {
  if ((a.ax === b.ax && a.ay === b.ay) || (a.ax === b.bx && a.ay === b.by)) return [a.ax, a.ay];
  return [a.bx, a.by];
}

/** Two segments meeting at one point: consecutive edges of a ring at their shared vertex; rings of a polygon at one point each. */
function touch(a: Segment, b: Segment, point: [number, number], touches: Map<string, string>): string | undefined {
  if (a.ring === b.ring) {
    const next = (i: number) => (i + 1) % a.ringSize;
    const consecutive = next(a.index) === b.index || next(b.index) === a.index;
    return consecutive ? undefined : 'a ring touches itself';
  }
  const pair = a.ring < b.ring ? `${a.ring}:${b.ring}` : `${b.ring}:${a.ring}`;
  const where = `${point[0]},${point[1]}`;
  const seen = touches.get(pair);
  if (seen === undefined) {
    touches.set(pair, where);
    return undefined;
  }
  return seen === where ? undefined : 'two rings touch at more than one point (the interior is cut in two)';
}

/** Sign of the turn from (ax, ay)->(bx, by) to (cx, cy): 1 left, -1 right, 0 collinear. */
function orient(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  const v = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
  return v > 0 ? 1 : v < 0 ? -1 : 0;
}
