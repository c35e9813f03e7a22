import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { kinks } from '@turf/kinks';
import { describe, expect, it } from 'vitest';
import { checkProcessingGeometry, parseAoi, type ParsedAoi } from '../../../../functions/aoi/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';

const testdata = (name: string) => readFileSync(fileURLToPath(new URL(`../../../../samples/aoi/${name}`, import.meta.url)), 'utf8');

const square = (x: number, y: number, d: number) => [
  [
    [x, y],
    [x + d, y],
    [x + d, y + d],
    [x, y + d],
    [x, y],
  ],
];
const feature = (geometry: unknown, properties: Record<string, unknown> = {}) => ({ type: 'Feature', properties, geometry });
const collection = (...features: unknown[]) => JSON.stringify({ type: 'FeatureCollection', features });

function rejection(text: string, options?: Parameters<typeof parseAoi>[1]): InputRejected {
  try {
    parseAoi(text, options);
  } catch (error) {
    expect(error).toBeInstanceOf(InputRejected);
    return error as InputRejected;
  }
  throw new Error('parseAoi accepted the input');
}

describe('parseAoi with real files', () => {
  it.each([
    // file, polygon features, area km² (docs/local.md, the samples table), largest feature km²
    ['bern-quarters.geojson', 32, 52, 12.8],
    ['basel.geojson', 89, 554, 23.7],
    ['amsterdam.geojson', 97, 197, undefined],
  ])('%s: %i features, about %d km²', (file, count, km2, largestKm2) => {
    // Act
    const aoi = parseAoi(testdata(file));

    // Assess: ellipsoidal geodesic area matches the samples table's equal-area figures
    // (given rounded to whole km²) within rounding plus 0.3 %; a spherical
    // formula misses Amsterdam's by more than that.
    expect(aoi.features).toHaveLength(count);
    expect(Math.abs(aoi.areaSqM / 1e6 - km2)).toBeLessThan(0.5 + km2 * 0.003);
    if (largestKm2) expect(Math.max(...aoi.features.map((f) => f.areaSqM)) / 1e6).toBeCloseTo(largestKm2, 1);
    // Neighbourhoods share edges: dissolved, they make one geometry whose parts are disjoint
    expect(aoi.geometry.type === 'Polygon' || aoi.geometry.type === 'MultiPolygon').toBe(true);
    const parts = aoi.geometry.type === 'Polygon' ? [aoi.geometry.coordinates] : aoi.geometry.coordinates;
    for (const rings of parts) expect(kinks({ type: 'Polygon', coordinates: rings }).features).toHaveLength(0);
    expect(aoi.ignored).toEqual({ points: 0, lines: 0, empty: 0 });
  });

  it('keeps the feature names and dissolves every polygon into the combined geometry', () => {
    // Act
    const aoi = parseAoi(testdata('bern-quarters.geojson'));

    // Assess
    expect(aoi.features[0]).toMatchObject({ index: 0, name: 'Schwarzes Quartier' });
    // The 32 quarters tile the city: their union is one polygon of the same total area
    expect(aoi.features).toHaveLength(32);
    expect(aoi.geometry.type).toBe('Polygon');
    expect(aoi.areaSqM).toBeCloseTo(aoi.features.reduce((sum, f) => sum + f.areaSqM, 0), -5);
    const [w, s, e, n] = aoi.bbox;
    expect(w).toBeGreaterThan(7.29);
    expect(e).toBeLessThan(7.5);
    expect(s).toBeGreaterThan(46.9);
    expect(n).toBeLessThan(47.0);
  });

  it('removes repeated consecutive positions instead of calling them self-intersections', () => {
    // Prepare: Schwarzes Quartier repeats a position, which a naive kinks test reports
    const bern = JSON.parse(testdata('bern-quarters.geojson'));
    const ring = bern.features[0].geometry.coordinates[0][0] as number[][];

    // Act
    const aoi = parseAoi(JSON.stringify(bern));

    // Assess
    const cleaned = (aoi.features[0]!.geometry.coordinates as number[][][][])[0]![0]!;
    expect(cleaned.length).toBeLessThan(ring.length);
  });

  it('rejects a file of points with NO_POLYGONS, saying what was found', () => {
    // Act
    const error = rejection(testdata('caltrain-stations.geojson'));

    // Assess
    expect(error.code).toBe('NO_POLYGONS');
    expect(error.message).toMatch(/found 32 point feature\(s\)/);
  });

  it('rejects basel over a 500 km² limit and accepts it under 600 km²', () => {
    // Act
    const error = rejection(testdata('basel.geojson'), { aoiAreaLimitSqM: 500e6 });
    const aoi = parseAoi(testdata('basel.geojson'), { aoiAreaLimitSqM: 600e6 });

    // Assess
    expect(error.code).toBe('AREA_TOO_LARGE');
    expect(error.message).toMatch(/cover 55\d\.\d km² in all, more than the account's AOI limit of 500 km²/);
    expect(aoi.features).toHaveLength(89);
  });
});

describe('parseAoi accepts every GeoJSON shape with polygons', () => {
  const poly = { type: 'Polygon', coordinates: square(7, 46, 0.01) };
  const multi = { type: 'MultiPolygon', coordinates: [square(7, 46, 0.01), square(8, 46, 0.01)] };

  it.each([
    ['a bare Polygon', JSON.stringify(poly), 1, 'Polygon'],
    ['a bare MultiPolygon', JSON.stringify(multi), 1, 'MultiPolygon'],
    ['a Feature', JSON.stringify({ ...feature(poly, { name: 'A' }), mapflow: { zoom: 17 } }), 1, 'Polygon'],
    ['a GeometryCollection', JSON.stringify({ type: 'GeometryCollection', geometries: [poly, { type: 'Point', coordinates: [1, 2] }, multi] }), 2, 'MultiPolygon'],
    ['a collection with points, lines and a null geometry', collection(feature(poly), feature({ type: 'LineString', coordinates: [[0, 0], [1, 1]] }), feature({ type: 'MultiPoint', coordinates: [[0, 0]] }), feature(null)), 1, 'Polygon'],
  ])('%s', (_label, text, featureCount, combinedType) => {
    // Act
    const aoi: ParsedAoi = parseAoi(text);

    // Assess
    expect(aoi.features).toHaveLength(featureCount);
    expect(aoi.geometry.type).toBe(combinedType);
    expect(aoi.areaSqM).toBeGreaterThan(0);
  });

  it('reports what it skipped and hands over the mapflow member', () => {
    // Act
    const skipped = parseAoi(collection(feature(poly), feature({ type: 'LineString', coordinates: [[0, 0], [1, 1]] }), feature({ type: 'Point', coordinates: [0, 0] }), feature(null)));
    const withOverrides = parseAoi(JSON.stringify({ type: 'FeatureCollection', features: [feature(poly)], mapflow: { model: 'Roads' } }));

    // Assess
    expect(skipped.ignored).toEqual({ points: 1, lines: 1, empty: 1 });
    expect(skipped.overrides).toBeUndefined();
    expect(withOverrides.overrides).toEqual({ model: 'Roads' });
  });

  it('names features after their name property, else their index', () => {
    // Act
    const aoi = parseAoi(collection(feature(poly, { name: 'Nord' }), feature(poly, { title: 'Süd' }), feature(poly)));

    // Assess
    expect(aoi.features.map((f) => f.name)).toEqual(['Nord', 'Süd', '2']);
  });

  it('accepts a hole inside its polygon and subtracts its area', () => {
    // Prepare
    const withHole = { type: 'Polygon', coordinates: [square(7, 46, 0.1)[0], square(7.02, 46.02, 0.05)[0]!.slice().reverse()] };

    // Act
    const holed = parseAoi(JSON.stringify(withHole));
    const solid = parseAoi(JSON.stringify({ type: 'Polygon', coordinates: square(7, 46, 0.1) }));

    // Assess: the hole is a quarter of the polygon
    expect(holed.areaSqM / solid.areaSqM).toBeCloseTo(0.75, 2);
  });
});

describe('parseAoi rejects bad input and says what to fix', () => {
  const bowtie = [
    [
      [0, 0],
      [1, 1],
      [1, 0],
      [0, 1],
      [0, 0],
    ],
  ];

  it.each([
    ['an empty file', '', 'EMPTY_FILE', /the file is empty/],
    ['whitespace and a BOM', '\uFEFF \n', 'EMPTY_FILE', /the file is empty/],
    ['text', 'hello', 'NOT_JSON', /not valid JSON/],
    ['a JSON array', '[1, 2]', 'NOT_GEOJSON', /found a JSON array/],
    ['a JSON object of another kind', '{"name": "x"}', 'NOT_GEOJSON', /found an object without "type"/],
    ['an unknown geometry type', JSON.stringify(feature({ type: 'Circle', coordinates: [] })), 'NOT_GEOJSON', /unknown geometry type "Circle"/],
    ['features that are not features', JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Polygon' }] }), 'NOT_GEOJSON', /feature 0 is not a GeoJSON Feature/],
    ['an unclosed ring', collection(feature({ type: 'Polygon', coordinates: [square(7, 46, 1)[0]!.slice(0, 4)] }, { name: 'Open' })), 'INVALID_GEOMETRY', /feature 0 \('Open'\), ring 0 \(outer ring\) is not closed/],
    ['too few positions', collection(feature({ type: 'Polygon', coordinates: [[[0, 0], [1, 1], [0, 0]]] })), 'INVALID_GEOMETRY', /has 3 distinct positions .* at least 4/],
    ['a ring on one line', collection(feature({ type: 'Polygon', coordinates: [[[0, 0], [1, 1], [2, 2], [0, 0]]] })), 'INVALID_GEOMETRY', /has no area/],
    ['string coordinates', collection(feature({ type: 'Polygon', coordinates: [[['NaN', 0], [1, 1], [1, 0], ['NaN', 0]]] })), 'INVALID_GEOMETRY', /ring 0 \(outer ring\), position 0: coordinates must be plain numbers/],
    ['empty polygon', collection(feature({ type: 'Polygon', coordinates: [] })), 'INVALID_GEOMETRY', /needs "coordinates"/],
    ['a bowtie in the second feature', collection(feature({ type: 'Polygon', coordinates: square(0, 0, 1) }), feature({ type: 'Polygon', coordinates: bowtie }, { name: 'Bow' })), 'SELF_INTERSECTING', /feature 1 \('Bow'\) intersects itself at \[0\.5, 0\.5\]/],
    ['a bowtie part of a MultiPolygon', collection(feature({ type: 'MultiPolygon', coordinates: [square(5, 5, 1), bowtie] })), 'SELF_INTERSECTING', /feature 0, polygon 1 intersects itself/],
    ['a hole outside its polygon', collection(feature({ type: 'Polygon', coordinates: [square(0, 0, 1)[0], square(5, 5, 1)[0]] })), 'INVALID_GEOMETRY', /ring 1 \(hole\) is not inside the outer ring/],
    ['projected coordinates', collection(feature({ type: 'Polygon', coordinates: square(2600000, 1200000, 100) })), 'COORDINATES_OUT_OF_RANGE', /look like projected coordinates/],
    ['swapped lon/lat', collection(feature({ type: 'Polygon', coordinates: square(46, 170, 1) })), 'COORDINATES_OUT_OF_RANGE', /look swapped/],
    ['a declared non-WGS84 CRS', JSON.stringify({ type: 'FeatureCollection', crs: { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::2056' } }, features: [] }), 'COORDINATES_OUT_OF_RANGE', /EPSG::2056/],
  ])('%s', (_label, text, code, message) => {
    // Act
    const error = rejection(text);

    // Assess
    expect(error.code).toBe(code);
    expect(error.message.startsWith(`${code}: `)).toBe(true);
    expect(error.message).toMatch(message);
  });

  it('rejects a polygon whose bounding box exceeds the limit although its area does not', () => {
    // Prepare: a thin diagonal sliver, tiny in area, whose lat/lon box is about 1.2 million km²
    const sliver = { type: 'Polygon', coordinates: [[[0, 0], [10, 10], [10, 10.001], [0, 0]]] };
    const text = collection(feature({ type: 'Polygon', coordinates: square(50, 50, 0.01) }), feature(sliver, { name: 'Sliver' }));

    // Act
    const error = rejection(text, { aoiAreaLimitSqM: 100e6 });

    // Assess
    expect(error.code).toBe('AREA_TOO_LARGE');
    expect(error.message).toMatch(/feature 1 \('Sliver'\): its longitude\/latitude bounding box covers 1,2\d\d,\d\d\d(\.\d)? km², more than the account's AOI limit of 100 km²/);
  });

  it('rejects a file over maxBytes before parsing it', () => {
    // Act
    const error = rejection(' '.repeat(2000), { maxBytes: 1000 });

    // Assess
    expect(error.code).toBe('FILE_TOO_LARGE');
  });
});

describe('parseAoi combines polygons into one valid geometry', () => {
  it('dissolves neighbours that share an edge, so the combined geometry stays valid', () => {
    // Prepare: two quarters side by side, as in a neighbourhood map
    const text = collection(feature({ type: 'Polygon', coordinates: square(7, 46, 0.01) }), feature({ type: 'Polygon', coordinates: square(7.01, 46, 0.01) }));

    // Act
    const aoi = parseAoi(text);

    // Assess: one polygon whose area is the sum of both, each feature kept on its own
    expect(aoi.features).toHaveLength(2);
    expect(aoi.geometry.type).toBe('Polygon');
    expect(aoi.areaSqM).toBeCloseTo(aoi.features[0]!.areaSqM + aoi.features[1]!.areaSqM, -2);
  });

  it('counts overlapping polygons once', () => {
    // Prepare: the same square twice
    const text = collection(feature({ type: 'Polygon', coordinates: square(7, 46, 0.01) }), feature({ type: 'Polygon', coordinates: square(7, 46, 0.01) }));

    // Act
    const aoi = parseAoi(text);

    // Assess
    expect(aoi.geometry.type).toBe('Polygon');
    expect(aoi.areaSqM).toBeCloseTo(aoi.features[0]!.areaSqM, -2);
  });

  it('keeps disjoint polygons as the parts of a MultiPolygon', () => {
    // Act
    const aoi = parseAoi(collection(feature({ type: 'Polygon', coordinates: square(7, 46, 0.01) }), feature({ type: 'Polygon', coordinates: square(8, 46, 0.01) })));

    // Assess
    expect(aoi.geometry.type).toBe('MultiPolygon');
    expect((aoi.geometry as { coordinates: unknown[] }).coordinates).toHaveLength(2);
  });
});

describe('checkProcessingGeometry', () => {
  it('rejects a file whose merged polygons exceed the AOI box limit, and points at splitFeatures', () => {
    // Prepare: Basel's quarters each pass the 1,000 km² box limit, their union does not
    const aoi = parseAoi(testdata('basel.geojson'), { aoiAreaLimitSqM: 1e9 });

    // Act
    let error: unknown;
    try {
      checkProcessingGeometry(aoi.geometry, 1e9, 'basel.geojson');
    } catch (caught) {
      error = caught;
    }

    // Assess
    expect(error).toBeInstanceOf(InputRejected);
    expect((error as InputRejected).code).toBe('AREA_TOO_LARGE');
    expect((error as Error).message).toContain('splitFeatures');
  });

  it('accepts a merged area whose parts stay under the limit', () => {
    // Prepare
    const aoi = parseAoi(testdata('bern-quarters.geojson'), { aoiAreaLimitSqM: 1e9 });

    // Act / Assess
    expect(() => checkProcessingGeometry(aoi.geometry, 1e9, 'bern-quarters.geojson')).not.toThrow();
  });
});
