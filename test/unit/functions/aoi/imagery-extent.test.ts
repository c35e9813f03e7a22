/**
 * Issue 38: input whose imagery cannot exist is refused before anything is
 * spent: a sliver narrower than one pixel of the finest zoom, a polygon
 * beyond Web Mercator's ±85.05113° for a tile provider, a cap over a pole.
 */
import { describe, expect, it } from 'vitest';
import type { Polygon } from 'geojson';
import { checkTileImageryExists, isWebMercatorTileSource, WEB_MERCATOR_MAX_LAT } from '../../../../functions/aoi/imagery-extent.ts';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';

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
const polygon = (w: number, s: number, e: number, n: number): Polygon => ({ type: 'Polygon', coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] });
const mapbox = { dataProvider: { providerName: 'mapbox', zoom: 18 } };

describe('slivers', () => {
  it.each([
    ['1e-9° wide', polygon(7.44, 46.94, 7.44 + 1e-9, 46.95), /1\.0e-9° wide, narrower than one pixel/],
    ['1e-9° high', polygon(7.44, 46.94, 7.45, 46.94 + 1e-9), /1\.0e-9° high, narrower than one pixel/],
  ])('refuses a polygon %s (was: billed at the 1 km² minimum)', (_label, geometry, message) => {
    // Act
    const rejection = rejectionOf(() => parseAoi(JSON.stringify(geometry)));

    // Assess
    expect(rejection.code).toBe('INVALID_GEOMETRY');
    expect(rejection.message).toMatch(message);
  });

  it('accepts a 10 cm square, which pixels of zoom 22 (about 4 cm) can image', () => {
    // Act
    const aoi = parseAoi(JSON.stringify(polygon(7.44, 46.94, 7.44 + 1.3e-6, 46.94 + 0.9e-6)));

    // Assess
    expect(aoi.areaSqM).toBeGreaterThan(0.005);
  });
});

describe('beyond Web Mercator, for tile providers', () => {
  it('ends at atan(sinh(π))', () => {
    // Assess
    expect(WEB_MERCATOR_MAX_LAT).toBeCloseTo(85.0511287798, 9);
  });

  it('refuses a polygon at 86° N on Mapbox', () => {
    // Act
    const rejection = rejectionOf(() => checkTileImageryExists(polygon(10, 86, 10.5, 86.2), mapbox, 'arctic'));

    // Assess
    expect(rejection.code).toBe('NO_IMAGERY');
    expect(rejection.message).toMatch(/arctic lies wholly beyond 85\.05113° of latitude .* Web Mercator tiles of mapbox end/);
  });

  it('refuses a polygon wholly beyond -85.05113° on a URL source of XYZ tiles', () => {
    // Act
    const rejection = rejectionOf(() => checkTileImageryExists(polygon(10, -86.2, 10.5, -86), { userDefined: { sourceType: 'XYZ', url: 'https://t/{z}/{x}/{y}.png' } }, 'x'));

    // Assess
    expect(rejection.code).toBe('NO_IMAGERY');
  });

  it('refuses a cap over the North Pole, drawn without crossing the antimeridian', () => {
    // Prepare: 80° N to the pole, all the way round in two edges of 180°
    const cap: Polygon = { type: 'Polygon', coordinates: [[[-180, 80], [0, 80], [180, 80], [180, 90], [0, 90], [-180, 90], [-180, 80]]] };

    // Act
    const rejection = rejectionOf(() => checkTileImageryExists(cap, mapbox, 'cap'));

    // Assess
    expect(rejection.code).toBe('NO_IMAGERY');
    expect(rejection.message).toMatch(/cap reaches the North Pole/);
  });

  it('names the polygon of a MultiPolygon that lies beyond', () => {
    // Prepare
    const both = { type: 'MultiPolygon' as const, coordinates: [polygon(7.44, 46.94, 7.45, 46.95).coordinates, polygon(10, 86, 10.5, 86.2).coordinates] };

    // Act
    const rejection = rejectionOf(() => checkTileImageryExists(both, mapbox, 'file'));

    // Assess
    expect(rejection.message).toMatch(/^NO_IMAGERY: file, polygon 1 lies wholly beyond/);
  });

  it.each([
    ['a polygon reaching past 85.05113° from below it (its lower part has tiles)', polygon(10, 84.9, 10.5, 85.2), mapbox],
    ['86° N in catalog imagery', polygon(10, 86, 10.5, 86.2), { imagerySearch: { dataProvider: 'maxar', imageIds: ['a'] } }],
    ['86° N in a URL source in EPSG:4326', polygon(10, 86, 10.5, 86.2), { userDefined: { sourceType: 'xyz', url: 'https://t/{z}/{x}/{y}', crs: 'EPSG:4326' } }],
  ])('accepts %s', (_label, geometry, source) => {
    // Act / Assess
    expect(() => checkTileImageryExists(geometry, source, 'x')).not.toThrow();
  });

  it('knows which sources are Web Mercator tiles', () => {
    // Assess
    expect(isWebMercatorTileSource(mapbox)).toBe(true);
    expect(isWebMercatorTileSource({ userDefined: { sourceType: 'tms', url: 'u', crs: 'EPSG:3857' } })).toBe(true);
    expect(isWebMercatorTileSource({ userDefined: { sourceType: 'SENTINEL_L2A', url: 'S2A' } })).toBe(false);
    expect(isWebMercatorTileSource({ myImagery: { imageIds: ['i'] } })).toBe(false);
  });
});
