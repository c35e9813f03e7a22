/**
 * Issue 38, point 1: polygon validity by the OGC rules at any size, holes
 * included, so nothing is spent on a polygon Mapflow refuses
 * (`geometry.Invalid`) or bills for the wrong area, and nothing valid is
 * refused. The corpus is generated here: each case names what today's checks
 * did with it.
 */
import { describe, expect, it } from 'vitest';
import type { Position } from 'geojson';
import { geodesicAreaSqM } from '../../../../functions/aoi/geodesic-area.ts';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { checkPolygonValidity } from '../../../../functions/aoi/validity.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';

/** A closed ring of n vertices around (cx, cy), radii in degrees. */
function circle(cx: number, cy: number, r: number, n: number): Position[] {
  const ring: Position[] = [];
  for (let i = 0; i < n; i++) ring.push([cx + r * Math.cos((2 * Math.PI * i) / n), cy + r * Math.sin((2 * Math.PI * i) / n)]);
  ring.push([...ring[0]!]);
  return ring;
}
/** Sums rounded to 9 decimals, as a GIS writes them: 7.44 + 0.01 is 7.449999999999999 in binary, off the edge it should be on. */
const add = (a: number, b: number) => Number((a + b).toFixed(9));
const square = (x: number, y: number, d: number): Position[] => [[x, y], [add(x, d), y], [add(x, d), add(y, d)], [x, add(y, d)], [x, y]];
const file = (coordinates: Position[][]) => JSON.stringify({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates } });

function rejectionOf(act: () => unknown): InputRejected {
  let caught: unknown;
  try {
    act();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(InputRejected);
  return caught as InputRejected;
}

describe('holes are checked at any size', () => {
  it('refuses a hole outside the shell of a polygon of more than 5,000 positions (was: only its box was checked, and it was billed for the wrong area)', () => {
    // Prepare: a 6,000-vertex circle of about 24 km² at Bern; a hole in the corner of its box, outside the circle
    const shell = circle(7.45, 46.95, 0.03, 6_000);
    const hole = square(7.45 + 0.027, 46.95 + 0.027, 0.002);

    // Act
    const rejection = rejectionOf(() => parseAoi(file([shell, hole])));

    // Assess
    expect(rejection.code).toBe('INVALID_GEOMETRY');
    expect(rejection.message).toMatch(/ring 1 \(hole\) is not inside the outer ring/);
  });

  it('refuses the same hole twice, which Mapflow refuses as geometry.Invalid', () => {
    // Prepare
    const shell = square(7.44, 46.94, 0.01);
    const hole = square(7.443, 46.943, 0.002);

    // Act
    const rejection = rejectionOf(() => parseAoi(file([shell, hole, [...hole].reverse()])));

    // Assess
    expect(rejection.code).toBe('INVALID_GEOMETRY');
    expect(rejection.message).toMatch(/ring 2 \(hole\) repeats ring 1 \(hole\): the same hole twice/);
  });

  it('refuses a hole inside another hole', () => {
    // Prepare
    const shell = square(7.44, 46.94, 0.01);

    // Act
    const rejection = rejectionOf(() => parseAoi(file([shell, square(7.442, 46.942, 0.006), square(7.444, 46.944, 0.001)])));

    // Assess
    expect(rejection.code).toBe('INVALID_GEOMETRY');
    expect(rejection.message).toMatch(/ring 2 \(hole\) lies inside ring 1 \(hole\)/);
  });

  it('refuses holes that overlap each other', () => {
    // Act
    const rejection = rejectionOf(() => parseAoi(file([square(7.44, 46.94, 0.01), square(7.442, 46.942, 0.004), square(7.444, 46.944, 0.004)])));

    // Assess
    expect(rejection.code).toBe('SELF_INTERSECTING');
    expect(rejection.message).toMatch(/ring 1 \(hole\) and ring 2 \(hole\) cross/);
  });
});

describe('rings touching at single points are valid (OGC), and their area is right', () => {
  it('accepts a hole touching its shell at one vertex (was: SELF_INTERSECTING) and bills the shell less the hole', () => {
    // Prepare: the hole's corner is a corner of the shell
    const shell = square(7.44, 46.94, 0.01);
    const hole: Position[] = [[7.44, 46.94], [7.443, 46.942], [7.442, 46.943], [7.44, 46.94]];

    // Act
    const aoi = parseAoi(file([shell, hole]));

    // Assess
    const expected = geodesicAreaSqM({ type: 'Polygon', coordinates: [shell] }) - geodesicAreaSqM({ type: 'Polygon', coordinates: [hole] });
    expect(aoi.areaSqM).toBeCloseTo(expected, 0);
  });

  it('accepts a hole whose vertex lies on an edge of the shell', () => {
    // Prepare: the hole's tip on the middle of the shell's southern edge
    const shell = square(7.44, 46.94, 0.01);
    const hole: Position[] = [[7.445, 46.94], [7.447, 46.944], [7.443, 46.944], [7.445, 46.94]];

    // Act
    const aoi = parseAoi(file([shell, hole]));

    // Assess
    const expected = geodesicAreaSqM({ type: 'Polygon', coordinates: [shell] }) - geodesicAreaSqM({ type: 'Polygon', coordinates: [hole] });
    expect(aoi.areaSqM).toBeCloseTo(expected, 0);
  });

  it('accepts three holes meeting at one point', () => {
    // Prepare
    const shell = square(7.44, 46.94, 0.01);
    const c: Position = [7.445, 46.945];
    const holes: Position[][] = [
      [c, [7.447, 46.945], [7.447, 46.947], c],
      [c, [7.443, 46.947], [7.443, 46.945], c],
      [c, [7.444, 46.942], [7.446, 46.942], c],
    ];

    // Act
    const aoi = parseAoi(file([shell, ...holes]));

    // Assess
    expect(aoi.areaSqM).toBeGreaterThan(0);
  });

  it('refuses a hole touching its shell at two points: the interior falls in two', () => {
    // Prepare: a diamond hole from the middle of the southern edge to the middle of the northern one
    const shell = square(7.44, 46.94, 0.01);
    const hole: Position[] = [[7.445, 46.94], [7.447, 46.945], [7.445, 46.95], [7.443, 46.945], [7.445, 46.94]];

    // Act
    const rejection = rejectionOf(() => parseAoi(file([shell, hole])));

    // Assess
    expect(rejection.code).toBe('INVALID_GEOMETRY');
    expect(rejection.message).toMatch(/cuts the polygon's interior in two/);
  });

  it('refuses a chain of holes from one side of the shell to the other', () => {
    // Prepare: two triangles, each touching the shell once and each other once
    const shell = square(7.44, 46.94, 0.01);
    const mid: Position = [7.445, 46.945];
    const holes: Position[][] = [
      [[7.445, 46.94], [7.446, 46.943], mid, [7.444, 46.943], [7.445, 46.94]],
      [mid, [7.446, 46.947], [7.445, 46.95], [7.444, 46.947], mid],
    ];

    // Act
    const rejection = rejectionOf(() => parseAoi(file([shell, ...holes])));

    // Assess
    expect(rejection.code).toBe('INVALID_GEOMETRY');
    expect(rejection.message).toMatch(/cuts the polygon's interior in two/);
  });

  it('refuses a ring that passes through one of its own vertices', () => {
    // Prepare: two squares joined at a corner, drawn as one ring
    const ring: Position[] = [[0, 0], [1, 0], [1, 1], [2, 1], [2, 2], [1, 2], [1, 1], [0, 1], [0, 0]];

    // Act
    const rejection = rejectionOf(() => parseAoi(file([ring])));

    // Assess
    expect(rejection.code).toBe('SELF_INTERSECTING');
    expect(rejection.message).toMatch(/passes through it twice/);
  });
});

describe('the check stays bounded on hostile sizes', () => {
  it('checks a 60,000-vertex shell with 3,000 holes (99,000 positions) in pairs proportional to the edges', () => {
    // Prepare
    const shell = circle(7.45, 46.95, 0.5, 60_000);
    const holes: Position[][] = [];
    for (let i = 0; i < 3_000; i++) holes.push(square(7.2 + (i % 60) * 0.008, 46.75 + Math.floor(i / 60) * 0.008, 0.004));
    const rings = [shell, ...holes];
    const edges = rings.reduce((n, r) => n + r.length - 1, 0);
    const budget = { pairs: 50_000_000 };

    // Act
    const result = checkPolygonValidity(rings, budget);

    // Assess: valid, and the work grows with the edges times the edges a meridian crosses (about 120 here), not with
    // the edges' square (5.2e9)
    expect(result.problem).toBeUndefined();
    expect(edges).toBe(72_000);
    expect(result.work).toBeLessThan(100 * edges);
    expect(budget.pairs).toBe(50_000_000 - result.work);
  });

  it('a 99,999-vertex circle costs a few pairs per edge', () => {
    // Prepare
    const ring = circle(7.45, 46.95, 0.1, 99_999);

    // Act
    const result = checkPolygonValidity([ring], { pairs: 50_000_000 });

    // Assess
    expect(result.problem).toBeUndefined();
    expect(result.work).toBeLessThan(10 * 99_999);
  });

  it('a comb of 20,000 teeth spanning the whole width (80,003 positions) costs a few pairs per edge: edges apart in latitude are never compared', () => {
    // Prepare: every tooth overlaps every other in longitude (the sweep of today's crossings.ts compares them all)
    const ring: Position[] = [[0, 0]];
    for (let i = 0; i < 20_000; i++) ring.push([1, i * 1e-4], [1, i * 1e-4 + 5e-5], [0.01, i * 1e-4 + 5e-5], [0.01, (i + 1) * 1e-4]);
    ring.push([0, 2], [0, 0]);

    // Act
    const result = checkPolygonValidity([ring], { pairs: 50_000_000 });

    // Assess
    expect(result.problem).toBeUndefined();
    expect(result.work).toBeLessThan(20 * (ring.length - 1));
  });

  it('stops at its budget on a zigzag whose 40,000 edges all overlap in both longitude and latitude, and says so', () => {
    // Prepare: long parallel diagonals from x = 0 to x = 1, each shifted up a little; closed round the back
    const ring: Position[] = [];
    for (let i = 0; i < 20_000; i++) ring.push([0, i * 1e-6], [1, 1 + i * 1e-6]);
    ring.push([0, 20_000e-6], [-1, 20_000e-6], [-1, 0], [0, 0]);
    const budget = { pairs: 1_000_000 };

    // Act
    const result = checkPolygonValidity([ring], budget);

    // Assess: refused as too complex, having spent the budget and at most one edge's filing beyond it
    expect(result.problem).toMatchObject({ kind: 'too-complex' });
    expect(result.work).toBeGreaterThan(1_000_000);
    expect(result.work).toBeLessThanOrEqual(1_000_000 + ring.length);
  });
});
