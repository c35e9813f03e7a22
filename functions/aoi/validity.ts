/**
 * Polygon validity by the OGC Simple Features rules (as GEOS/shapely's
 * is_valid reads them), at any size, holes included. Mapflow refuses an
 * invalid AOI as `geometry.Invalid`, "Invalid GeoJSON geometry"
 * (mapflow-docs-en source/api/api_reference.rst line 1387), without saying
 * more: the bridge refuses only what the OGC rules refuse.
 *
 * - no edge crosses another, and no two edges overlap along a length
 *   (a duplicated hole overlaps its twin along every edge);
 * - a ring does not touch itself (a ring is simple);
 * - rings may touch each other, at single points only, and the touches may
 *   not cut the interior in two (a hole touching the shell at two points, or
 *   a chain of holes from shell to shell, does): the graph of rings and touch
 *   points has no cycle;
 * - every hole lies inside the shell, and no hole inside another.
 *
 * Why our own sweep and not JSTS's IsValidOp: JSTS is about 1 MB of source and
 * its noder compares monotone chains whose boxes overlap, so on hostile shapes
 * its work is quadratic as well; it would add to the Plan Processing bundle
 * without bounding the work. This sweep costs a sort (n log n), then work in
 * proportion to the latitude buckets each edge spans and the pairs of edges
 * whose boxes overlap: a 99,999-vertex circle or a 20,000-tooth comb 4 per
 * edge. Only edges whose boxes overlap without meeting (long parallel
 * diagonals) cost more, and there the work is counted against the file's
 * budget (shared with its other polygons): past it the polygon is refused
 * GEOMETRY_TOO_COMPLEX, never passed unchecked. (A Shamos-Hoey sweep with an
 * ordered status would be n log n on those too; its degenerate cases, the
 * touches OGC allows, are what this simpler sweep gets right, checked against
 * every pair in test/unit/functions/aoi/validity-brute-force.test.ts.)
 */
import type { Position } from 'geojson';

/** Work left for the file, in segment pairs and edge visits. */
export interface ValidityBudget {
  pairs: number;
}

export type ValidityProblem =
  | { kind: 'crossing'; at: [number, number]; rings: [number, number] }
  | { kind: 'overlap'; at: [number, number]; rings: [number, number] }
  | { kind: 'self-touch'; at: [number, number]; ring: number }
  | { kind: 'duplicate-hole'; ring: number; of: number }
  | { kind: 'disconnected'; at: [number, number]; rings: [number, number] }
  | { kind: 'hole-outside'; ring: number; at: [number, number] }
  | { kind: 'nested-hole'; ring: number; inside: number; at: [number, number] }
  | { kind: 'too-complex'; work: number };

export interface ValidityResult {
  problem?: ValidityProblem;
  /** Work spent (segment pairs compared, edges visited): what the budget was charged. */
  work: number;
}

/**
 * Checks closed rings (first position repeated last, no consecutive repeats,
 * at least 4 positions: validatePolygon's cleaning) of one polygon. Charges
 * `budget` for the work done.
 */
export function checkPolygonValidity(rings: Position[][], budget: ValidityBudget): ValidityResult {
  const start = budget.pairs;
  const spent = () => start - budget.pairs;
  const tooComplex = (): ValidityResult => ({ problem: { kind: 'too-complex', work: spent() }, work: spent() });

  const duplicate = findDuplicateHole(rings);
  if (duplicate) return { problem: duplicate, work: 0 };

  // Edges: ring, index in ring, ends west first.
  let n = 0;
  for (const ring of rings) n += ring.length - 1;
  const ringOf = new Uint32Array(n);
  const indexOf = new Uint32Array(n);
  const lengthOf = new Uint32Array(rings.length);
  const seg = new Float64Array(n * 4);
  let k = 0;
  rings.forEach((ring, r) => {
    lengthOf[r] = ring.length - 1;
    for (let i = 0; i + 1 < ring.length; i++, k++) {
      const [ax, ay] = ring[i] as [number, number];
      const [bx, by] = ring[i + 1] as [number, number];
      ringOf[k] = r;
      indexOf[k] = i;
      if (ax < bx || (ax === bx && ay <= by)) seg.set([ax, ay, bx, by], k * 4);
      else seg.set([bx, by, ax, ay], k * 4);
    }
  });

  // The sweep along longitude: each segment against the active ones (not yet passed) whose latitude ranges
  // overlap, found through latitude buckets (as many as edges), so edges far apart in latitude are never compared.
  const order = new Uint32Array(n).map((_, i) => i).sort((a, b) => seg[a * 4]! - seg[b * 4]!);
  let south = Infinity;
  let north = -Infinity;
  for (let i = 0; i < n; i++) {
    south = Math.min(south, seg[i * 4 + 1]!, seg[i * 4 + 3]!);
    north = Math.max(north, seg[i * 4 + 1]!, seg[i * 4 + 3]!);
  }
  const bucketCount = Math.max(1, n);
  const bucketHeight = (north - south) / bucketCount || 1;
  const bucketOf = (y: number) => Math.min(bucketCount - 1, Math.max(0, Math.floor((y - south) / bucketHeight)));
  const buckets: number[][] = Array.from({ length: bucketCount }, () => []);
  /** The last segment each one was compared with, so one met in several buckets is compared once. */
  const seenBy = new Int32Array(n).fill(-1);
  /** Touch points between rings: "x,y" -> its node number in the ring graph. */
  const touchNodes = new Map<string, number>();
  const incidences = new Set<string>();
  const graph = new UnionFind(rings.length);
  const at = (p: Float64Array | number[]): [number, number] => [p[0]!, p[1]!];
  for (let o = 0; o < n; o++) {
    const s = order[o]!;
    const sx1 = seg[s * 4]!;
    const sLow = Math.min(seg[s * 4 + 1]!, seg[s * 4 + 3]!);
    const sHigh = Math.max(seg[s * 4 + 1]!, seg[s * 4 + 3]!);
    const lo = bucketOf(sLow);
    const hi = bucketOf(sHigh);
    budget.pairs -= hi - lo + 1;
    if (budget.pairs < 0) return tooComplex();
    for (let b = lo; b <= hi; b++) {
      const active = buckets[b]!;
      let kept = 0;
      for (let a = 0; a < active.length; a++) {
        const t = active[a]!;
        if (seg[t * 4 + 2]! < sx1) continue; // passed: dropped
        active[kept++] = t;
        if (seenBy[t] === s) continue;
        seenBy[t] = s;
        if (--budget.pairs < 0) return tooComplex();
        if (Math.max(seg[t * 4 + 1]!, seg[t * 4 + 3]!) < sLow || Math.min(seg[t * 4 + 1]!, seg[t * 4 + 3]!) > sHigh) continue;
        const meet = classify(seg, t, s);
        if (meet.kind === 'none') continue;
        const rt = ringOf[t]!;
        const rs = ringOf[s]!;
        if (rt === rs) {
          const len = lengthOf[rt]!;
          const d = Math.abs(indexOf[t]! - indexOf[s]!);
          const adjacent = d === 1 || d === len - 1;
          if (adjacent && meet.kind === 'touch') continue; // the vertex they share
          if (meet.kind === 'touch') return { problem: { kind: 'self-touch', at: at(meet.at), ring: rt }, work: spent() };
        }
        if (meet.kind === 'proper') return { problem: { kind: 'crossing', at: at(meet.at), rings: [rt, rs] }, work: spent() };
        if (meet.kind === 'overlap') return { problem: { kind: 'overlap', at: at(meet.at), rings: [rt, rs] }, work: spent() };
        // Two rings touch at a point: an edge of the graph for each ring, once per point.
        const key = `${meet.at[0]},${meet.at[1]}`;
        let node = touchNodes.get(key);
        if (node === undefined) touchNodes.set(key, (node = graph.add()));
        for (const r of [rt, rs]) {
          const incidence = `${r}|${node}`;
          if (incidences.has(incidence)) continue;
          incidences.add(incidence);
          if (!graph.union(r, node)) {
            return { problem: { kind: 'disconnected', at: at(meet.at), rings: [Math.min(rt, rs), Math.max(rt, rs)] }, work: spent() };
          }
        }
      }
      active.length = kept;
      active.push(s);
    }
  }

  if (rings.length === 1) return { work: spent() };
  // No edges cross or overlap: each hole is wholly inside or outside every other ring, so one point of it says which.
  const index = RingEdgeIndex.build(rings, budget);
  if (!index) return tooComplex();
  for (let h = 1; h < rings.length; h++) {
    const p = pointOf(rings[h]!, touchNodes);
    const inside = index.ringsAround(p, h, budget);
    if (!inside) return tooComplex();
    if (!inside.has(0)) return { problem: { kind: 'hole-outside', ring: h, at: p }, work: spent() };
    inside.delete(0);
    if (inside.size > 0) return { problem: { kind: 'nested-hole', ring: h, inside: [...inside][0]!, at: p }, work: spent() };
  }
  return { work: spent() };
}

/** Two holes with the same positions (from any start, either direction): the same hole twice. Sorted keys, n log n. */
function findDuplicateHole(rings: Position[][]): ValidityProblem | undefined {
  const seen = new Map<string, number>();
  for (let h = 1; h < rings.length; h++) {
    const key = rings[h]!.slice(0, -1).map((p) => `${p[0]},${p[1]}`).sort().join(';');
    const earlier = seen.get(key);
    if (earlier !== undefined) return { kind: 'duplicate-hole', ring: h, of: earlier };
    seen.set(key, h);
  }
  return undefined;
}

/** A position of the ring that touches no other ring (a vertex, else an edge's midpoint). */
function pointOf(ring: Position[], touches: Map<string, number>): [number, number] {
  for (const p of ring) if (!touches.has(`${p[0]},${p[1]}`)) return [p[0]!, p[1]!];
  for (let i = 0; i + 1 < ring.length; i++) {
    const m: [number, number] = [(ring[i]![0]! + ring[i + 1]![0]!) / 2, (ring[i]![1]! + ring[i + 1]![1]!) / 2];
    if (!touches.has(`${m[0]},${m[1]}`)) return m;
  }
  return [ring[0]![0]!, ring[0]![1]!];
}

type Meeting = { kind: 'none' } | { kind: 'proper' | 'touch' | 'overlap'; at: number[] };

/** How segments t and s (west ends first in `seg`) meet: not at all, crossing inside both, at one point that ends one of them, or along a length. */
function classify(seg: Float64Array, t: number, s: number): Meeting {
  const px = seg[t * 4]!, py = seg[t * 4 + 1]!, qx = seg[t * 4 + 2]!, qy = seg[t * 4 + 3]!;
  const rx = seg[s * 4]!, ry = seg[s * 4 + 1]!, sx = seg[s * 4 + 2]!, sy = seg[s * 4 + 3]!;
  const o1 = orient(px, py, qx, qy, rx, ry);
  const o2 = orient(px, py, qx, qy, sx, sy);
  const o3 = orient(rx, ry, sx, sy, px, py);
  const o4 = orient(rx, ry, sx, sy, qx, qy);
  if (o1 === 0 && o2 === 0 && o3 === 0 && o4 === 0) {
    // Collinear: compare along the longer axis (ends are west first, so x order; vertical: y).
    const vertical = px === qx && rx === sx;
    const a0 = vertical ? Math.min(py, qy) : px, a1 = vertical ? Math.max(py, qy) : qx;
    const b0 = vertical ? Math.min(ry, sy) : rx, b1 = vertical ? Math.max(ry, sy) : sx;
    const lo = Math.max(a0, b0);
    const hi = Math.min(a1, b1);
    if (hi < lo) return { kind: 'none' };
    if (hi > lo) return { kind: 'overlap', at: vertical ? [px, lo] : [lo, lo === px ? py : ry] };
    // One shared end.
    const shared = (px === rx && py === ry) || (px === sx && py === sy) ? [px, py] : [qx, qy];
    return { kind: 'touch', at: shared };
  }
  if (o1 * o2 < 0 && o3 * o4 < 0) {
    const d = (qx - px) * (sy - ry) - (qy - py) * (sx - rx);
    const u = ((rx - px) * (sy - ry) - (ry - py) * (sx - rx)) / d;
    return { kind: 'proper', at: [px + u * (qx - px), py + u * (qy - py)] };
  }
  if (o1 === 0 && onSegment(px, py, qx, qy, rx, ry)) return { kind: 'touch', at: [rx, ry] };
  if (o2 === 0 && onSegment(px, py, qx, qy, sx, sy)) return { kind: 'touch', at: [sx, sy] };
  if (o3 === 0 && onSegment(rx, ry, sx, sy, px, py)) return { kind: 'touch', at: [px, py] };
  if (o4 === 0 && onSegment(rx, ry, sx, sy, qx, qy)) return { kind: 'touch', at: [qx, qy] };
  return { kind: 'none' };
}

function orient(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  const v = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
  return v > 0 ? 1 : v < 0 ? -1 : 0;
}

/** c (collinear with a-b) lies on the closed segment a-b. */
function onSegment(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): boolean {
  return Math.min(ax, bx) <= cx && cx <= Math.max(ax, bx) && Math.min(ay, by) <= cy && cy <= Math.max(ay, by);
}

/** Union-find over ring and touch-point nodes: a union of two nodes already joined is a cycle. */
class UnionFind {
  private parent: number[];
  constructor(size: number) {
    this.parent = Array.from({ length: size }, (_, i) => i);
  }
  add(): number {
    this.parent.push(this.parent.length);
    return this.parent.length - 1;
  }
  private find(x: number): number {
    while (this.parent[x] !== x) {
      this.parent[x] = this.parent[this.parent[x]!]!;
      x = this.parent[x]!;
    }
    return x;
  }
  /** false when a and b were already joined. */
  union(a: number, b: number): boolean {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra === rb) return false;
    this.parent[ra] = rb;
    return true;
  }
}

/**
 * Every edge of the polygon filed under the latitude buckets it spans
 * (compressed rows: bucket offsets into one edge array), for ray casting: a
 * point's eastward ray meets only edges of its own bucket. As many buckets as
 * edges; the filing is charged to the budget before anything is allocated.
 */
class RingEdgeIndex {
  private constructor(
    private readonly rings: Position[][],
    private readonly south: number,
    private readonly height: number,
    private readonly buckets: number,
    private readonly offsets: Uint32Array,
    /** ring << 0 packed with edge index: ring in ringOf, index in edgeOf. */
    private readonly ringOf: Uint32Array,
    private readonly edgeOf: Uint32Array,
  ) {}

  static build(rings: Position[][], budget: ValidityBudget): RingEdgeIndex | undefined {
    let south = Infinity;
    let north = -Infinity;
    let edges = 0;
    for (const ring of rings) {
      edges += ring.length - 1;
      for (const p of ring) {
        if (p[1]! < south) south = p[1]!;
        if (p[1]! > north) north = p[1]!;
      }
    }
    const buckets = Math.max(1, edges);
    const height = (north - south) / buckets || 1;
    const bucketOf = (y: number) => Math.min(buckets - 1, Math.max(0, Math.floor((y - south) / height)));
    const counts = new Uint32Array(buckets + 1);
    let filed = 0;
    for (const ring of rings) {
      for (let i = 0; i + 1 < ring.length; i++) {
        const lo = bucketOf(Math.min(ring[i]![1]!, ring[i + 1]![1]!));
        const hi = bucketOf(Math.max(ring[i]![1]!, ring[i + 1]![1]!));
        filed += hi - lo + 1;
        budget.pairs -= hi - lo + 1;
        if (budget.pairs < 0) return undefined;
        for (let b = lo; b <= hi; b++) counts[b + 1]!++;
      }
    }
    for (let b = 0; b < buckets; b++) counts[b + 1]! += counts[b]!;
    const ringOf = new Uint32Array(filed);
    const edgeOf = new Uint32Array(filed);
    const fill = counts.slice(0, buckets);
    rings.forEach((ring, r) => {
      for (let i = 0; i + 1 < ring.length; i++) {
        const lo = bucketOf(Math.min(ring[i]![1]!, ring[i + 1]![1]!));
        const hi = bucketOf(Math.max(ring[i]![1]!, ring[i + 1]![1]!));
        for (let b = lo; b <= hi; b++) {
          const slot = fill[b]!++;
          ringOf[slot] = r;
          edgeOf[slot] = i;
        }
      }
    });
    return new RingEdgeIndex(rings, south, height, buckets, counts, ringOf, edgeOf);
  }

  /** The rings (other than `own`) whose interior holds p, by the parity of their edges met by p's eastward ray. */
  ringsAround(p: [number, number], own: number, budget: ValidityBudget): Set<number> | undefined {
    const b = Math.min(this.buckets - 1, Math.max(0, Math.floor((p[1] - this.south) / this.height)));
    const from = this.offsets[b]!;
    const to = this.offsets[b + 1]!;
    budget.pairs -= to - from;
    if (budget.pairs < 0) return undefined;
    const odd = new Set<number>();
    for (let k = from; k < to; k++) {
      const r = this.ringOf[k]!;
      if (r === own) continue;
      const ring = this.rings[r]!;
      const i = this.edgeOf[k]!;
      const [ax, ay] = ring[i]! as [number, number];
      const [bx, by] = ring[i + 1]! as [number, number];
      if (ay > p[1] !== by > p[1] && p[0] < ((bx - ax) * (p[1] - ay)) / (by - ay) + ax) {
        if (odd.has(r)) odd.delete(r);
        else odd.add(r);
      }
    }
    return odd;
  }
}
