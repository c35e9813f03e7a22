/**
 * Issue 36 points 3 to 7 through the task handlers, against the simulator
 * playing the live service (--real-shapes): provider minimum areas of catalog
 * jobs, the AOI area limit of the target project, partial results of a FAILED
 * processing, mosaics that take any CRS and pixel size, and ordered scenes
 * that stay AWAITING.
 */
import { describe, expect, it, vi } from 'vitest';
import { tiff } from '../../../../packages/bench/fixtures/tiff.ts';
import type { Route } from '../../../../functions/routing/index.ts';
import { pickProduct, searchBody, type ImagerySearchSpec } from '../../../../functions/jobs/imagery-search.ts';
import { awaitedSeconds, awaitingAfter } from '../../../../functions/jobs/steps/poll-processing.ts';
import { MAX_AWAITING_SECONDS, awaitingPollsBound, awaitingWaitSeconds } from '../../../../functions/polling/poll-policy.ts';
import { Driver, dropInput, readJsonObject, readText, useBenches, type Bench, type BenchOptions } from '../../../support/workflow-harness.ts';

const benches = useBenches((options) => ({
  ...options,
  simulator: { realShapes: true, billingType: 'CREDITS', preprocessingSeconds: 0, queuedSeconds: 0.1, awaitingSeconds: 0.1, ...options.simulator },
}));
const open = (options?: BenchOptions): Promise<Bench> => benches.open(options);

/** A 64 x 64 px uint8 GeoTIFF near Bern: `bands` bands at `pixel` m, in UTM 32N or Web Mercator. */
function image(bands: number, pixel: number, epsg: 32632 | 3857 = 32632): Buffer {
  const size = 64;
  const origin: [number, number] = epsg === 32632 ? [380000, 5200000] : [824000, 5932000];
  return Buffer.from(tiff({ width: size, height: size, bands, bits: 8, blocks: [new Uint8Array(size * size * bands).fill(90)], geo: { epsg, origin, pixel } }));
}

describe('mosaics (mapflow-docs-en reference.rst lines 25-26: reprojected and resampled; only the band count must match)', () => {
  const shared: Route = { name: 'shared', prefix: 'shared/', mosaicName: 'one-collection' };

  it('adds an image of another CRS and pixel size to a mosaic', async () => {
    // Prepare
    const b = await open({ routes: [shared] });
    const first = await new Driver(b.ctx).runJob(await dropInput(benches.aws.s3, 'inbox/shared/a.tif', image(3, 0.5)));
    const start = await dropInput(benches.aws.s3, 'inbox/shared/b.tif', image(3, 0.8, 3857));

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(first.finish?.status).toBe('SUCCEEDED');
    expect(final.finish?.error).toBeUndefined();
    expect(final.finish?.status).toBe('SUCCEEDED');
    expect(final.mosaic?.mosaicId).toBe(first.mosaic?.mosaicId);
  });

  it('still refuses an image with another band count before the upload', async () => {
    // Prepare
    const b = await open({ routes: [shared] });
    await new Driver(b.ctx).runJob(await dropInput(benches.aws.s3, 'inbox/shared/a.tif', image(3, 0.5)));
    const start = await dropInput(benches.aws.s3, 'inbox/shared/rgba.tif', image(4, 0.5));
    const driver = new Driver(b.ctx);

    // Act
    const final = await driver.runJob(start);

    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'MOSAIC_MISMATCH' } });
    expect(final.finish?.error?.message).toMatch(/4 band\(s\) instead of 3/);
    expect(driver.calls.some((c) => c.state === 'Upload Image')).toBe(false);
  });
});

/** A rectangle of about 20 km² near Bern. */
const twentySqKm = JSON.stringify({
  type: 'FeatureCollection',
  features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[7.40, 46.92], [7.46, 46.92], [7.46, 46.96], [7.40, 46.96], [7.40, 46.92]]] } }],
});

describe('the AOI area limit of the target project (mapflow-qgis project_service.py lines 50-56)', () => {
  // This account may process 10 km² at once; the owner of the shared project 5,000 km².
  const sharedProject = { name: 'team-project', ownerEmail: 'owner@example.com', aoiAreaLimitSqM: 5e9 };
  const simulator = { limits: { aoiAreaLimitSqM: 1e7 }, sharedProject };

  it('processes 20 km² in a shared project whose owner may process more than this account', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'team', prefix: '', project: { name: 'team-project' }, creditBudget: 10_000 }], simulator });
    const start = await dropInput(benches.aws.s3, 'inbox/twenty.geojson', twentySqKm);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish?.error).toBeUndefined();
    expect(final.finish?.status).toBe('SUCCEEDED');
    const project = (await b.client.listProjects()).find((p) => p.name === 'team-project');
    expect(final.plan?.projectId).toBe(project?.id);
  });

  it('refuses the same 20 km² in the account\'s own project before anything is created', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'own', prefix: '', creditBudget: 10_000 }], simulator });
    const start = await dropInput(benches.aws.s3, 'inbox/twenty.geojson', twentySqKm);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish?.status).toBe('REJECTED');
    expect(final.finish?.error?.message).toMatch(/aoiAreaLimit|limit/);
    expect(b.sim.stats().processingsCreated).toBe(0);
  });
});

/** About 1 km² near Bern. */
const bernAoi = { type: 'Polygon' as const, coordinates: [[[7.44, 46.94], [7.453, 46.94], [7.453, 46.949], [7.44, 46.949], [7.44, 46.94]]] };
const bernFile = JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: bernAoi }] });

describe('provider minimum areas of catalog jobs (mapflow-qgis processing_service.py lines 175-235, mapflow.py lines 3069-3114)', () => {
  const search: ImagerySearchSpec = { pick: 'newest', minIntersection: 50 };
  const catalogRoute = (providers?: string[]): Route => ({ name: 'catalog', prefix: '', imagery: { search: { ...search, ...(providers && { providers }) } }, creditBudget: 10_000 });
  const live = { realShapes: true, billingType: 'CREDITS', preprocessingSeconds: 0, queuedSeconds: 0.1, awaitingSeconds: 0.1 } as const;

  it('uses the next candidate when the best one\'s provider needs more area than the AOI has', async () => {
    // Prepare: the provider of the product the rule picks first needs 1,000,000 km²
    const b = await open({ routes: [catalogRoute()] });
    const best = pickProduct((await b.client.searchCatalog(searchBody(search, bernAoi))).images, search, bernAoi)!.product;
    const provider = best.providerName!.toLowerCase();
    await b.restartSimulator({ ...live, catalogMinAreasSqKm: { [provider]: 1e6 } });
    const start = await dropInput(benches.aws.s3, 'inbox/bern.geojson', bernFile);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish?.error).toBeUndefined();
    expect(final.finish?.status).toBe('SUCCEEDED');
    const row = await b.ledger.get(start.jobId);
    expect(row?.imagery?.productId).not.toBe(best.id);
    expect(row?.imagery?.providerName.toLowerCase()).not.toBe(provider);
  });

  it('refuses a route whose providers are none of the account\'s catalog providers, before searching', async () => {
    // Prepare
    const b = await open({ routes: [catalogRoute(['NoSuchSatellite'])] });
    const start = await dropInput(benches.aws.s3, 'inbox/bern.geojson', bernFile);
    const searched = vi.spyOn(b.client, 'searchCatalog');

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'UNKNOWN_PROVIDER' } });
    expect(final.finish?.error?.message).toMatch(/none of the providers NoSuchSatellite is a catalog provider of this Mapflow account.*use one of: maxar, orbview, pleiades, maxar_vivid/);
    expect(searched).not.toHaveBeenCalled();
  });

  it('searches with the account\'s spelling of a provider written in another case', async () => {
    // Prepare
    const b = await open({ routes: [catalogRoute(['MAXAR'])] });
    const start = await dropInput(benches.aws.s3, 'inbox/bern.geojson', bernFile);
    const searched = vi.spyOn(b.client, 'searchCatalog');

    // Act
    await new Driver(b.ctx).runJob(start);

    // Assess
    expect(searched.mock.calls[0]?.[0].dataProviders).toEqual(['maxar']);
  });
});

describe('partial results of a FAILED processing (mapflow-qgis layer_utils.py line 636: "failed processings yield partial or no results")', () => {
  it('keeps what the processing made under failed/<path>/<part>/ and names it in the report and the Job Failed event', async () => {
    // Prepare: the simulator fails the processing half way (meta.simulate), with no restart
    const b = await open({ routes: [{ name: 'default', prefix: '', creditBudget: 10_000, meta: { simulate: 'fail:dataloader.NoDataTile' } }] });
    const start = await dropInput(benches.aws.s3, 'inbox/bern.geojson', bernFile);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish?.status).toBe('FAILED');
    const key = 'failed/bern.geojson/bern/partial-result.geojson';
    const partial = JSON.parse((await readText(benches.aws.s3, key))!) as { features: unknown[] };
    expect(partial.features.length).toBeGreaterThan(0);
    const report = (await readJsonObject<{ partialResults: unknown[]; parts: { partialResult?: unknown }[] }>(benches.aws.s3, 'failed/bern.geojson/report.json'))!;
    expect(report.partialResults).toEqual([{ part: 'bern', key, features: partial.features.length }]);
    const failed = b.events.find((e) => e.detailType === 'Job Failed')!;
    expect(failed.detail.partialResults).toEqual([{ part: 'bern', key, features: partial.features.length }]);
    expect(failed.detail.messages).toEqual([expect.stringContaining(`these partial results are kept at ${key}`)]);
  });
});

describe('an ordered scene that stays AWAITING (mapflow-docs-en api_reference.rst line 1252: "available for ordering by request")', () => {
  it('keeps polling past maxJobSeconds while the processing is AWAITING, and stores the result when it comes', async () => {
    // Prepare: the job may take 6 s, but the ordered scene keeps its processing AWAITING for 9 s. The rest of
    // the job (queued, a 1 s processing, the polls) needs about 2.5 s: 3 s was too tight on a loaded machine.
    const route: Route = { name: 'catalog', prefix: '', imagery: { search: { pick: 'newest', minIntersection: 50, providers: ['maxar'] } }, creditBudget: 10_000 };
    const b = await open({ routes: [route], simulator: { orderAwaitingSeconds: 9 }, pollPolicy: { maxJobSeconds: 6 } });
    const start = await dropInput(benches.aws.s3, 'inbox/bern.geojson', bernFile);
    const startedAt = Date.now();

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess: done after more than maxJobSeconds, with the result
    expect(final.finish?.error).toBeUndefined();
    expect(final.finish?.status).toBe('SUCCEEDED');
    expect(Date.now() - startedAt).toBeGreaterThan(6_000);
    expect(await readText(benches.aws.s3, 'results/bern.geojson/bern/result.geojson')).toMatch(/FeatureCollection/);
  });
});

describe('the AWAITING clock (poll-processing.ts awaitingAfter, poll-policy.ts awaitingWaitSeconds)', () => {
  it('adds up the spans spent AWAITING and polls them more slowly the longer they last, at most hourly', () => {
    // Prepare
    const t = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000);

    // Act: AWAITING from 0 s to 7,200 s, then IN_PROGRESS
    const first = awaitingAfter(undefined, 'AWAITING', t(0));
    const still = awaitingAfter(first, 'AWAITING', t(3_600));
    const after = awaitingAfter(still, 'IN_PROGRESS', t(7_200));

    // Assess
    expect(awaitedSeconds(still, t(3_600))).toBe(3_600);
    expect(after).toEqual({ seconds: 7_200, polls: 2 });
    expect(awaitedSeconds(after, t(9_000))).toBe(7_200);
    expect(awaitingWaitSeconds(30, 15)).toBe(15);
    expect(awaitingWaitSeconds(3_600, 15)).toBe(360);
    expect(awaitingWaitSeconds(5 * 86_400, 15)).toBe(3_600);
    expect(awaitingPollsBound()).toBeLessThan(400);
    expect(MAX_AWAITING_SECONDS).toBe(7 * 86_400);
  });
});
