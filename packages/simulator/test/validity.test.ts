/**
 * Issue 38, point 2: the simulator's geometry check is a sweep (no worse than
 * n log n: counted in segment comparisons, not timed) with the OGC rules
 * the live service applies: a hole touching its shell at one point is valid,
 * duplicate holes are refused as geometry.Invalid.
 */
import type { Polygon, Position } from 'geojson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { booleanPointInPolygon } from '@turf/boolean-point-in-polygon';
import { containment, validityOf } from '../src/geometry.ts';
import type { RunningSimulator } from '../src/index.ts';
import { call, finished, start, v2Body } from './helpers.ts';

const polygon = (...rings: Position[][]): Polygon => ({ type: 'Polygon', coordinates: rings });
/** A square ring of side d at (x, y), counter-clockwise. */
const square = (x: number, y: number, d: number): Position[] => [[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]];
/** A circle of n vertices around Bern. */
const circle = (n: number, radius = 0.01): Position[] => {
  const ring = Array.from({ length: n }, (_, i): Position => [7.44 + radius * Math.cos((2 * Math.PI * i) / n), 46.94 + radius * Math.sin((2 * Math.PI * i) / n)]);
  return [...ring, ring[0]!];
};

describe('validityOf', () => {
  it.each([
    ['a square', polygon(square(7.44, 46.94, 0.01)), true],
    ['a square with a hole inside', polygon(square(7.44, 46.94, 0.01), square(7.443, 46.943, 0.002)), true],
    ['a hole touching its shell at one point', polygon(square(7.44, 46.94, 0.01), [[7.44, 46.945], [7.445, 46.943], [7.445, 46.947], [7.44, 46.945]]), true],
    ['repeated consecutive positions', polygon([[7.44, 46.94], [7.45, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]), true],
    ['a figure-eight', polygon([[7.44, 46.94], [7.45, 46.95], [7.45, 46.94], [7.44, 46.95], [7.44, 46.94]]), false],
    ['duplicate holes', polygon(square(7.44, 46.94, 0.01), square(7.443, 46.943, 0.002), square(7.443, 46.943, 0.002)), false],
    ['a hole touching its shell at two points', polygon(square(7.44, 46.94, 0.01), [[7.44, 46.945], [7.445, 46.94], [7.446, 46.946], [7.44, 46.945]]), false],
    ['a ring touching itself at a vertex', polygon([[7.44, 46.94], [7.46, 46.94], [7.45, 46.95], [7.47, 46.96], [7.43, 46.96], [7.45, 46.95], [7.44, 46.94]]), false],
    ['a hole crossing its shell', polygon(square(7.44, 46.94, 0.01), square(7.448, 46.943, 0.004)), false],
  ])('%s is valid: %s', (_what, geometry, valid) => {
    // Act
    const verdict = validityOf(geometry);
    // Assess
    expect(verdict.valid, verdict.reason).toBe(valid);
  });

  it('checks a 99,999-vertex circle with a number of comparisons in n log n, not n²', () => {
    // Prepare
    const n = 99_999;
    // Act
    const verdict = validityOf(polygon(circle(n)));
    // Assess: the pairwise check compared n²/2 = 5e9 pairs
    expect(verdict.valid).toBe(true);
    expect(verdict.comparisons).toBeLessThanOrEqual(4 * n * Math.log2(n));
  });

  it('grows its comparisons as n log n on a zigzag whose every segment spans the others\' longitudes', () => {
    // Prepare: long thin teeth, all overlapping in longitude (a sweep by boxes compares every pair)
    const teeth = (n: number): Position[] => {
      const ring: Position[] = [[0, 0]];
      for (let i = 0; i < n; i++) ring.push([10, i * 2 + 1], [0.001 * (i + 1), i * 2 + 2]);
      ring.push([0, n * 2 + 2], [0, 0]);
      return ring;
    };
    // Act
    const small = validityOf(polygon(teeth(2_000)));
    const large = validityOf(polygon(teeth(16_000)));
    // Assess
    expect(small.valid && large.valid).toBe(true);
    expect(large.comparisons / small.comparisons).toBeLessThan(8 * (Math.log2(32_000) / Math.log2(4_000)) * 1.1);
  });
});

describe('processings on the simulator', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await start();
  });
  afterAll(async () => {
    await sim?.close();
  });

  it.each([
    ['a hole touching its shell at one point', 'OK', polygon(square(7.44, 46.94, 0.01), [[7.44, 46.945], [7.445, 46.943], [7.445, 46.947], [7.44, 46.945]])],
    ['duplicate holes', 'FAILED', polygon(square(7.44, 46.94, 0.01), square(7.443, 46.943, 0.002), square(7.443, 46.943, 0.002))],
  ])('a processing on %s ends %s', async (_what, status, geometry) => {
    // Act
    const created = await call(sim, 'POST', '/processings/v2', v2Body({ geometry }));
    const record = await finished(sim, created.json.id);
    // Assess
    expect(record.status).toBe(status);
    if (status === 'FAILED') expect(record.messages[0]).toMatchObject({ code: 'geometry.Invalid' });
  });
});

describe('containment', () => {
  it('agrees with a point-in-polygon test on every point of a grid over a polygon with a hole and a second part', () => {
    // Prepare
    const geometry = { type: 'MultiPolygon' as const, coordinates: [[circle(999), square(7.435, 46.935, 0.01)], [square(7.46, 46.93, 0.005)]] };
    const within = containment(geometry);
    const points: Position[] = [];
    for (let i = 0; i < 60; i++) for (let j = 0; j < 60; j++) points.push([7.425 + i * 0.00071, 46.925 + j * 0.00043]);
    // Act
    const ours = points.map((p) => within(p));
    // Assess
    expect(ours).toEqual(points.map((p) => booleanPointInPolygon(p, geometry)));
    expect(ours.filter(Boolean).length).toBeGreaterThan(100);
  });
});
