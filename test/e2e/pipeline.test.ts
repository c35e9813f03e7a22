/**
 * End to end through the full local engine: the synthesized state machine,
 * the real handlers, s3rver, DynamoDB Local and the Mapflow simulator, once
 * with the reference shapes and once with the simulator answering as the live
 * service does (--real-shapes: upload answers without image, preprocessing,
 * a credit-billed account with remainingArea 0, no storage limit, a slow
 * result first byte, paged lists and v2 paths, null/UNPROCESSED and AWAITING
 * first, naive timestamps: docs/integration-notes.md).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectTaggingCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import bbox from '@turf/bbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge, LocalBridgeOptions } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { LIVE_SHAPES, listKeys, readText, SAMPLES, SAMPLE_DATA, squareAoi, startTestBridge, tempFile } from './helpers.ts';
import { checkEventsFile } from '../support/validate-events.ts';

type SimulatorSettings = NonNullable<LocalBridgeOptions['simulator']>;

const MODES: { mode: string; live: boolean; simulator: SimulatorSettings }[] = [
  { mode: 'reference shapes', live: false, simulator: { processingSeconds: 2, seed: 7 } },
  { mode: 'live shapes', live: true, simulator: { processingSeconds: 2, seed: 7, ...LIVE_SHAPES } },
];

/** Every event of the block's bridge validates against the schemas subscribers get (schemas/events). */
function itPublishesOnlyValidEvents(bridgeOf: () => LocalBridge): void {
  it('publishes only events that validate against the schemas subscribers get (schemas/events)', async () => {
    // Act
    const { count, problems } = await checkEventsFile(bridgeOf().eventsFile);

    // Assess
    expect(count).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });
}

describe.each(MODES)('local pipeline, end to end ($mode)', ({ live, simulator }) => {
  let bridge: LocalBridge;
  // The jobs below run side by side in one bridge (a bridge takes many files at once, and
  // they mostly wait on simulated processings). Each adds the processings it must create;
  // the test after them proves the simulator created exactly that many, none for the rest.
  let processingsExpected = 0;
  const expectProcessings = (count: number): void => {
    processingsExpected += count;
  };

  beforeAll(async () => {
    bridge = await startTestBridge({ simulator });
  });
  afterAll(async () => {
    await bridge?.close();
  });

  const processingsCreated = () => bridge.simulator?.stats().processingsCreated ?? 0;
  const eventsOf = async (jobId: string) => (await readEvents(bridge.eventsFile)).filter((e) => e.detail.jobId === jobId);

  it.concurrent('takes a GeoJSON to SUCCEEDED: results inside the AOI, ledger row, events, input tags', async ({ expect }) => {
    // Prepare
    const file = path.join(SAMPLES, 'bern-three-quarters.geojson');
    const aoiBox = bbox(JSON.parse(await readFile(file, 'utf8')));
    expectProcessings(1);
    // Act
    const { jobId } = await bridge.putInbox(file, 'bern-three-quarters.geojson');
    const row = await bridge.waitForJob(jobId);
    // Assess: the ledger
    expect(row?.status).toBe('SUCCEEDED');
    const statuses = row?.statusHistory.map((step) => step.status) ?? [];
    expect(statuses[0]).toBe('RECEIVED');
    expect(statuses).toContain('SUBMITTED');
    expect(statuses).toContain('IN_PROGRESS');
    expect(statuses.at(-1)).toBe('SUCCEEDED');
    expect(row?.processingId).toMatch(/[0-9a-f-]{36}/);
    expect(row?.actualCost ?? 0).toBeGreaterThan(0);
    // Assess: the results, every feature inside the AOI's box
    const keys = await listKeys(bridge.s3, bridge.bucket, row?.resultPrefix as string);
    const resultKey = keys.find((key) => key.endsWith('/result.geojson')) as string;
    expect(keys.some((key) => key.endsWith('/job.json'))).toBe(true);
    const result = JSON.parse(await readText(bridge.s3, bridge.bucket, resultKey)) as { features: unknown[] };
    expect(result.features.length).toBeGreaterThan(0);
    for (const feature of result.features) {
      const [w, s, e, n] = bbox(feature as Parameters<typeof bbox>[0]);
      expect(w).toBeGreaterThanOrEqual(aoiBox[0] - 1e-9);
      expect(s).toBeGreaterThanOrEqual(aoiBox[1] - 1e-9);
      expect(e).toBeLessThanOrEqual(aoiBox[2] + 1e-9);
      expect(n).toBeLessThanOrEqual(aoiBox[3] + 1e-9);
    }
    // Assess: the events, in order
    const events = (await eventsOf(jobId)).map((event) => event.detailType);
    expect(events[0]).toBe('Job Received');
    expect(events).toContain('Processing Submitted');
    expect(events.at(-1)).toBe('Job Succeeded');
    // Assess: the input is tagged, not changed
    const tags = await bridge.s3.send(new GetObjectTaggingCommand({ Bucket: bridge.bucket, Key: 'inbox/bern-three-quarters.geojson' }));
    expect(tags.TagSet).toContainEqual({ Key: 'mapflow-bridge:status', Value: 'SUCCEEDED' });
  });

  it.concurrent('uploads a GeoTIFF into a mosaic (upload-only route) without processing it', async ({ expect }) => {
    // Prepare
    expectProcessings(0);
    // Act
    const { jobId } = await bridge.putInbox(path.join(SAMPLE_DATA, 'rasters/cogeo.tif'), 'cogeo.tif');
    const row = await bridge.waitForJob(jobId);
    // Assess
    expect(row?.status).toBe('SUCCEEDED');
    expect(row?.kind).toBe('geotiff');
    expect(row?.mosaicId).toBeTruthy();
    expect(row?.imageId).toBeTruthy();
    expect(row?.processingId).toBeUndefined();
    expect(row?.statusHistory.map((step) => step.status)).toContain('UPLOADED');
  });

  it.concurrent('uploads a GeoTIFF and runs Buildings on it (route with processImages)', async ({ expect }) => {
    // Prepare
    expectProcessings(1);
    // Act
    const { jobId } = await bridge.putInbox(path.join(SAMPLE_DATA, 'rasters/cogeo.tif'), 'buildings/cogeo.tif');
    const row = await bridge.waitForJob(jobId);
    // Assess
    expect(row?.status).toBe('SUCCEEDED');
    expect(row?.routeName).toBe('buildings');
    expect(row?.imageId).toBeTruthy();
    expect(row?.processingId).toBeTruthy();
    const keys = await listKeys(bridge.s3, bridge.bucket, 'results/buildings/cogeo.tif/');
    expect(keys.some((key) => key.endsWith('/result.geojson'))).toBe(true);
    if (live) {
      // The upload answer named no image and the image had to be preprocessed first: the job found it and waited.
      const events = (await eventsOf(jobId)).map((event) => event.detailType);
      expect(events).toContain('Image Uploaded');
    }
  });

  it.concurrent('records a processing that FAILS with its Mapflow messages and a report', async ({ expect }) => {
    // Prepare: one processing, which fails (a failed processing is restarted, never created again)
    expectProcessings(1);
    const file = await tempFile('will-fail.geojson', squareAoi({ mapflow: { meta: { simulate: 'fail:dataloader.TileNotReadable' } } }));
    // Act
    const { jobId } = await bridge.putInbox(file, 'will-fail.geojson');
    const row = await bridge.waitForJob(jobId);
    // Assess
    expect(row?.status).toBe('FAILED');
    expect(row?.processingId).toBeTruthy();
    const messageCodes = [
      ...(row?.error?.mapflowMessages ?? []),
      ...(row?.parts ?? []).flatMap((part) => part.error?.mapflowMessages ?? []),
    ].map((message) => message.code);
    expect(messageCodes).toContain('dataloader.TileNotReadable');
    const report = await readText(bridge.s3, bridge.bucket, row?.reportKey as string);
    expect(report).toContain('dataloader.TileNotReadable');
    expect((await eventsOf(jobId)).at(-1)?.detailType).toBe('Job Failed');
  });

  it.concurrent('REJECTS bad inputs with a code and a message, and creates no processing', async ({ expect }) => {
    // Prepare
    expectProcessings(0);
    const notJson = await tempFile('notes.geojson', 'id,name\n1,not json\n');
    const inputs = [
      { file: path.join(SAMPLE_DATA, 'aoi/caltrain-stations.geojson'), key: 'caltrain-stations.geojson', code: 'NO_POLYGONS' },
      { file: notJson, key: 'notes.geojson', code: 'NOT_JSON' },
      { file: path.join(SAMPLE_DATA, 'rasters/RGB.byte.tif'), key: 'buildings/RGB.byte.tif', code: 'PIXEL_SIZE_TOO_COARSE' },
    ];
    // Act
    const rows = await Promise.all(
      inputs.map(async (input) => bridge.waitForJob((await bridge.putInbox(input.file, input.key)).jobId)),
    );
    // Assess
    for (const [index, row] of rows.entries()) {
      expect(row?.status, inputs[index]?.key).toBe('REJECTED');
      expect(row?.error?.code, inputs[index]?.key).toBe(inputs[index]?.code);
      expect(row?.error?.message.length ?? 0).toBeGreaterThan(10);
      expect(await readText(bridge.s3, bridge.bucket, row?.reportKey as string)).toContain(inputs[index]?.code as string);
      expect(row?.processingId, inputs[index]?.key).toBeUndefined();
    }
  });

  // After the jobs above (tests run in order; the concurrent ones above as one group).
  it('created exactly one processing per job that processes (GeoJSON, Buildings on a GeoTIFF, the failing one) and none for the others', () => {
    // Assess
    expect(processingsExpected).toBe(3);
    expect(processingsCreated()).toBe(processingsExpected);
  });

  // Only the live service preprocesses images (the reference has no such step): defined for that mode only.
  // On its own, after the others: the same bytes as cogeo.tif, which the Buildings case uploads
  // too; side by side, that upload's image (preprocessed fine) is found for this one.
  if (live) it('REJECTS an image whose preprocessing FAILED, with Mapflow\'s preprocessing_error in the report', async () => {
    // Prepare: the simulator fails the preprocessing of files named *preprocessing-fail*
    const before = processingsCreated();
    // Act
    const { jobId } = await bridge.putInbox(path.join(SAMPLE_DATA, 'rasters/cogeo.tif'), 'buildings/preprocessing-fail.tif');
    const row = await bridge.waitForJob(jobId);
    // Assess
    expect(row?.status).toBe('REJECTED');
    expect(row?.error?.code).toBe('IMAGE_PREPROCESSING_FAILED');
    expect(row?.error?.message).toContain('Failed to build the COG');
    expect(await readText(bridge.s3, bridge.bucket, row?.reportKey as string)).toContain('Failed to build the COG');
    expect(row?.processingId).toBeUndefined();
    expect(processingsCreated()).toBe(before);
  });

  // On its own, after the others: it counts the simulator's processings around it.
  it('makes one job and one processing of duplicate events for one object', async () => {
    // Prepare
    const body = squareAoi({ west: 7.43 });
    const before = processingsCreated();
    // Act: the same object written twice (two notifications), and the event delivered again by hand
    await bridge.s3.send(new PutObjectCommand({ Bucket: bridge.bucket, Key: 'inbox/twice.geojson', Body: body }));
    const { object, jobId } = await bridge.putInbox(await tempFile('twice.geojson', body), 'twice.geojson');
    // The trigger delivers notifications asynchronously (SQS batches): redeliver once dispatch has started the job.
    await bridge.waitForJob(jobId);
    const redelivered = await bridge.engine.start(jobId, { jobId, input: object });
    await bridge.waitForJobs();
    const row = await bridge.ledger.get(jobId);
    // Assess
    expect(redelivered).toBe('duplicate');
    expect(row?.status, JSON.stringify(row?.error)).toBe('SUCCEEDED');
    expect(processingsCreated()).toBe(before + 1);
    expect((await eventsOf(jobId)).filter((event) => event.detailType === 'Job Received')).toHaveLength(1);
  });

  // Last in the block, so it sees every event the tests above made.
  itPublishesOnlyValidEvents(() => bridge);
});

describe.each(MODES)('local pipeline with every create answer lost ($mode)', ({ live, simulator }) => {
  let bridge: LocalBridge;

  beforeAll(async () => {
    bridge = await startTestBridge({ simulator: { ...simulator, dropAfterCommit: 1 } });
  });
  afterAll(async () => {
    await bridge?.close();
  });

  it('finds what each lost create made: one processing for a GeoJSON', async () => {
    // Act
    const { jobId } = await bridge.putInbox(path.join(SAMPLES, 'bern-three-quarters.geojson'), 'lost/bern-three-quarters.geojson');
    const row = await bridge.waitForJob(jobId);
    // Assess
    expect(row?.status).toBe('SUCCEEDED');
    expect(bridge.simulator?.stats().droppedResponses).toBeGreaterThanOrEqual(1);
    expect(bridge.simulator?.stats().processingsCreated).toBe(1);
  });

  // Only the live service lists mosaics (GET /rasters/mosaic), so only there is a mosaic whose create answer was lost found again.
  if (live) it('finds the lost mosaic in the mosaic list and the lost upload in the mosaic status: one mosaic, one image, one processing', async () => {
    // Act
    const { jobId } = await bridge.putInbox(path.join(SAMPLE_DATA, 'rasters/cogeo.tif'), 'buildings/lost.tif');
    const row = await bridge.waitForJob(jobId);
    // Assess
    expect(row?.status).toBe('SUCCEEDED');
    expect(row?.imageId).toBeTruthy();
    expect(bridge.simulator?.stats().processingsCreated).toBe(2);
  });

  // Last in the block, so it sees every event the tests above made.
  itPublishesOnlyValidEvents(() => bridge);
});
