/**
 * Catalog imagery search: the `imagery.search` spec is validated, each pick
 * rule picks its product, filters and AOI coverage are checked here whatever
 * the server returned, and the search body carries the filters.
 */
import { describe, expect, it } from 'vitest';
import { coveragePercent, parseImagerySearch, pickProduct, searchBody, takeImagerySearch, type ImagerySearchSpec } from '../../../../../functions/jobs/imagery-search.ts';
import type { CatalogProduct } from '../../../../../functions/mapflow/index.ts';
import { InputRejected } from '../../../../../functions/core/errors.ts';

// AOI: 0.01° square at (7.44, 46.94).
const aoi = { type: 'Polygon' as const, coordinates: [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]] };
const box = (w: number, s: number, e: number, n: number) => ({ type: 'Polygon' as const, coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] });
const covering = box(7.43, 46.93, 7.46, 46.96);
const product = (id: string, fields: Partial<CatalogProduct>): CatalogProduct => ({
  id, productType: 'Scene', providerName: 'maxar', acquisitionDate: '2025-01-01T10:00:00Z', pixelResolution: 0.5, cloudCover: 10, offNadirAngle: 5, footprint: covering, ...fields,
});

// One product best by each rule, plus decoys that a filter or the coverage must exclude.
const products: CatalogProduct[] = [
  product('NEWEST', { acquisitionDate: '2025-05-01T10:00:00Z', pixelResolution: 0.5, cloudCover: 8 }),
  product('SHARPEST', { acquisitionDate: '2025-02-01T10:00:00Z', pixelResolution: 0.3, cloudCover: 9 }),
  product('CLEAREST', { acquisitionDate: '2025-03-01T10:00:00Z', pixelResolution: 0.5, cloudCover: 1, providerName: 'pleiades' }),
  // Newer, sharper and clearer than all, but covers only the western half of the AOI.
  product('HALF', { acquisitionDate: '2025-05-20T10:00:00Z', pixelResolution: 0.2, cloudCover: 0, footprint: box(7.43, 46.93, 7.445, 46.96) }),
  // Newest of all but too cloudy for maxCloudCover 20, then too tilted, then unavailable.
  product('CLOUDY', { acquisitionDate: '2025-05-30T10:00:00Z', cloudCover: 60 }),
  product('TILTED', { acquisitionDate: '2025-05-29T10:00:00Z', offNadirAngle: -31 }),
  { ...product('GONE', { acquisitionDate: '2025-05-28T10:00:00Z' }), available: false } as CatalogProduct,
  // Mosaic with an unknown (0) pixel size: never the sharpest.
  product('MOSAIC', { productType: 'Mosaic', acquisitionDate: '2024-01-01T10:00:00Z', pixelResolution: 0, cloudCover: 2, providerName: 'maxar_vivid' }),
];
const spec = (pick: ImagerySearchSpec['pick'], extra: Partial<ImagerySearchSpec> = {}): ImagerySearchSpec => ({ pick, maxCloudCover: 20, maxOffNadir: 30, ...extra });

describe('pick rules', () => {
  it('newest: the latest acquisition that passes the filters and covers the AOI', () => {
    expect(pickProduct(products, spec('newest'), aoi)).toMatchObject({ product: { id: 'NEWEST' }, intersectionPercent: 100, candidates: 4 });
  });

  it('sharpest: the smallest pixel size; an unknown size (0) is never the sharpest', () => {
    expect(pickProduct(products, spec('sharpest'), aoi)?.product.id).toBe('SHARPEST');
  });

  it('least-cloud: the smallest cloud cover', () => {
    expect(pickProduct(products, spec('least-cloud'), aoi)?.product.id).toBe('CLEAREST');
  });

  it('ties go to the newer product', () => {
    const twins = [product('OLD', { cloudCover: 1, acquisitionDate: '2024-01-01T00:00:00Z' }), product('NEW', { cloudCover: 1, acquisitionDate: '2024-06-01T00:00:00Z' })];
    expect(pickProduct(twins, spec('least-cloud'), aoi)?.product.id).toBe('NEW');
  });

  it('a lower minIntersection lets a partial product in; providers and dates filter', () => {
    expect(pickProduct(products, spec('newest', { minIntersection: 40 }), aoi)?.product.id).toBe('HALF');
    expect(pickProduct(products, spec('newest', { providers: ['PLEIADES'] }), aoi)?.product.id).toBe('CLEAREST');
    expect(pickProduct(products, spec('newest', { to: '2025-02-15T00:00:00.000Z' }), aoi)?.product.id).toBe('SHARPEST');
    expect(pickProduct(products, spec('newest', { from: '2026-01-01T00:00:00.000Z' }), aoi)).toBeUndefined();
  });
});

describe('coverage', () => {
  it('is the share of the AOI inside the footprint, from the geometry', () => {
    expect(coveragePercent(product('a', {}), aoi)).toBe(100);
    expect(coveragePercent(product('b', { footprint: box(7.43, 46.93, 7.445, 46.96) }), aoi)).toBeCloseTo(50, 0);
    expect(coveragePercent(product('c', { footprint: box(8, 47, 8.1, 47.1) }), aoi)).toBe(0);
    expect(coveragePercent(product('d', { footprint: undefined }), aoi)).toBeUndefined();
  });
});

describe('the imagery.search spec', () => {
  it('takes dates (a day means all of it), limits, providers, and a rule', () => {
    // Act
    const parsed = parseImagerySearch({ search: { from: '2025-06-01', to: '2025-09-30', maxCloudCover: 10, maxOffNadir: 20, minResolution: 0.3, providers: ['maxar'], pick: 'sharpest', zoom: 18 } });
    // Assess
    expect(parsed).toEqual({ pick: 'sharpest', from: '2025-06-01T00:00:00.000Z', to: '2025-09-30T23:59:59.999Z', maxCloudCover: 10, maxOffNadir: 20, minResolution: 0.3, providers: ['maxar'], zoom: 18 });
    expect(searchBody(parsed, aoi)).toMatchObject({
      acquisitionDateFrom: '2025-06-01T00:00:00.000Z', acquisitionDateTo: '2025-09-30T23:59:59.999Z', maxCloudCover: 10, maxOffNadirAngle: 20,
      minResolution: 0.3, dataProviders: ['maxar'], minAoiIntersectionPercent: 100, hideUnavailable: true, sortBy: 'PIXEL_RESOLUTION', sortOrder: 'ASC',
    });
  });

  it.each([
    [{ search: { pick: 'cheapest' } }, /'pick' must be one of newest, sharpest, least-cloud/],
    [{ search: { pick: 'newest', from: 'last summer' } }, /'from' must be an ISO 8601 date/],
    [{ search: { pick: 'newest', from: '2025-09-01', to: '2025-06-01' } }, /is after 'to'/],
    [{ search: { pick: 'newest', maxCloudCover: 101 } }, /'maxCloudCover' must be a number from 0 to 100/],
    [{ search: { pick: 'newest', providers: [] } }, /'providers' must be a list/],
    [{ search: { pick: 'newest', token: 'x' } }, /unknown key 'token'/],
    [{ fixed: 'abc' }, /write it as/],
  ])('refuses %j', (value, message) => {
    expect(() => parseImagerySearch(value)).toThrow(InputRejected);
    expect(() => parseImagerySearch(value)).toThrow(message);
  });

  it('is taken out of the mapflow member (the rest stays), or from the route', () => {
    const member = { model: '🌲 Forest', imagery: { search: { pick: 'newest' } } };
    expect(takeImagerySearch(member)).toEqual({ member: { model: '🌲 Forest' }, search: { pick: 'newest' } });
    expect(takeImagerySearch({ imagery: { search: { pick: 'newest' } } }).member).toBeUndefined();
    expect(takeImagerySearch(undefined, { search: { pick: 'least-cloud' } })).toEqual({ member: undefined, search: { pick: 'least-cloud' } });
    expect(takeImagerySearch({ zoom: 17 })).toEqual({ member: { zoom: 17 } });
  });
});

describe('a route with imagery.search', () => {
  it('is accepted by the routes parser and its search used when the file has none', async () => {
    // Prepare
    const { parseRoutes } = await import('../../../../../functions/routing/index.ts');
    // Act
    const routes = parseRoutes(JSON.stringify({ routes: [{ name: 'default', prefix: '', imagery: { search: { pick: 'least-cloud', maxCloudCover: 5 } } }] }));
    const route = routes.routes[0]!;
    // Assess
    expect(takeImagerySearch({ model: 'x' }, route.imagery)).toEqual({ member: { model: 'x' }, search: { pick: 'least-cloud', maxCloudCover: 5 } });
    expect(takeImagerySearch({ imagery: { search: { pick: 'newest' } } }, route.imagery).search).toEqual({ pick: 'newest' });
    expect(() => parseRoutes(JSON.stringify({ routes: [{ name: 'default', prefix: '', imagery: { pick: 'newest' } }] }))).toThrow(/'imagery' must be/);
  });
});
