/**
 * The sweep and the hole index of validity.ts against the rules applied the
 * slow way (every pair of edges, every hole against every ring), on small
 * random polygons drawn on an integer grid: shared vertices, collinear edges,
 * holes touching, crossing, nested and repeated come up often there, and the
 * arithmetic is exact.
 */
import { describe, expect, it } from 'vitest';
import type { Position } from 'geojson';
import { checkPolygonValidity } from '../../../../functions/aoi/validity.ts';

/** mulberry32: the same cases on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A ring of `n` grid points sorted by angle around a centre (mostly simple), closed, without consecutive repeats. */
function ring(next: () => number, cx: number, cy: number, radius: number, n: number): Position[] {
  const points: Position[] = [];
  for (let i = 0; i < n; i++) {
    const angle = ((i + next() * 0.8) / n) * 2 * Math.PI;
    const r = radius * (0.4 + next() * 0.6);
    points.push([Math.round(cx + r * Math.cos(angle)), Math.round(cy + r * Math.sin(angle))]);
  }
  if (next() < 0.15) points.splice(Math.floor(next() * n), 0, points[Math.floor(next() * n)]!); // a vertex visited twice
  const deduped = points.filter((p, i) => i === 0 || p[0] !== points[i - 1]![0] || p[1] !== points[i - 1]![1]);
  while (deduped.length > 1 && deduped[0]![0] === deduped.at(-1)![0] && deduped[0]![1] === deduped.at(-1)![1]) deduped.pop();
  return [...deduped, deduped[0]!];
}

const orient = (a: Position, b: Position, c: Position) => Math.sign((b[0]! - a[0]!) * (c[1]! - a[1]!) - (b[1]! - a[1]!) * (c[0]! - a[0]!));
const on = (a: Position, b: Position, c: Position) =>
  Math.min(a[0]!, b[0]!) <= c[0]! && c[0]! <= Math.max(a[0]!, b[0]!) && Math.min(a[1]!, b[1]!) <= c[1]! && c[1]! <= Math.max(a[1]!, b[1]!);
const same = (a: Position, b: Position) => a[0] === b[0] && a[1] === b[1];
const key = (p: Position) => `${p[0]},${p[1]}`;

/** Points where segments a-b and c-d meet, or 'overlap' for a shared length. */
function meet(a: Position, b: Position, c: Position, d: Position): 'overlap' | Position[] {
  const o1 = orient(a, b, c), o2 = orient(a, b, d), o3 = orient(c, d, a), o4 = orient(c, d, b);
  if (o1 === 0 && o2 === 0) {
    const ends = [c, d, a, b].filter((p, i) => (i < 2 ? on(a, b, p) : on(c, d, p)));
    const distinct = [...new Map(ends.map((p) => [key(p), p])).values()];
    return distinct.length > 1 ? 'overlap' : distinct;
  }
  if (o1 * o2 < 0 && o3 * o4 < 0) return [[NaN, NaN]]; // a crossing inside both
  return [c, d, a, b].filter((p, i) => (i === 0 ? o1 === 0 && on(a, b, p) : i === 1 ? o2 === 0 && on(a, b, p) : i === 2 ? o3 === 0 && on(c, d, p) : o4 === 0 && on(c, d, p)));
}

function inside(p: Position, r: Position[]): boolean {
  let odd = false;
  for (let i = 0; i + 1 < r.length; i++) {
    const [ax, ay] = r[i] as [number, number];
    const [bx, by] = r[i + 1] as [number, number];
    if (ay > p[1]! !== by > p[1]! && p[0]! < ((bx - ax) * (p[1]! - ay)) / (by - ay) + ax) odd = !odd;
  }
  return odd;
}

/** The OGC rules, every pair of edges against every other. */
function validSlowly(rings: Position[][]): boolean {
  const holes = rings.slice(1).map((h) => h.slice(0, -1).map(key).sort().join(';'));
  if (new Set(holes).size < holes.length) return false;
  const touches = new Map<string, Set<number>>();
  for (let r = 0; r < rings.length; r++) {
    for (let s = r; s < rings.length; s++) {
      const R = rings[r]!, S = rings[s]!;
      for (let i = 0; i + 1 < R.length; i++) {
        for (let j = r === s ? i + 1 : 0; j + 1 < S.length; j++) {
          const m = meet(R[i]!, R[i + 1]!, S[j]!, S[j + 1]!);
          if (m === 'overlap') return false;
          if (m.length === 0) continue;
          if (Number.isNaN(m[0]![0])) return false;
          if (r === s) {
            const adjacent = j === i + 1 || (i === 0 && j === R.length - 2);
            if (adjacent && m.every((p) => same(p, R[j]!) || (i === 0 && j === R.length - 2 && same(p, R[0]!)))) continue;
            return false;
          }
          for (const p of m) {
            const set = touches.get(key(p)) ?? new Set<number>();
            set.add(r).add(s);
            touches.set(key(p), set);
          }
        }
      }
    }
  }
  // A cycle in the graph of rings and touch points: edges > nodes - components.
  const parent = new Map<string, string>();
  const find = (x: string): string => (parent.get(x) ?? x) === x ? x : find(parent.get(x)!);
  for (const [point, ringSet] of touches) {
    for (const r of ringSet) {
      const a = find(`p${point}`), b = find(`r${r}`);
      if (a === b) return false;
      parent.set(a, b);
    }
  }
  for (let h = 1; h < rings.length; h++) {
    const hole = rings[h]!;
    const p = hole.find((q) => !touches.has(key(q))) ?? hole.slice(0, -1).map((q, i) => [(q[0]! + hole[i + 1]![0]!) / 2, (q[1]! + hole[i + 1]![1]!) / 2]).find((q) => !touches.has(key(q)))!;
    if (!inside(p, rings[0]!)) return false;
    for (let o = 1; o < rings.length; o++) if (o !== h && inside(p, rings[o]!)) return false;
  }
  return true;
}

describe('validity.ts agrees with the rules applied pair by pair', () => {
  it('on 4,000 random polygons with up to three holes', () => {
    // Prepare
    const next = random(38);
    const cases: Position[][][] = [];
    while (cases.length < 4_000) {
      const shell = ring(next, 10, 10, 10, 4 + Math.floor(next() * 8));
      const holes = Array.from({ length: Math.floor(next() * 4) }, () => ring(next, 4 + next() * 12, 4 + next() * 12, 2 + next() * 5, 3 + Math.floor(next() * 3)));
      if (next() < 0.05 && holes.length > 0) holes.push([...holes[0]!].reverse());
      const rings = [shell, ...holes];
      if (rings.every((r) => r.length >= 4)) cases.push(rings);
    }

    // Act
    const verdicts = cases.map((rings) => ({ fast: checkPolygonValidity(rings, { pairs: 1e9 }).problem === undefined, slow: validSlowly(rings) }));

    // Assess: the same verdict every time, and both kinds plentiful
    const disagreements = verdicts.flatMap((v, i) => (v.fast === v.slow ? [] : [{ rings: cases[i], ...v }]));
    expect(disagreements.slice(0, 3)).toEqual([]);
    const valid = verdicts.filter((v) => v.slow).length;
    expect(valid).toBeGreaterThan(400);
    expect(cases.length - valid).toBeGreaterThan(400);
  });
});
