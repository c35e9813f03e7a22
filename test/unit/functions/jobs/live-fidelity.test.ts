/**
 * Issue 25 through the task handlers, against the simulator playing the live
 * service (--real-shapes): each case names the source it follows.
 */
import { describe, expect, it, vi } from 'vitest';
import { Driver, TESTDATA, dropFile, dropInput, readJsonObject, useBenches, type Bench, type BenchOptions } from '../../../support/workflow-harness.ts';
import type { ProcessingRequest } from '../../../../functions/jobs/workflow.ts';
import { resultKeys } from '../../../../functions/routing/index.ts';

/** A square of about 0.15 km² near Bern. */
const squareAoi = (): string => JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.445, 46.94], [7.445, 46.943], [7.44, 46.943], [7.44, 46.94]]] } }] });

// Preprocessing takes no time here: the harness's Driver runs Upload Image once (no Wait For Image loop).
const benches = useBenches((options) => ({
  ...options,
  simulator: { realShapes: true, billingType: 'CREDITS', preprocessingSeconds: 0, queuedSeconds: 0.1, awaitingSeconds: 0.1, ...options.simulator },
}));
const open = (options?: BenchOptions): Promise<Bench> => benches.open(options);

describe('a GeoTIFF larger than aoiAreaLimit (server Validations.checkProcessingArea; mapflow-qgis processing_service.py lines 150-174)', () => {
  it('is REJECTED at Inspect GeoTIFF, before any upload request, with advice for an image', async () => {
    // Prepare: cogeo.tif covers about 0.37 km²; the account allows 0.1 km² per processing
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Buildings', processImages: true }], simulator: { limits: { aoiAreaLimitSqM: 100_000 } } });
    const before = await b.client.getStorageUsage();
    const start = await dropFile(benches.aws.s3, 'inbox/large.tif', new URL('rasters/cogeo.tif', TESTDATA));
    // Act
    const driver = new Driver(b.ctx);
    const final = await driver.runJob(start);
    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'IMAGE_AREA_TOO_LARGE' } });
    expect(final.finish?.error?.message).toMatch(/the image 'inbox\/large.tif' covers 0\.\d+ km², more than the 0\.1 km² .*nothing was uploaded.*Cut the image into tiles/);
    expect(final.finish?.error?.message).not.toMatch(/splitFeatures|polygon/);
    expect(driver.calls.some((c) => c.state === 'Ensure Mosaic' || c.state === 'Upload Image')).toBe(false);
    expect((await b.client.getStorageUsage()).usedBytes).toBe(before.usedBytes);
    expect(b.sim.stats().processingsCreated).toBe(0);
  });

  it('is uploaded as before by a route that does not process images (the limit is on processings)', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '' }], simulator: { limits: { aoiAreaLimitSqM: 100_000 } } });
    const start = await dropFile(benches.aws.s3, 'inbox/large.tif', new URL('rasters/cogeo.tif', TESTDATA));
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('SUCCEEDED');
    expect(final.upload?.imageId).toBeDefined();
  });
});

/** What the bridge posted to the cost endpoint and to the create, in order. */
function recordBodies(b: Bench): { cost: Record<string, unknown>[]; create: Record<string, unknown>[] } {
  const seen = { cost: [] as Record<string, unknown>[], create: [] as Record<string, unknown>[] };
  const cost = b.client.estimateCost.bind(b.client);
  const create = b.client.createProcessing.bind(b.client);
  vi.spyOn(b.client, 'estimateCost').mockImplementation((body) => (seen.cost.push(JSON.parse(JSON.stringify(body))), cost(body)));
  vi.spyOn(b.client, 'createProcessing').mockImplementation((body) => (seen.create.push(JSON.parse(JSON.stringify(body))), create(body)));
  return seen;
}

describe('the cost call carries the create body (mapflow-qgis functional/api/processing_api.py lines 93-99, processing_service.py lines 446-455 and 1081-1083)', () => {
  it('GeoTIFF: the only cost call is made once the image is uploaded, with the body of the create, image source and blocks and all', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Buildings', processImages: true, blocks: [{ name: 'Polygon simplification', enabled: true }] }] });
    const seen = recordBodies(b);
    const start = await dropFile(benches.aws.s3, 'inbox/priced.tif', new URL('rasters/cogeo.tif', TESTDATA));
    // Act
    const driver = new Driver(b.ctx);
    const final = await driver.runJob(start);
    // Assess: one cost call, after the upload, posting what the create posts
    expect(final.finish?.status, JSON.stringify(final.finish?.error)).toBe('SUCCEEDED');
    const states = driver.calls.map((c) => c.state);
    expect(states.indexOf('Upload Image')).toBeLessThan(states.indexOf('Plan Processing'));
    expect(seen.cost).toHaveLength(1);
    expect(seen.create).toHaveLength(1);
    expect(seen.cost[0]).toEqual(seen.create[0]);
    expect(seen.cost[0]!.params).toEqual({ sourceParams: { myImagery: { imageIds: [final.upload!.imageId], mosaicId: final.mosaic!.mosaicId } } });
    expect(seen.cost[0]!.blocks).toEqual([{ name: 'Simplification', enabled: true }, { name: 'Classification', enabled: false }, { name: 'OSM', enabled: false }]);
    const processing = await b.client.getProcessingV1((await b.client.listProcessings())[0]!.id);
    expect(processing.cost).toBe(final.plan!.estimatedCost);
  });

  it('GeoJSON on a data provider: the cost call posts the create body, its estimate is the charge, and the server prices the source (without params it is cheaper)', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Buildings', source: { dataProvider: { providerName: 'mapbox', zoom: 18 } }, inferenceParams: { threshold: '0.5' } }] });
    const seen = recordBodies(b);
    const start = await dropInput(benches.aws.s3, 'inbox/provider.geojson', squareAoi());
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status, JSON.stringify(final.finish?.error)).toBe('SUCCEEDED');
    expect(seen.cost).toEqual(seen.create);
    expect(seen.cost[0]!.params).toEqual({ sourceParams: { dataProvider: { providerName: 'Mapbox', zoom: 18 } }, inferenceParams: { threshold: '0.5' } });
    const request = (await readJsonObject<ProcessingRequest>(benches.aws.s3, final.plan!.parts[0]!.requestKey))!;
    const geometry = await readJsonObject(benches.aws.s3, final.plan!.parts[0]!.geometryKey);
    const charged = (await b.client.getProcessingV1((await b.client.listProcessings())[0]!.id)).cost;
    expect(charged).toBe(final.plan!.estimatedCost);
    expect(await b.client.estimateCost({ wdId: request.wdId, geometry: geometry as never, ...(request.blocks && { blocks: request.blocks }) })).toBeLessThan(charged!);
  });
});

describe('blocks by their API name, all explicit (mapflow-qgis mapflow/schema/workflow_def.py lines 51-57)', () => {
  it('a display name in the route is sent as the API name, and the blocks it does not name go disabled', async () => {
    // Prepare: the live service ignores a block it does not know by its API name
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Buildings', blocks: [{ name: 'merge with osm', enabled: true }] }] });
    const start = await dropInput(benches.aws.s3, 'inbox/blocks.geojson', squareAoi());
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status, JSON.stringify(final.finish?.error)).toBe('SUCCEEDED');
    const request = (await readJsonObject<ProcessingRequest>(benches.aws.s3, final.plan!.parts[0]!.requestKey))!;
    expect(request.blocks).toEqual([{ name: 'Simplification', enabled: false }, { name: 'Classification', enabled: false }, { name: 'OSM', enabled: true }]);
    const processing = (await b.client.getProcessingV1((await b.client.listProcessings())[0]!.id));
    expect(processing.blocks?.find((block) => block.name === 'OSM')?.enabled).toBe(true);
    expect(processing.cost).toBe(final.plan!.estimatedCost);
  });
});


describe('shapes of the live record (mapflow-mcp src/schemas.ts: aoiArea, area, resultRasterLayer; mapflow-qgis mapflow/functional/layer_utils.py lines 187-209, 469-471: rasters are XYZ tiles)', () => {
  it('a raster result is not copied, and job.json, the part and the Job Succeeded event say so with its link', async () => {
    // Prepare: Forest with its Heights block makes a raster result in the simulated live service
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Forest and trees', blocks: [{ name: 'Heights', enabled: true }] }] });
    const start = await dropInput(benches.aws.s3, 'inbox/forest.geojson', squareAoi());
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status, JSON.stringify(final.finish?.error)).toBe('SUCCEEDED');
    const jobJson = (await readJsonObject<Record<string, any>>(benches.aws.s3, resultKeys(b.ctx.config.prefixes, start.input.key, final.plan!.parts[0]!.name).jobJsonKey))!;
    expect(jobJson.rasterResult).toMatchObject({ stored: false, tileJsonUrl: expect.stringMatching(/tile\.json$/), tileUrl: expect.stringMatching(/\{z\}\/\{x\}\/\{y\}/), note: expect.stringMatching(/vector result only.*not copied/) });
    expect(jobJson.processing.aoiArea).toBe(jobJson.processing.area);
    const part = (await b.ledger.get(start.jobId))!.parts![0]!;
    expect(part.rasterResult).toEqual({ stored: false, tileJsonUrl: jobJson.rasterResult.tileJsonUrl, tileUrl: jobJson.rasterResult.tileUrl });
    const succeeded = b.events.find((e) => e.detailType === 'Job Succeeded')!;
    expect(succeeded.detail.messages).toEqual([expect.stringContaining(`has a raster result that mapflow-bridge does not copy (Mapflow serves it as map tiles only); it stays in Mapflow: ${jobJson.rasterResult.tileJsonUrl}`)]);
  });

  it('a vector-only result says nothing about rasters', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Buildings' }] });
    const start = await dropInput(benches.aws.s3, 'inbox/vector.geojson', squareAoi());
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status, JSON.stringify(final.finish?.error)).toBe('SUCCEEDED');
    expect((await b.ledger.get(start.jobId))!.parts![0]!.rasterResult).toBeUndefined();
    expect(b.events.find((e) => e.detailType === 'Job Succeeded')!.detail.messages).toBeUndefined();
  });
});
