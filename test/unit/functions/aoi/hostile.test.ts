/**
 * Issue 11: GeoJSON that would take the Plan Processing step down (huge
 * geometries, antimeridian bands, UTF-16, oversized overrides) ends in a
 * REJECTED with its own code, quickly, never in a crash.
 */
import { describe, expect, it } from 'vitest';
import { dissolvePolygons } from '../../../../functions/aoi/dissolve.ts';
import { geodesicAreaSqM } from '../../../../functions/aoi/geodesic-area.ts';
import { MAX_POLYGONS, MAX_POSITIONS, parseAoi } from '../../../../functions/aoi/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { applyOverrides, DEFAULT_ROUTES, OVERRIDE_LIMITS } from '../../../../functions/routing/index.ts';
import { HOSTILE, ANTIMERIDIAN_RING, ANTIMERIDIAN_SPLIT, manyVertexPolygon, squaresGrid, trianglesGrid } from '../../../../packages/bench/fixtures/hostile.ts';
import type { Position } from 'geojson';

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

const polygonFile = (coordinates: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates } }], ...extra });
const bern = [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]];
const route = DEFAULT_ROUTES.routes[0]!;
/** The member as JSON text is spliced in, so a value too deep for JSON.stringify can be written. */
const overridesOf = (mapflow: unknown) => () => {
  const member = typeof mapflow === 'string' ? mapflow : JSON.stringify(mapflow);
  return applyOverrides(route, parseAoi(`${polygonFile(bern).slice(0, -1)},"mapflow":${member}}`).overrides);
};

describe('huge geometries are refused from their counts, before the dissolve', () => {
  // Just past each limit: the count is what refuses a file, whatever its size. The corpus's huge files
  // (90,000 squares, 240,000 triangles, 1,000,000 vertices) go through the same parseAoi with their codes
  // in test/unit/functions/geotiff/hostile-corpus.test.ts, and end to end in test/e2e/hostile.test.ts.
  it('refuses one polygon over the limit with TOO_MANY_POLYGONS, saying how many and what to do', () => {
    // Act
    const rejection = rejectionOf(() => parseAoi(squaresGrid(MAX_POLYGONS + 1)));

    // Assess
    expect(rejection.code).toBe('TOO_MANY_POLYGONS');
    expect(rejection.message).toMatch(new RegExp(`the file has ${MAX_POLYGONS + 1} polygons; one file may have at most ${MAX_POLYGONS}\\. Simplify`));
  });

  it('refuses triangles over the limit with TOO_MANY_POLYGONS', () => {
    // Act
    const rejection = rejectionOf(() => parseAoi(trianglesGrid(2 * MAX_POLYGONS)));

    // Assess
    expect(rejection.code).toBe('TOO_MANY_POLYGONS');
  });

  it('refuses a polygon of one vertex more than the limit with TOO_MANY_POSITIONS', () => {
    // Act
    const rejection = rejectionOf(() => parseAoi(manyVertexPolygon(MAX_POSITIONS)));

    // Assess: the ring's closing position counts
    expect(rejection.code).toBe('TOO_MANY_POSITIONS');
    expect(rejection.details).toMatchObject({ positions: MAX_POSITIONS + 1, maxPositions: MAX_POSITIONS });
  });

  it('dissolves 240,000 triangles in batches: a result or GEOMETRY_TOO_COMPLEX within the budget, never a stack overflow', () => {
    // Prepare: past the counts, straight to the dissolve
    const triangles = (JSON.parse(trianglesGrid(240_000)) as { coordinates: Position[][][] }).coordinates;

    // Act
    let outcome: unknown;
    try {
      outcome = dissolvePolygons(triangles, { budgetMs: 1_000 });
    } catch (error) {
      outcome = error;
    }

    // Assess
    expect(outcome).not.toBeInstanceOf(RangeError);
    if (outcome instanceof Error) expect(outcome).toMatchObject({ name: 'InputRejected', code: 'GEOMETRY_TOO_COMPLEX' });
  }, 120_000);

  it('keeps polygons whose boxes touch nothing as they are (no union needed)', () => {
    // Prepare: two squares far apart
    const a = bern;
    const b = [[[8.44, 46.94], [8.45, 46.94], [8.45, 46.95], [8.44, 46.95], [8.44, 46.94]]];

    // Act
    const merged = dissolvePolygons([a, b]);

    // Assess
    expect(merged).toEqual({ type: 'MultiPolygon', coordinates: [a, b] });
  });

  it(`accepts the largest file the counts allow (${MAX_POLYGONS} adjacent squares) and dissolves it`, () => {
    // Act
    const aoi = parseAoi(squaresGrid(MAX_POLYGONS));

    // Assess: 50 x 50 cells of 0.0001° (7.7 x 11.1 m at 46° N), about 0.215 km²
    expect(aoi.areaSqM / 1e6).toBeCloseTo(0.215, 2);
    expect(aoi.geometry.type === 'Polygon' ? 1 : aoi.geometry.coordinates.length).toBeLessThan(MAX_POLYGONS / 10);
  }, 120_000);

  it('refuses GeometryCollections nested 10,000 deep with GEOMETRY_TOO_COMPLEX', () => {
    // Prepare
    const nested = HOSTILE.find((e) => e.file === 'nested-collections.geojson')!.make() as string;

    // Act
    const rejection = rejectionOf(() => parseAoi(nested));

    // Assess
    expect(rejection.code).toBe('GEOMETRY_TOO_COMPLEX');
  });
});

describe('antimeridian and poles (RFC 7946 3.1.9)', () => {
  it('refuses the ring of issue 11 with CROSSES_ANTIMERIDIAN, saying how to cut it', () => {
    // Act
    const rejection = rejectionOf(() => parseAoi(polygonFile([ANTIMERIDIAN_RING]), { aoiAreaLimitSqM: 10e6 }));

    // Assess
    expect(rejection.code).toBe('CROSSES_ANTIMERIDIAN');
    expect(rejection.message).toMatch(/ring 0 \(outer ring\) crosses the antimeridian \(180° longitude\) between \[179\.99, 0\] and \[-179\.99, 0\].*MultiPolygon with one part east and one part west/);
  });

  it('accepts the same area cut at ±180°, with its area and each part\'s box computed on the parts', () => {
    // Act
    const aoi = parseAoi(JSON.stringify(ANTIMERIDIAN_SPLIT), { aoiAreaLimitSqM: 10e6 });

    // Assess
    expect(aoi.areaSqM / 1e6).toBeCloseTo(2.46, 2);
    expect(aoi.geometry.type).toBe('MultiPolygon');
  });

  it('refuses a polar cap drawn with an edge from -180° to 180° (its geodesic area would be 0)', () => {
    // Act
    const rejection = rejectionOf(() => parseAoi(polygonFile([[[-180, 89], [180, 89], [180, 90], [-180, 90], [-180, 89]]])));

    // Assess
    expect(rejection.code).toBe('CROSSES_ANTIMERIDIAN');
  });

  it('measures a large box along its straight lon/lat edges, as RFC 7946 draws them, not along geodesics', () => {
    // Prepare: a 40° x 20° box at high latitude, and the same with 1,000 points per edge
    const corners = [[[0, 50], [40, 50], [40, 70], [0, 70], [0, 50]]];
    const dense: Position[] = [];
    const edge = (from: number[], to: number[]) => {
      for (let k = 0; k < 1000; k++) dense.push([from[0]! + ((to[0]! - from[0]!) * k) / 1000, from[1]! + ((to[1]! - from[1]!) * k) / 1000]);
    };
    edge([0, 50], [40, 50]);
    edge([40, 50], [40, 70]);
    edge([40, 70], [0, 70]);
    edge([0, 70], [0, 50]);
    dense.push([0, 50]);

    // Act
    const coarse = geodesicAreaSqM({ type: 'Polygon', coordinates: corners });
    const fine = geodesicAreaSqM({ type: 'Polygon', coordinates: [dense] });

    // Assess
    expect(Math.abs(coarse - fine) / fine).toBeLessThan(1e-4);
  });
});

describe('encodings', () => {
  it.each(['utf16le-bom.geojson', 'utf16be-bom.geojson', 'utf16le-no-bom.geojson'])('names %s as UTF-16, not binary', (file) => {
    // Prepare
    const bytes = HOSTILE.find((e) => e.file === file)!.make() as Uint8Array;

    // Act
    const rejection = rejectionOf(() => parseAoi(bytes));

    // Assess
    expect(rejection.code).toBe('NOT_JSON');
    expect(rejection.message).toMatch(/UTF-16 text \((little|big)-endian\); GeoJSON must be UTF-8/);
    expect(rejection.message).not.toMatch(/binary/);
  });
});

describe('the mapflow member is bounded in size and characters', () => {
  it.each([
    ['15 MB of block names', { blocks: Array.from({ length: 300_000 }, (_, i) => ({ name: `block-${i}-${'x'.repeat(30)}`, enabled: true })) }],
    ['a 3 MB inferenceParams', { inferenceParams: { pad: 'x'.repeat(3 * 1024 * 1024) } }],
    ['a 2 MB meta value', { meta: { note: 'x'.repeat(2 * 1024 * 1024) } }],
    ['a 9 KB inferenceParams', { inferenceParams: { pad: 'x'.repeat(9 * 1024) } }],
    ['65 blocks', { blocks: Array.from({ length: OVERRIDE_LIMITS.blocks + 1 }, (_, i) => ({ name: `b${i}`, enabled: true })) }],
    ['33 meta keys', { meta: Object.fromEntries(Array.from({ length: OVERRIDE_LIMITS.metaKeys + 1 }, (_, i) => [`k${i}`, 'v'])) }],
    ['a 257-character meta value', { meta: { k: 'v'.repeat(OVERRIDE_LIMITS.metaValueChars + 1) } }],
    ['a 201-character model', { model: 'm'.repeat(OVERRIDE_LIMITS.nameChars + 1) }],
    ['a 201-character provider name', { source: { dataProvider: { providerName: 'p'.repeat(201) } } }],
    ['inferenceParams nested 9 deep', { inferenceParams: { a: { b: { c: { d: { e: { f: { g: { h: 1 } } } } } } } } }],
    ['inferenceParams nested 5,000 deep', `{"inferenceParams":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`],
  ])('refuses %s with OVERRIDE_TOO_LARGE', (_what, mapflow) => {
    // Act
    const rejection = rejectionOf(overridesOf(mapflow));

    // Assess
    expect(rejection.code).toBe('OVERRIDE_TOO_LARGE');
    expect(rejection.message).toMatch(/^OVERRIDE_TOO_LARGE: "mapflow": .+larger settings belong in the route$/);
  });

  it.each([
    ['a provider name with NUL and newline', { source: { dataProvider: { providerName: 'Mapbox\u0000\nX: 1' } } }],
    ['a processing name with a newline', { processingName: 'ok\nFAKE' }],
    ['a meta key with an escape', { meta: { 'a\u001b[31m': 'red' } }],
    ['a model with a right-to-left override', { model: 'Buildings\u202Egnp.exe' }],
    ['a block name with NUL', { blocks: [{ name: 'Heights\u0000', enabled: true }] }],
    ['an inferenceParams string with a tab', { inferenceParams: { a: 'x\ty' } }],
  ])('refuses %s with OVERRIDE_BAD_CHARACTERS', (_what, mapflow) => {
    // Act
    const rejection = rejectionOf(overridesOf(mapflow));

    // Assess
    expect(rejection.code).toBe('OVERRIDE_BAD_CHARACTERS');
    expect(rejection.message).not.toMatch(/[\u0000\n\u001b\u202E]/);
  });

  it('still accepts ordinary overrides at the limits', () => {
    // Act
    const result = applyOverrides(route, {
      model: '🏠 Buildings',
      blocks: Array.from({ length: OVERRIDE_LIMITS.blocks }, (_, i) => ({ name: `b${i}`, enabled: i % 2 === 0 })),
      meta: { project: 'Zürich 2026', owner: 'gis-team' },
      inferenceParams: { threshold: 0.5, classes: ['a', 'b'] },
      processingName: 'Quartier 12 — été',
    });

    // Assess
    expect(result.blocks).toHaveLength(OVERRIDE_LIMITS.blocks);
    expect(result.processingName).toBe('Quartier 12 — été');
  });
});
