/**
 * Issue 23, point 3: the work inside one union is bounded before it starts,
 * by the edge crossings among the polygons merged (a sweep that stops at its
 * limit), and the merged result is held to the file's ring and position limits.
 */
import { describe, expect, it } from 'vitest';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { countCrossings } from '../../../../functions/aoi/crossings.ts';
import { MAX_CROSSINGS } from '../../../../functions/aoi/dissolve.ts';
import { squaresGrid } from '../../../../packages/bench/fixtures/hostile.ts';
import { interlockingCombs } from '../../../../packages/bench/fixtures/hostile-round2.ts';

const square = (x: number, y: number, d: number) => [[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]];

describe('countCrossings', () => {
  it('counts where edges cross or end inside another edge, not shared vertices or shared edges', () => {
    // Prepare: two squares overlapping (2 crossings), two side by side sharing an edge (0), one T-junction (1)
    const overlapping = [[square(0, 0, 2)], [square(1, 1, 2)]];
    const adjacent = [[square(0, 0, 1)], [square(1, 0, 1)]];
    const tJunction = [[square(0, 0, 2)], [[[2, 1], [3, 0.5], [3, 1.5], [2, 1]]]];

    // Act
    const counts = [overlapping, adjacent, tJunction].map((polygons) => countCrossings(polygons, 1e9, 1e9).crossings);

    // Assess
    expect(counts).toEqual([2, 0, 2]);
  });

  it('stops counting once past its limit', () => {
    // Prepare
    const combs = JSON.parse(interlockingCombs(100)) as { features: { geometry: { coordinates: number[][][] } }[] };
    const polygons = combs.features.map((f) => f.geometry.coordinates);

    // Act
    const all = countCrossings(polygons, 1e9, 1e9);
    const stopped = countCrossings(polygons, 1000, 1e9);

    // Assess
    expect(all.stopped).toBe(false);
    expect(all.crossings).toBeGreaterThan(20_000);
    expect(stopped.stopped).toBe(true);
    expect(stopped.crossings).toBeLessThan(2000);
  });
});

describe('the dissolve of crossing polygons', () => {
  it('refuses two interlocking combs of 3,446 positions with GEOMETRY_TOO_COMPLEX before any union (was 38.6 s, 1.73 GB)', () => {
    // Prepare
    const file = interlockingCombs(430);

    // Act
    const started = performance.now();
    const outcome = (() => {
      try {
        return parseAoi(file);
      } catch (error) {
        return error;
      }
    })();
    const ms = performance.now() - started;

    // Assess: refused from the count, which stops early (the union itself took tens of seconds)
    expect(outcome).toMatchObject({ name: 'InputRejected', code: 'GEOMETRY_TOO_COMPLEX', details: { maxCrossings: MAX_CROSSINGS } });
    expect((outcome as Error).message).toMatch(/edges cross more than 50,000 times.*Dissolve/);
    expect(ms).toBeLessThan(15_000);
  });

  it('still merges 2,500 adjacent squares (no crossings) and a pair of small combs', () => {
    // Act
    const grid = parseAoi(squaresGrid(2500));
    const combs = parseAoi(interlockingCombs(10));

    // Assess
    expect(grid.geometry.type).toBe('Polygon');
    expect(combs.geometry.type).toBe('Polygon');
  });
});
