/**
 * The task handlers against the Mapflow simulator, s3rver and DynamoDB Local,
 * driven through the flow of the state machine (see harness.ts).
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { resultKeys, reportKey } from '../../../../functions/routing/index.ts';
import type { ProcessingRequest, WorkflowState } from '../../../../functions/jobs/workflow.ts';
import { MAX_SPLIT_PARTS } from '../../../../functions/jobs/steps/plan-processing.ts';
import { registerJob } from '../../../../functions/jobs/steps/register-job.ts';
import { inspectGeotiff } from '../../../../functions/jobs/steps/inspect-geotiff.ts';
import { ensureMosaic } from '../../../../functions/jobs/steps/ensure-mosaic.ts';
import { uploadImage } from '../../../../functions/jobs/steps/upload-image.ts';
import {
  Driver,
  TESTDATA,
  TOKEN,
  dropFile,
  dropInput,
  readJsonObject,
  readText,
  tagsOf,
  useBenches,
  type Bench,
  type BenchOptions,
} from '../../../support/workflow-harness.ts';

const benches = useBenches();
const open = (options?: BenchOptions): Promise<Bench> => benches.open(options);

/** A square of about 0.15 km² near Bern, `dx` degrees east of the first one. */
function square(name: string, dx = 0) {
  const [w, s, e, n] = [7.44 + dx, 46.94, 7.445 + dx, 46.943];
  return { type: 'Feature', properties: { name }, geometry: { type: 'Polygon', coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] } };
}

/** A GeoJSON of one or more disjoint squares. */
function squareAoi(extra: Record<string, unknown> = {}, count = 1): string {
  return JSON.stringify({ type: 'FeatureCollection', features: Array.from({ length: count }, (_, i) => square(`square ${i + 1}`, i * 0.01)), ...extra });
}

/** Some of Bern's quarters (real MultiPolygons from samples/aoi) as one FeatureCollection. */
async function bernQuarters(names: string[]): Promise<string> {
  const all = JSON.parse(await readFile(new URL('aoi/bern-quarters.geojson', TESTDATA), 'utf8')) as { features: { properties: { name: string } }[] };
  return JSON.stringify({ type: 'FeatureCollection', features: all.features.filter((f) => names.includes(f.properties.name)) });
}

/** Processings the simulated account has, as the API lists them (beside the simulator's own counter). */
async function processingCount(b: Bench): Promise<number> {
  return (await b.client.listProcessings()).length;
}

describe('GeoJSON jobs', () => {
  it('plans, creates, polls and stores the results of a GeoJSON drop', async () => {
    // Prepare
    const b = await open();
    const start = await dropInput(benches.aws.s3, 'inbox/bern/two-squares.geojson', squareAoi({}, 2));
    // Act
    const driver = new Driver(b.ctx);
    const final = await driver.runJob(start);
    // Assess
    expect(final.finish?.status).toBe('SUCCEEDED');
    expect(final.plan?.parts).toHaveLength(1);
    const polls = driver.calls.filter((c) => c.state === 'Poll Processing').length;
    // How many polls a simulated processing of real seconds takes depends on the machine's speed (1 when loaded).
    expect(polls).toBeGreaterThanOrEqual(1);
    expect(b.events.filter((e) => e.detailType === 'Processing Started')).toHaveLength(1); // per status change, not per percent
    expect(await processingCount(b)).toBe(1);
    const { resultKey, jobJsonKey } = resultKeys(b.ctx.config.prefixes, start.input.key, 'two-squares');
    const result = JSON.parse((await readText(benches.aws.s3, resultKey))!) as { type: string; features: unknown[] };
    expect(result.type).toBe('FeatureCollection');
    expect(result.features.length).toBeGreaterThan(0);
    const jobJson = (await readJsonObject<{ processing: { id: string; status: string }; request: ProcessingRequest; result: { bytes: number } }>(benches.aws.s3, jobJsonKey))!;
    expect(jobJson.processing.status).toBe('OK');
    expect(jobJson.request.meta.bridgeJobId).toBe(start.jobId);
    expect(jobJson.result.bytes).toBeGreaterThan(0);
    const row = (await b.ledger.get(start.jobId))!;
    expect(row.status).toBe('SUCCEEDED');
    expect(row.parts?.[0]).toMatchObject({ status: 'OK', resultKey, attempts: 1, processingId: jobJson.processing.id });
    expect(row.processingId).toBe(jobJson.processing.id);
    expect(row.estimatedCost).toBeGreaterThan(0);
    expect(row.executionArn).toContain(start.jobId);
    expect(b.events.map((e) => e.detailType)).toEqual(expect.arrayContaining(['Job Received', 'Processing Submitted', 'Processing Started', 'Job Succeeded']));
    expect(b.events.filter((e) => e.detailType === 'Job Succeeded')).toHaveLength(1);
    expect(await tagsOf(benches.aws.s3, start.input.key)).toEqual({ 'mapflow-bridge:job-id': start.jobId, 'mapflow-bridge:status': 'SUCCEEDED' });
    expect(await readText(benches.aws.s3, reportKey(b.ctx.config.prefixes, start.input.key))).toBeUndefined();
    expect(JSON.stringify({ events: b.events, row, logs: b.logs })).not.toContain(TOKEN);
  });

  it('ends a job that is already final without doing anything again', async () => {
    // Prepare
    const b = await open();
    const start = await dropInput(benches.aws.s3, 'inbox/again.geojson', squareAoi());
    await new Driver(b.ctx).runJob(start);
    const created = await processingCount(b);
    // Act
    const driver = new Driver(b.ctx);
    const second = await driver.runJob(start);
    // Assess
    expect(second.job?.alreadyFinal).toBe(true);
    expect(driver.calls.map((c) => c.state)).toEqual(['Register Job']);
    expect(await processingCount(b)).toBe(created);
    expect(b.events.filter((e) => e.detailType === 'Job Received')).toHaveLength(1);
  });

  it('rejects a job over the route budget before anything is created in Mapflow', async () => {
    // Prepare: bern-quarters is about 52 km², far above a 5-credit budget
    const b = await open({ routes: [{ name: 'default', prefix: '', creditBudget: 5 }] });
    const start = await dropFile(benches.aws.s3, 'inbox/bern-quarters.geojson', new URL('aoi/bern-quarters.geojson', TESTDATA));
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('REJECTED');
    expect(final.finish?.error?.code).toBe('BUDGET_EXCEEDED');
    expect(final.finish?.error?.message).toMatch(/estimated at \d+ credits, above the budget of 5 credits of route 'default'.*raise the route's creditBudget/);
    expect(await processingCount(b)).toBe(0);
    expect(b.sim.stats().processingsCreated).toBe(0);
    const report = (await readJsonObject<{ code: string; status: string }>(benches.aws.s3, reportKey(b.ctx.config.prefixes, start.input.key)))!;
    expect(report).toMatchObject({ code: 'BUDGET_EXCEEDED', status: 'REJECTED' });
    expect((await b.ledger.get(start.jobId))?.status).toBe('REJECTED');
    expect(b.events.at(-1)?.detailType).toBe('Job Rejected');
    expect((await tagsOf(benches.aws.s3, start.input.key))['mapflow-bridge:status']).toBe('REJECTED');
  });

  it('rejects an unknown model and names the models the account has', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Swimming pools' }] });
    const start = await dropInput(benches.aws.s3, 'inbox/pools.geojson', squareAoi());
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('REJECTED');
    expect(final.finish?.error?.code).toBe('UNKNOWN_MODEL');
    expect(final.finish?.error?.message).toMatch(/'Swimming pools' is not available.*Available models: .*Buildings/);
    expect(await processingCount(b)).toBe(0);
  });

  it('keeps the route a job was registered with when the routes change before it plans (issue 39, point 10)', async () => {
    // Prepare: a roads/ file registered on a route running Roads, then the routes replaced (no roads route, Forest at the root)
    const b = await open({ routes: [{ name: 'default', prefix: '', model: '🏠 Buildings' }, { name: 'roads', prefix: 'roads/', model: '🚗 Roads' }] });
    const start = await dropInput(benches.aws.s3, 'inbox/roads/lane.geojson', squareAoi());
    await new Driver(b.ctx).task('Register Job', registerJob, start);
    b.ctx.config.routes = { routes: [{ name: 'default', prefix: '', model: '🌲 Forest and trees' }] };
    // Act: the job runs from the start again, as a bridge restarted with the new routes resumes it
    const final = await new Driver(b.ctx).runJob(start);
    // Assess: the records name the route it was registered with and the model Mapflow ran
    expect(final.finish?.status).toBe('SUCCEEDED');
    const { jobJsonKey } = resultKeys(b.ctx.config.prefixes, start.input.key, 'lane');
    const jobJson = (await readJsonObject<{ route: string; request: ProcessingRequest; processing: { id: string; workflowDef: { id: string; name: string } } }>(benches.aws.s3, jobJsonKey))!;
    const ran = await b.client.getProcessingV1(jobJson.processing.id); // v1 names the model it runs (workflowDef)
    expect(ran.workflowDef?.name).toBe('🚗 Roads');
    expect(jobJson.route).toBe('roads');
    expect(jobJson.request.wdId).toBe(ran.workflowDef?.id);
    expect(final.plan?.modelName).toBe('🚗 Roads');
    const row = (await b.ledger.get(start.jobId))!;
    expect(row.routeName).toBe('roads');
    expect(row.plannedRoute).toMatchObject({ name: 'roads', model: '🚗 Roads' });
    expect(b.events.find((e) => e.detailType === 'Job Succeeded')?.detail.routeName).toBe('roads');
  });

  it('rejects a file no route takes, and says which folders have routes', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'buildings', prefix: 'buildings/' }] });
    const start = await dropInput(benches.aws.s3, 'inbox/elsewhere/a.geojson', squareAoi());
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('REJECTED');
    expect(final.finish?.error?.code).toBe('NO_ROUTE');
    expect(final.finish?.error?.message).toContain("'buildings/'");
    expect((await b.ledger.get(start.jobId))?.status).toBe('REJECTED');
  });

  it('rejects a file without polygons with the AOI check code', async () => {
    // Prepare
    const b = await open();
    const start = await dropFile(benches.aws.s3, 'inbox/stations.geojson', new URL('aoi/caltrain-stations.geojson', TESTDATA));
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'NO_POLYGONS' } });
  });

  it('creates exactly one processing when the create response is lost', async () => {
    // Prepare: every create takes effect but its response is dropped
    const b = await open({ simulator: { dropAfterCommit: 1 } });
    const start = await dropInput(benches.aws.s3, 'inbox/lost.geojson', squareAoi());
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('SUCCEEDED');
    expect(b.sim.stats().droppedResponses).toBeGreaterThanOrEqual(1);
    expect(await processingCount(b)).toBe(1);
    expect(b.sim.stats().processingsCreated).toBe(1);
    const processings = await b.client.listProjectProcessings(final.plan!.projectId);
    expect(processings.filter((p) => p.name === final.plan!.parts[0]!.processingName)).toHaveLength(1);
  });

  it('finds the processing of an earlier attempt instead of creating a second one', async () => {
    // Prepare: run the job, then pretend Create Processing runs again for the same part
    const b = await open();
    const start = await dropInput(benches.aws.s3, 'inbox/retry.geojson', squareAoi());
    const final = await new Driver(b.ctx).runJob(start);
    const { createProcessing } = await import('../../../../functions/jobs/steps/create-processing.ts');
    // Act
    const again = await createProcessing({ job: final.job!, part: final.plan!.parts[0]! }, b.ctx);
    // Assess
    expect(again).toMatchObject({ reused: true, processingId: (await b.ledger.get(final.jobId))!.parts![0]!.processingId });
    expect(await processingCount(b)).toBe(1);
  });

  it('restarts a processing once after a transient failure and succeeds', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', meta: { simulate: 'fail-once:dataloader.TileNotReadable' } }] });
    const start = await dropInput(benches.aws.s3, 'inbox/flaky.geojson', squareAoi());
    // Act
    const driver = new Driver(b.ctx);
    const final = await driver.runJob(start);
    // Assess
    expect(final.finish?.status).toBe('SUCCEEDED');
    expect(driver.calls.filter((c) => c.state === 'Restart Processing')).toHaveLength(1);
    const row = (await b.ledger.get(start.jobId))!;
    expect(row.parts?.[0]).toMatchObject({ status: 'OK', attempts: 2 });
    expect(row.statusHistory.some((h) => /dataloader\.TileNotReadable; restarted/.test(h.note ?? ''))).toBe(true);
    expect(b.events.filter((e) => e.detailType === 'Processing Restarted')).toHaveLength(1);
  });

  it('fails a job whose processing fails for good, with Mapflow messages in the report', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', meta: { simulate: 'fail:source-validator.NoDataInAOI' } }] });
    const start = await dropInput(benches.aws.s3, 'inbox/nodata.geojson', squareAoi());
    // Act
    const driver = new Driver(b.ctx);
    const final = await driver.runJob(start);
    // Assess
    expect(final.finish?.status).toBe('FAILED');
    expect(driver.calls.some((c) => c.state === 'Restart Processing')).toBe(false);
    const report = (await readJsonObject<{ code: string; message: string; mapflowMessages: { code: string }[] }>(benches.aws.s3, reportKey(b.ctx.config.prefixes, start.input.key)))!;
    expect(report.code).toBe('PROCESSING_FAILED');
    expect(report.message).toContain('source-validator.NoDataInAOI');
    expect(report.mapflowMessages[0]?.code).toBe('source-validator.NoDataInAOI');
    expect(JSON.stringify({ report, events: b.events, row: await b.ledger.get(start.jobId) })).not.toContain(TOKEN);
    expect(b.events.at(-1)?.detailType).toBe('Job Failed');
    expect(await b.ctx.slots.holders()).toEqual([]);
  });

  it('runs one processing per feature with splitFeatures', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', splitFeatures: true }] });
    const start = await dropInput(benches.aws.s3, 'inbox/quarters.geojson', await bernQuarters(['Stadtbach', 'Weissenstein', 'Stöckacker']));
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('SUCCEEDED');
    const parts = final.plan!.parts;
    expect(parts.length).toBeGreaterThan(1);
    expect(new Set(parts.map((p) => p.name)).size).toBe(parts.length);
    expect(await processingCount(b)).toBe(parts.length);
    for (const part of parts) {
      const result = await readText(benches.aws.s3, resultKeys(b.ctx.config.prefixes, start.input.key, part.name).resultKey);
      expect(result, part.name).toBeDefined();
      expect(JSON.parse(result!), part.name).toMatchObject({ type: 'FeatureCollection', features: expect.any(Array) });
    }
    expect((await b.ledger.get(start.jobId))?.parts).toHaveLength(parts.length);
  });

  it('rejects a split job with more features than one execution can carry, before anything is created', async () => {
    // Prepare: 101 small squares, one processing each
    const b = await open({ routes: [{ name: 'default', prefix: '', splitFeatures: true, creditBudget: 100_000 }] });
    const start = await dropInput(benches.aws.s3, 'inbox/many.geojson', squareAoi({}, MAX_SPLIT_PARTS + 1));
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('REJECTED');
    expect(final.finish?.error?.code).toBe('TOO_MANY_FEATURES');
    expect(final.finish?.error?.message).toContain(`at most ${MAX_SPLIT_PARTS}`);
    expect(await processingCount(b)).toBe(0);
  });

  it('times out a processing that runs past maxPolls', async () => {
    // Prepare: processings take 60 s, the bridge polls at most twice
    const b = await open({ simulator: { processingSeconds: 60 }, pollPolicy: { maxPolls: 2 } });
    const start = await dropInput(benches.aws.s3, 'inbox/slow.geojson', squareAoi());
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('FAILED');
    expect(final.finish?.error?.code).toBe('PROCESSING_TIMEOUT');
  });
});

describe('concurrency slots', () => {
  it('queues a part when every slot is taken, then gives up with QueueTimeout', async () => {
    // Prepare: the only slot is held by another job
    const b = await open({ maxConcurrentProcessings: 1, pollPolicy: { maxJobSeconds: 0.05 } });
    await b.ctx.slots.acquire('other-job#0', 'arn:other');
    const start = await dropInput(benches.aws.s3, 'inbox/queued.geojson', squareAoi());
    // Act
    const driver = new Driver(b.ctx, { msPerSecond: 50 });
    const final = await driver.runJob(start);
    // Assess
    expect(final.finish?.status).toBe('FAILED');
    expect(final.finish?.error?.code).toBe('QUEUE_TIMEOUT');
    expect(b.events.map((e) => e.detailType)).toContain('Job Queued');
    expect(await processingCount(b)).toBe(0);
    expect((await b.ctx.slots.holders()).map((h) => h.holder)).toEqual(['other-job#0']);
  });
});

describe('GeoTIFF jobs', () => {
  it('uploads an image into the route mosaic and succeeds without processing', async () => {
    // Prepare
    const b = await open();
    const start = await dropFile(benches.aws.s3, 'inbox/aerial/cogeo.tif', new URL('rasters/cogeo.tif', TESTDATA));
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('SUCCEEDED');
    expect(final.image).toMatchObject({ width: 1024, height: 1024, bands: 3 });
    expect(final.upload).toMatchObject({ reused: false, filename: 'cogeo.tif', fileSize: start.input.size });
    expect(final.upload?.footprint.type).toMatch(/Polygon/);
    const images = await b.client.listMosaicImages(final.mosaic!.mosaicId);
    expect(images.map((i) => i.id)).toEqual([final.upload!.imageId]);
    const jobJson = (await readJsonObject<{ image: { id: string } }>(benches.aws.s3, 'results/aerial/cogeo.tif/job.json'))!;
    expect(jobJson.image.id).toBe(final.upload!.imageId);
    const row = (await b.ledger.get(start.jobId))!;
    expect(row).toMatchObject({ status: 'SUCCEEDED', mosaicId: final.mosaic!.mosaicId, imageId: final.upload!.imageId });
    expect(b.events.map((e) => e.detailType)).toEqual(['Job Received', 'Image Uploading', 'Image Uploaded', 'Job Succeeded']);
  });

  it('reuses the image of an earlier attempt instead of uploading twice', async () => {
    // Prepare
    const b = await open();
    const start = await dropFile(benches.aws.s3, 'inbox/cogeo.tif', new URL('rasters/cogeo.tif', TESTDATA));
    const final = await new Driver(b.ctx).runJob(start);
    // Act
    const again = await uploadImage(final, b.ctx);
    // Assess
    expect(again).toMatchObject({ reused: true, imageId: final.upload!.imageId });
    expect(await b.client.listMosaicImages(final.mosaic!.mosaicId)).toHaveLength(1);
  });

  it('reuses the image when the upload went through but its response was lost', async () => {
    // Prepare: mosaic made on a healthy service, then every create response is lost
    const b = await open();
    const start = await dropFile(benches.aws.s3, 'inbox/lost-upload.tif', new URL('rasters/cogeo.tif', TESTDATA));
    const driver = new Driver(b.ctx);
    const state = { ...start, job: await driver.task('Register Job', registerJob, start) } as WorkflowState;
    state.image = await driver.task('Inspect GeoTIFF', inspectGeotiff, state);
    state.mosaic = await driver.task('Ensure Mosaic', ensureMosaic, state);
    await b.restartSimulator({ dropAfterCommit: 1 });
    // Act
    const upload = await uploadImage(state, b.ctx);
    // Assess
    expect(b.sim.stats().droppedResponses).toBe(1);
    expect(upload.reused).toBe(false);
    const images = await b.client.listMosaicImages(state.mosaic.mosaicId);
    expect(images.map((i) => i.id)).toEqual([upload.imageId]);
    expect((await b.ledger.get(start.jobId))).toMatchObject({ status: 'UPLOADED', imageId: upload.imageId });
  });

  it('uploads and processes an image under a route with a model', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '' }, { name: 'buildings', prefix: 'buildings/', model: '🏠 Buildings', processImages: true }] });
    const start = await dropFile(benches.aws.s3, 'inbox/buildings/cogeo.tif', new URL('rasters/cogeo.tif', TESTDATA));
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('SUCCEEDED');
    const request = (await readJsonObject<ProcessingRequest>(benches.aws.s3, final.plan!.parts[0]!.requestKey))!;
    expect(request.params.sourceParams).toEqual({ myImagery: { imageIds: [final.upload!.imageId], mosaicId: final.mosaic!.mosaicId } });
    const result = await readText(benches.aws.s3, resultKeys(b.ctx.config.prefixes, start.input.key, 'cogeo').resultKey);
    expect(result).toBeDefined();
    expect(JSON.parse(result!)).toMatchObject({ type: 'FeatureCollection', features: expect.any(Array) });
  });

  it('rejects an image too coarse for the route model before uploading it', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Buildings', processImages: true }] });
    const start = await dropFile(benches.aws.s3, 'inbox/coarse.tif', new URL('rasters/RGB.byte.tif', TESTDATA));
    // Act
    const driver = new Driver(b.ctx);
    const final = await driver.runJob(start);
    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'PIXEL_SIZE_TOO_COARSE' } });
    expect(driver.calls.some((c) => c.state === 'Upload Image')).toBe(false);
  });

  it('prices an image once it is uploaded (the cost call names it, as the create does) and, over budget, deletes it', async () => {
    // Prepare: cogeo.tif covers about 0.37 km², billed as 1 km²: above a 1-credit budget
    const b = await open({ routes: [{ name: 'default', prefix: '', model: 'Buildings', processImages: true, creditBudget: 1 }] });
    const before = await b.client.getStorageUsage();
    const start = await dropFile(benches.aws.s3, 'inbox/expensive.tif', new URL('rasters/cogeo.tif', TESTDATA));
    // Act
    const driver = new Driver(b.ctx);
    const final = await driver.runJob(start);
    // Assess: rejected with the estimate of the uploaded image; the image is gone and nothing was created
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'BUDGET_EXCEEDED' } });
    expect(final.finish?.error?.message).toMatch(/estimated at \d+ credits, above the budget of 1 credits.*The uploaded image was deleted from Mapflow/);
    expect(final.upload?.imageId).toBeDefined();
    await expect(b.client.getImage(final.upload!.imageId)).rejects.toMatchObject({ status: 404 });
    expect((await b.client.getStorageUsage()).usedBytes).toBe(before.usedBytes);
    expect(b.sim.stats().processingsCreated).toBe(0);
  });

  it('rejects a GeoTIFF whose pixel data is damaged', async () => {
    // Prepare
    const b = await open();
    const start = await dropFile(benches.aws.s3, 'inbox/corrupt.tif', new URL('rasters/corrupt.tif', TESTDATA));
    // Act
    const final = await new Driver(b.ctx).runJob(start);
    // Assess
    expect(final.finish?.status).toBe('REJECTED');
    expect(final.finish?.error?.code).toBe('TIFF_CORRUPT');
  });
});

describe('Fail Job', () => {
  it.each([
    ['no error at all', undefined],
    ['an empty object', {}],
    ['a Cause that is not JSON', { Error: 'Lambda.Unknown', Cause: 'The Lambda runtime crashed' }],
    ['a States error', { Error: 'States.Timeout', Cause: '' }],
    ['a number', 42],
  ])('ends the job FAILED on %s without throwing', async (_label, error) => {
    // Prepare
    const b = await open();
    const start = await dropInput(benches.aws.s3, `inbox/odd-${Math.random().toString(36).slice(2)}.geojson`, squareAoi());
    const { failJob } = await import('../../../../functions/jobs/steps/fail-job.ts');
    const { releaseJobSlots } = await import('../../../../functions/jobs/steps/release-job-slots.ts');
    await b.ctx.slots.acquire(`${start.jobId}#0`, 'arn:x');
    // Act: Fail Job, then the state after it
    const finish = await failJob({ ...start, error: error as never }, b.ctx);
    const slotsAfterFailJob = await b.ctx.slots.holders();
    const released = await releaseJobSlots({ ...start, error: error as never, finish }, b.ctx);
    // Assess
    expect(finish.status).toBe('FAILED');
    expect(finish.error?.message.length).toBeGreaterThan(0);
    expect((await b.ledger.get(start.jobId))?.status).toBe('FAILED');
    expect(await readJsonObject(benches.aws.s3, reportKey(b.ctx.config.prefixes, start.input.key))).toMatchObject({ status: 'FAILED' });
    expect(slotsAfterFailJob.map((h) => h.holder)).toEqual([`${start.jobId}#0`]);
    expect(released).toEqual({ jobId: start.jobId });
    expect(await b.ctx.slots.holders()).toEqual([]);
  });

  it('ends the job REJECTED for an InputRejected and is idempotent', async () => {
    // Prepare
    const b = await open();
    const start = await dropInput(benches.aws.s3, 'inbox/rejected.geojson', squareAoi());
    const { failJob } = await import('../../../../functions/jobs/steps/fail-job.ts');
    const error = { Error: 'InputRejected', Cause: JSON.stringify({ errorType: 'InputRejected', errorMessage: 'NOT_JSON: the file is not JSON; save it as GeoJSON' }) };
    // Act
    const first = await failJob({ ...start, error }, b.ctx);
    const second = await failJob({ ...start, error }, b.ctx);
    // Assess
    expect(first).toMatchObject({ status: 'REJECTED', error: { code: 'NOT_JSON', message: 'the file is not JSON; save it as GeoJSON' } });
    expect(second.status).toBe('REJECTED');
    expect(b.events.filter((e) => e.detailType === 'Job Rejected')).toHaveLength(1);
  });
});
