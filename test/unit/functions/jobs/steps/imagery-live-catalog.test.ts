/**
 * Catalog-driven jobs built as Geoalert's own client builds them (issue 25,
 * points 1 and 2). Each test names the source it follows.
 */
import { describe, expect, it } from 'vitest';
import area from '@turf/area';
import { cropToFootprint, findImageryForJob, passesFilters, pickProduct, productZoom, type ImagerySearchSpec } from '../../../../../functions/jobs/imagery-search.ts';
import { cropDraft } from '../../../../../functions/jobs/steps/plan-processing.ts';
import { MapflowRequestError, type CatalogProduct, type MapflowClient } from '../../../../../functions/mapflow/index.ts';
import { InputRejected } from '../../../../../functions/core/errors.ts';
import type { StepContext } from '../../../../../functions/jobs/context.ts';

// AOI: 0.01° square at (7.44, 46.94); a footprint over its western half.
const aoi = { type: 'Polygon' as const, coordinates: [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]] };
const box = (w: number, s: number, e: number, n: number) => ({ type: 'Polygon' as const, coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] });
const westHalf = box(7.43, 46.93, 7.445, 46.96);
const product = (id: string, fields: Partial<CatalogProduct>): CatalogProduct => ({
  id, productType: 'Image', providerName: 'Maxar', acquisitionDate: '2025-01-01T10:00:00Z', pixelResolution: 0.5, cloudCover: 10, offNadirAngle: 5, footprint: box(7.43, 46.93, 7.46, 46.96), ...fields,
});

function fakeContext(): { ctx: StepContext; ledger: unknown[] } {
  const ledger: unknown[] = [];
  const ctx = {
    ledger: { update: async (_id: string, patch: unknown) => { ledger.push(patch); } },
    logger: { info: () => undefined, warn: () => undefined },
  } as unknown as StepContext;
  return { ctx, ledger };
}

const clientAnswering = (images: CatalogProduct[]): MapflowClient => ({ searchCatalog: async () => ({ images }) }) as unknown as MapflowClient;

describe('null metadata matches any filter (mapflow-qgis spec/002_D_search_api.md lines 31-35, 45-48)', () => {
  const spec: ImagerySearchSpec = { pick: 'newest', from: '2024-01-01T00:00:00.000Z', to: '2025-12-31T23:59:59.999Z', maxCloudCover: 20, maxOffNadir: 10, minResolution: 0.3, maxResolution: 0.6 };

  it('passes a product whose cloud cover, off-nadir angle, date and pixel size are null', () => {
    // Prepare: a My Imagery item carries empty metadata
    const bare = product('MY-IMAGE', { cloudCover: null as never, offNadirAngle: null as never, acquisitionDate: null as never, pixelResolution: null as never });
    // Act / Assess
    expect(passesFilters(bare, spec)).toBe(true);
  });

  it('passes a mosaic whose pixel size is 0.0 (not known), and still drops a known value out of bounds', () => {
    expect(passesFilters(product('MOSAIC', { productType: 'Mosaic', pixelResolution: 0 }), spec)).toBe(true);
    expect(passesFilters(product('CLOUDY', { cloudCover: 40 }), spec)).toBe(false);
    expect(passesFilters(product('COARSE', { pixelResolution: 1 }), spec)).toBe(false);
    expect(passesFilters(product('OLD', { acquisitionDate: '2020-01-01T00:00:00Z' }), spec)).toBe(false);
  });

  it('picks such a product rather than ending NO_IMAGERY', () => {
    const picked = pickProduct([product('BARE', { cloudCover: null as never, offNadirAngle: null as never })], spec, aoi);
    expect(picked?.product.id).toBe('BARE');
  });
});

describe('the imagerySearch source as the plugin builds it (mapflow-qgis mapflow/entity/provider/default.py lines 42-53)', () => {
  it('lower-cases the catalog\'s provider name and takes the zoom from the chosen product', async () => {
    // Prepare: the catalog spells the provider in mixed case; the product's zoom is a string
    const { ctx, ledger } = fakeContext();
    const client = clientAnswering([product('P1', { providerName: 'Maxar', zoom: '18' })]);
    // Act
    const found = await findImageryForJob(ctx, client, 'job-1', aoi, { pick: 'newest' });
    // Assess
    expect(found.sourceParams).toEqual({ imagerySearch: { dataProvider: 'maxar', imageIds: ['P1'], zoom: 18 } });
    expect(ledger).toEqual([{ imagery: expect.objectContaining({ productId: 'P1', providerName: 'Maxar' }) }]);
  });

  it('uses the product\'s zoom over the search\'s (mapflow-qgis mapflow/mapflow.py lines 2031-2032: the zoom box is disabled for search results), and the search\'s when the product has none', async () => {
    const { ctx } = fakeContext();
    expect((await findImageryForJob(ctx, clientAnswering([product('P1', { zoom: '17' })]), 'j', aoi, { pick: 'newest', zoom: 19 })).sourceParams)
      .toMatchObject({ imagerySearch: { zoom: 17 } });
    expect((await findImageryForJob(ctx, clientAnswering([product('P2', {})]), 'j', aoi, { pick: 'newest', zoom: 19 })).sourceParams)
      .toMatchObject({ imagerySearch: { zoom: 19 } });
    expect(productZoom(product('P3', { zoom: 'high' }))).toBeUndefined();
  });
});

describe('the AOI cropped to the chosen footprint (mapflow-qgis area_calculator_service.py lines 177-179, 231-244; processing_service.py lines 437-445)', () => {
  it('keeps only the covered half of the AOI, so only that is priced and billed', () => {
    // Act
    const cropped = cropToFootprint(aoi, westHalf)!;
    // Assess
    expect(area(cropped as never) / area(aoi as never)).toBeCloseTo(0.5, 2);
  });

  it('gives a part its cropped geometry and area, and refuses a part outside the footprint as NO_IMAGERY', () => {
    // Prepare
    const draft = { index: 0, name: 'a', displayName: 'a', geometry: aoi, areaSqM: area(aoi as never) };
    // Act
    const cropped = cropDraft(draft, westHalf);
    // Assess
    expect(cropped.areaSqM / draft.areaSqM).toBeCloseTo(0.5, 2);
    expect(cropDraft(draft, box(7.43, 46.93, 7.46, 46.96))).toBe(draft);
    expect(() => cropDraft(draft, box(8, 47, 8.1, 47.1))).toThrow(InputRejected);
    expect(() => cropDraft(draft, box(8, 47, 8.1, 47.1))).toThrow(/outside the footprint/);
  });
});

describe('a refused or too large search ends REJECTED with a reason (mapflow-qgis spec/002_F_plan_processing_api.md lines 328-341)', () => {
  it('REJECTS CATALOG_SEARCH_REFUSED with Mapflow\'s message when the search is refused', async () => {
    // Prepare
    const { ctx } = fakeContext();
    const refusal = new MapflowRequestError('Mapflow POST /catalog/meta answered HTTP 400: BAD_REQUEST: The search area is too large', { method: 'POST', path: '/catalog/meta', attempts: 1, status: 400, code: 'BAD_REQUEST' });
    const client = { searchCatalog: async () => { throw refusal; } } as unknown as MapflowClient;
    // Act
    const error = await findImageryForJob(ctx, client, 'j', aoi, { pick: 'newest' }).catch((e: unknown) => e);
    // Assess
    expect(error).toBeInstanceOf(InputRejected);
    expect((error as InputRejected).code).toBe('CATALOG_SEARCH_REFUSED');
    expect((error as Error).message).toMatch(/The search area is too large/);
    expect((error as Error).cause).toBe(refusal);
  });

  it('REJECTS SEARCH_AREA_TOO_LARGE above searchAreaLimit without searching', async () => {
    const { ctx } = fakeContext();
    let searched = false;
    const client = { searchCatalog: async () => { searched = true; return { images: [] }; } } as unknown as MapflowClient;
    const error = await findImageryForJob(ctx, client, 'j', aoi, { pick: 'newest' }, 100_000).catch((e: unknown) => e);
    expect((error as InputRejected).code).toBe('SEARCH_AREA_TOO_LARGE');
    expect(searched).toBe(false);
  });
});
