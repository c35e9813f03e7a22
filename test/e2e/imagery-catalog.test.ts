/**
 * A GeoJSON that asks for a catalog search runs end to end on the local
 * bridge: the product the rule picks (checked against the simulator's own
 * catalog answer) is the one processed with imagerySearch, it is recorded in
 * the ledger, the Job Succeeded event and job.json; a search that finds
 * nothing is REJECTED NO_IMAGERY with what was searched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_EMAIL, type LocalBridge } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { MapflowClient } from '../../functions/mapflow/index.ts';
import { pickProduct, searchBody, parseImagerySearch } from '../../functions/jobs/imagery-search.ts';
import { LIVE_SHAPES, listKeys, readText, squareAoi, startTestBridge, tempFile } from './helpers.ts';
import { checkEventsFile } from '../support/validate-events.ts';

describe('catalog-driven GeoJSON, end to end', () => {
  let bridge: LocalBridge;

  beforeAll(async () => {
    // The simulated provider keeps the processing AWAITING from 5 % to 30 % of
    // its 10 s run (2.5 s); polls every 250 ms see that window on a loaded machine.
    bridge = await startTestBridge({ simulator: { processingSeconds: 10, seed: 7 }, waitOverridesMs: { 'Wait For Slot': 200, 'Wait For Processing': 250 } });
  });
  afterAll(async () => {
    await bridge?.close();
  });

  it('picks the sharpest product, processes it with imagerySearch (through AWAITING) and records the choice', async () => {
    // Prepare
    const search = { search: { from: '2022-01-01', to: '2025-06-01', maxCloudCover: 30, pick: 'sharpest' } };
    const text = squareAoi({ mapflow: { imagery: search } });
    const geometry = JSON.parse(text).features[0].geometry;
    // The local bridge puts the simulator's token in the environment, as a Lambda function gets it.
    const client = new MapflowClient({ baseUrl: bridge.endpoints.mapflow, token: process.env.MAPFLOW_TOKEN!, email: LOCAL_EMAIL });
    const spec = parseImagerySearch(search);
    const expected = pickProduct((await client.searchCatalog(searchBody(spec, geometry))).images, spec, geometry);
    expect(expected).toBeDefined();
    // Act
    const { jobId } = await bridge.putInbox(await tempFile('catalog.geojson', text), 'catalog.geojson');
    const row = await bridge.waitForJob(jobId, { timeoutMs: 180_000 });
    // Assess: the ledger
    expect(row?.status).toBe('SUCCEEDED');
    expect(row?.imagery).toMatchObject({ productId: expected!.product.id, providerName: expected!.product.providerName, rule: 'sharpest', intersectionPercent: 100 });
    expect(row?.imagery?.candidates).toBe(expected!.candidates);
    // Assess: job.json has the choice and the request Mapflow got, with the product as its source
    const keys = await listKeys(bridge.s3, bridge.bucket, row!.resultPrefix!);
    const jobJson = JSON.parse(await readText(bridge.s3, bridge.bucket, keys.find((k) => k.endsWith('/job.json'))!));
    expect(jobJson.imagery.productId).toBe(expected!.product.id);
    // The provider lower-cased and the product's zoom, as Geoalert's plugin sends them (mapflow-qgis entity/provider/default.py lines 47-53)
    expect(jobJson.request.params.sourceParams).toEqual({
      imagerySearch: { dataProvider: expected!.product.providerName!.toLowerCase(), imageIds: [expected!.product.id], zoom: Number(expected!.product.zoom) },
    });
    // Assess: the events: the processing waited for the provider (AWAITING), the final one carries the choice
    const events = (await readEvents(bridge.eventsFile)).filter((e) => e.detail.jobId === jobId);
    expect(events.flatMap((e) => e.detail.messages ?? []).join('\n')).toMatch(/is AWAITING/);
    expect(events.find((e) => e.detailType === 'Job Succeeded')?.detail.imagery?.productId).toBe(expected!.product.id);
    expect((await checkEventsFile(bridge.eventsFile)).problems).toEqual([]);
  }, 240_000);

  it('REJECTS a search that finds nothing as NO_IMAGERY, saying what was searched', async () => {
    // Prepare: the simulator's catalog holds nothing acquired after 2025-06-01
    const text = squareAoi({ west: 7.43, mapflow: { imagery: { search: { from: '2030-01-01', providers: ['maxar'], pick: 'newest' } } } });
    // Act
    const { jobId } = await bridge.putInbox(await tempFile('nothing.geojson', text), 'nothing.geojson');
    const row = await bridge.waitForJob(jobId, { timeoutMs: 180_000 });
    // Assess
    expect(row?.status).toBe('REJECTED');
    expect(row?.error?.code).toBe('NO_IMAGERY');
    expect(row?.error?.message).toMatch(/acquired from 2030-01-01.*providers maxar/);
    expect(row?.processingId).toBeUndefined();
    const report = JSON.parse(await readText(bridge.s3, bridge.bucket, row!.reportKey!));
    expect(report.code).toBe('NO_IMAGERY');
  }, 240_000);
});

describe('catalog-driven GeoJSON against the live service (--real-shapes)', () => {
  let bridge: LocalBridge;

  beforeAll(async () => {
    bridge = await startTestBridge({ simulator: { ...LIVE_SHAPES, processingSeconds: 2, seed: 7 }, waitOverridesMs: { 'Wait For Slot': 200, 'Wait For Processing': 250 } });
  });
  afterAll(async () => {
    await bridge?.close();
  });

  it('SUCCEEDS with a mixed-case provider, a product without cloud cover or angles, and minIntersection 50, billing only the covered area', async () => {
    // Prepare: the live catalog spells OrbView in mixed case and gives its scenes no cloud cover or off-nadir angle
    const search = { search: { providers: ['OrbView'], maxCloudCover: 20, maxOffNadir: 10, minIntersection: 50, pick: 'newest' } };
    // (at this place the newest OrbView scene, seed 7, covers about half of the square)
    const text = squareAoi({ west: 7.41, mapflow: { imagery: search } });
    const geometry = JSON.parse(text).features[0].geometry;
    const client = new MapflowClient({ baseUrl: bridge.endpoints.mapflow, token: process.env.MAPFLOW_TOKEN!, email: LOCAL_EMAIL });
    const spec = parseImagerySearch(search);
    const expected = pickProduct((await client.searchCatalog(searchBody(spec, geometry))).images, spec, geometry)!;
    // (null on the wire; the client reads a null number as absent)
    expect(expected.product.providerName).toBe('OrbView');
    expect([expected.product.cloudCover, expected.product.offNadirAngle]).toEqual([undefined, undefined]);
    expect(expected.intersectionPercent).toBeGreaterThanOrEqual(50);
    expect(expected.intersectionPercent).toBeLessThan(100);
    const aoiKm2 = (await import('../../functions/aoi/geodesic-area.ts')).geodesicAreaSqM(geometry) / 1e6;
    // Act
    const { jobId } = await bridge.putInbox(await tempFile('partial.geojson', text), 'partial.geojson');
    const row = await bridge.waitForJob(jobId, { timeoutMs: 180_000 });
    // Assess: done, on the picked product
    expect(row?.status, JSON.stringify(row?.error)).toBe('SUCCEEDED');
    expect(row?.imagery).toMatchObject({ productId: expected.product.id, providerName: 'OrbView' });
    // Assess: Mapflow processed (and billed) the covered share of the AOI only
    const processing = await client.getProcessing(row!.processingId!);
    const processedKm2 = Number((processing as { aoiArea?: number }).aoiArea ?? processing.area) / 1e6;
    expect(processedKm2 / aoiKm2).toBeCloseTo(expected.intersectionPercent / 100, 2);
    expect(row!.areaSqKm! / aoiKm2).toBeCloseTo(expected.intersectionPercent / 100, 2);
    const keys = await listKeys(bridge.s3, bridge.bucket, row!.resultPrefix!);
    const jobJson = JSON.parse(await readText(bridge.s3, bridge.bucket, keys.find((k) => k.endsWith('/job.json'))!));
    expect(jobJson.request.params.sourceParams).toEqual({ imagerySearch: { dataProvider: 'orbview', imageIds: [expected.product.id], zoom: 17 } });
  }, 240_000);
});
