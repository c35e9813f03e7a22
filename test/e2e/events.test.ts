/**
 * Every event of a local end-to-end run validates against the published
 * schemas: successes, a restart, a Mapflow failure, rejections, a GeoTIFF
 * upload and a job that waits for a slot, through the real state machine.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { SAMPLES_AOI, SAMPLES_RASTERS, squareAoi, startTestBridge, tempFile } from './helpers.ts';
import { checkEventsFile } from '../support/validate-events.ts';

describe('events of an end-to-end run', { timeout: 300_000 }, () => {
  let bridge: LocalBridge;

  beforeAll(async () => {
    // One slot, so the second processing waits (Job Queued).
    bridge = await startTestBridge({ maxConcurrentProcessings: 1 });
  });
  afterAll(async () => {
    await bridge?.close();
  });

  it('all validate against schemas/events, and cover every detail-type but Job Cancelled', async () => {
    // Prepare
    const inputs: [string, string][] = [
      [await tempFile('ok.geojson', squareAoi()), 'ok.geojson'],
      [await tempFile('second.geojson', squareAoi({ west: 7.45 })), 'second.geojson'],
      [await tempFile('restart.geojson', squareAoi({ west: 7.46, mapflow: { meta: { simulate: 'fail-once:dataloader.TileNotReadable' } } })), 'restart.geojson'],
      [await tempFile('fails.geojson', squareAoi({ west: 7.47, mapflow: { meta: { simulate: 'fail:dataloader.TileNotReadable' } } })), 'fails.geojson'],
      [path.join(SAMPLES_AOI, 'caltrain-stations.geojson'), 'caltrain-stations.geojson'],
      [path.join(SAMPLES_RASTERS, 'cogeo.tif'), 'buildings/cogeo.tif'],
    ];
    // Act
    const jobs = await Promise.all(inputs.map(([file, key]) => bridge.putInbox(file, key)));
    const rows = await Promise.all(jobs.map(({ jobId }) => bridge.waitForJob(jobId, { timeoutMs: 240_000 })));
    const { count, detailTypes, problems } = await checkEventsFile(bridge.eventsFile);
    // Assess: the run did what the inputs ask
    expect(rows.map((row) => row?.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'FAILED', 'REJECTED', 'SUCCEEDED']);
    // Assess: every event is valid, and there are events of every kind
    expect(count).toBeGreaterThan(20);
    expect(problems).toEqual([]);
    expect([...detailTypes].sort()).toEqual([
      'Image Uploaded',
      'Image Uploading',
      'Job Failed',
      'Job Queued',
      'Job Received',
      'Job Rejected',
      'Job Succeeded',
      'Processing Restarted',
      'Processing Started',
      'Processing Submitted',
    ]);
  }, 300_000);
});
