/**
 * The imagery catalog: deterministic synthetic products around any AOI, every
 * filter of the search body, sort, limit and offset, both response shapes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/index.ts';
import { BERN, call, start, v2Body, finished } from './helpers.ts';

let sim: RunningSimulator;
let real: RunningSimulator;
beforeAll(async () => {
  sim = await start({ seed: 7, processingSeconds: 0.5 });
  real = await start({ seed: 7, realShapes: true });
});
afterAll(async () => {
  await sim.close();
  await real.close();
});

type Product = Record<string, any>;
const search = async (body: Record<string, unknown>, target = sim) => call(target, 'POST', '/catalog/meta', { aoi: BERN, ...body });

describe('POST /catalog/meta', () => {
  it('answers a bare array of Scenes and Mosaics with every spec field, the same on every call', async () => {
    // Act
    const first = await search({});
    const second = await search({});
    // Assess
    expect(first.status).toBe(200);
    expect(Array.isArray(first.json)).toBe(true);
    expect(first.json).toEqual(second.json);
    const types = new Set(first.json.map((p: Product) => p.productType));
    expect(types).toEqual(new Set(['Scene', 'Mosaic']));
    for (const product of first.json as Product[]) {
      expect(product).toMatchObject({
        id: expect.any(String), acquisitionDate: expect.any(String), sensor: expect.any(String), pixelResolution: expect.any(Number),
        cloudCover: expect.any(Number), offNadirAngle: expect.any(Number), colorBandOrder: expect.any(String), providerName: expect.any(String),
      });
      if (product.productType === 'Scene') {
        expect(product).toMatchObject({ previewType: 'png', footprint: { type: 'Polygon' } });
      } else {
        expect(product).toMatchObject({ previewType: 'xyz', footprint: { type: 'MultiPolygon' } });
        expect(product.previewUrl).toContain('{z}/{x}/{-y}');
      }
    }
  });

  it('applies each filter', async () => {
    // Prepare
    const all: Product[] = (await search({})).json;
    const dates = all.map((p) => p.acquisitionDate).sort();
    const from = dates[Math.floor(dates.length / 3)]!;
    const to = dates[Math.floor((2 * dates.length) / 3)]!;
    // Act
    const byDate: Product[] = (await search({ acquisitionDateFrom: from, acquisitionDateTo: to })).json;
    const byResolution: Product[] = (await search({ minResolution: 0.35, maxResolution: 0.5 })).json;
    const byCloud: Product[] = (await search({ maxCloudCover: 20 })).json;
    const byNadir: Product[] = (await search({ minOffNadirAngle: 10, maxOffNadirAngle: 25 })).json;
    const byOverlap: Product[] = (await search({ minAoiIntersectionPercent: 90 })).json;
    const available: Product[] = (await search({ hideUnavailable: true })).json;
    const byProvider: Product[] = (await search({ dataProviders: ['MAXAR'] })).json;
    const mosaics: Product[] = (await search({ productTypes: ['MOSAIC'] })).json;
    const images: Product[] = (await search({ productTypes: ['IMAGE'] })).json;
    // Assess
    const strictSubset = (subset: Product[], check: (p: Product) => boolean) => {
      expect(subset.length).toBeGreaterThan(0);
      expect(subset.length).toBeLessThan(all.length);
      expect(subset.every(check)).toBe(true);
      expect(all.filter(check).length).toBe(subset.length);
    };
    strictSubset(byDate, (p) => p.acquisitionDate >= from && p.acquisitionDate <= to);
    strictSubset(byResolution, (p) => p.pixelResolution >= 0.35 && p.pixelResolution <= 0.5);
    strictSubset(byCloud, (p) => p.cloudCover <= 20);
    strictSubset(byNadir, (p) => Math.abs(p.offNadirAngle) >= 10 && Math.abs(p.offNadirAngle) <= 25);
    strictSubset(byOverlap, (p) => p.aoiIntersectionPercent >= 90);
    strictSubset(available, (p) => p.available === true);
    strictSubset(byProvider, (p) => p.providerName === 'maxar');
    strictSubset(mosaics, (p) => p.productType === 'Mosaic');
    strictSubset(images, (p) => p.productType === 'Scene');
  });

  it('sorts, limits and pages', async () => {
    // Act
    const byCloudAsc: Product[] = (await search({ sortBy: 'CLOUD_COVER', sortOrder: 'ASC' })).json;
    const byDateDesc: Product[] = (await search({})).json;
    const page1: Product[] = (await search({ limit: 5, offset: 0 })).json;
    const page2: Product[] = (await search({ limit: 5, offset: 5 })).json;
    // Assess
    const clouds = byCloudAsc.map((p) => p.cloudCover);
    expect(clouds).toEqual([...clouds].sort((a, b) => a - b));
    const dates = byDateDesc.map((p) => p.acquisitionDate);
    expect(dates).toEqual([...dates].sort().reverse());
    expect(page1).toEqual(byDateDesc.slice(0, 5));
    expect(page2).toEqual(byDateDesc.slice(5, 10));
  });

  it('answers the live envelope with productType Image under realShapes', async () => {
    // Act
    const answer = await search({ limit: 3, offset: 1 }, real);
    const spec: Product[] = (await search({})).json;
    // Assess
    expect(answer.json).toMatchObject({ images: expect.any(Array), total: spec.length, limit: 3, offset: 1 });
    expect(answer.json.images).toHaveLength(3);
    expect(answer.json.images.map((p: Product) => p.productType).every((t: string) => t === 'Image' || t === 'Mosaic')).toBe(true);
  });

  it('refuses a search area over the AOI limit and a malformed body', async () => {
    // Prepare
    const big = { type: 'Polygon', coordinates: [[[7, 46.5], [7.5, 46.5], [7.5, 47], [7, 47], [7, 46.5]]] };
    // Act
    const tooBig = await call(sim, 'POST', '/catalog/meta', { aoi: big });
    const noAoi = await call(sim, 'POST', '/catalog/meta', {});
    const badSort = await search({ sortOrder: 'SIDEWAYS' });
    // Assess
    expect(tooBig.status).toBe(400);
    expect(tooBig.json.params).toMatchObject({ aoiAreaLimit: 1e9 });
    expect(noAoi.status).toBe(400);
    expect(badSort.status).toBe(400);
  });

  it('a catalog product can be processed (imagerySearch v2 and the v1 data_provider + url form)', async () => {
    // Prepare
    const scene: Product = (await search({ productTypes: ['IMAGE'], dataProviders: ['maxar'], limit: 1 })).json[0];
    // Act
    const v2 = await call(sim, 'POST', '/processings/v2', v2Body({ params: { sourceParams: { imagerySearch: { dataProvider: scene.providerName, imageIds: [scene.id] } } } }));
    const v1 = await call(sim, 'POST', '/processings', { wdName: 'Buildings', geometry: BERN, params: { data_provider: scene.providerName, url: scene.id } });
    // Assess
    expect((await finished(sim, v2.json.id)).status).toBe('OK');
    expect((await finished(sim, v1.json.id)).status).toBe('OK');
  });
});
