/**
 * What the user sees while waiting is true (issue 8.5): a GeoTIFF on a route
 * that processes images waits for a concurrency slot after its upload, and
 * shows it like a GeoJSON does: QUEUED in the ledger history (after
 * UPLOADED) and a Job Queued event, which the live output prints.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerRow } from '../../functions/core/model.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import type { LocalEvent } from '../../packages/local/src/events/file.ts';
import { SAMPLES_RASTERS, squareAoi, startTestBridge, tempFile } from './helpers.ts';

/** Resolves once `check` gives a value (polled; the test's own timeout bounds it). */
async function eventually<T>(check: () => Promise<T | undefined>, everyMs = 200): Promise<T> {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

describe('a GeoTIFF waiting for a slot after its upload', () => {
  let bridge: LocalBridge;
  const events: LocalEvent[] = [];

  beforeAll(async () => {
    // One slot, and processings far longer than the test, so the GeoJSON holds it however slow the machine is (the bridge is closed, not awaited).
    bridge = await startTestBridge({ maxConcurrentProcessings: 1, simulator: { processingSeconds: 3_600, seed: 7 }, onEvent: (event) => events.push(event) });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('is QUEUED after UPLOADED in the ledger, with a Job Queued event', { timeout: 600_000 }, async () => {
    // Prepare: a GeoJSON takes the only slot
    const holder = await bridge.putInbox(await tempFile('slot-holder.geojson', squareAoi()), 'slot-holder.geojson');
    await eventually(async () => ((await bridge.ledger.get(holder.jobId))?.status === 'IN_PROGRESS' ? true : undefined));
    // Act
    const image = await bridge.putInbox(path.join(SAMPLES_RASTERS, 'cogeo.tif'), 'buildings/cogeo.tif');
    const row = await eventually<LedgerRow>(async () => {
      const current = await bridge.ledger.get(image.jobId);
      return current?.status === 'QUEUED' ? current : undefined;
    });
    // Assess
    expect(row.statusHistory.map((step) => step.status)).toEqual(['RECEIVED', 'UPLOADING', 'UPLOADED', 'QUEUED']);
    expect(row.mosaicId).toBeTruthy();
    await eventually(async () => (events.some((e) => e.detail.jobId === image.jobId && e.detailType === 'Job Queued') ? true : undefined));
    const queued = events.find((e) => e.detail.jobId === image.jobId && e.detailType === 'Job Queued')!;
    expect(queued.detail).toMatchObject({ status: 'QUEUED', kind: 'geotiff', routeName: 'buildings' });
    expect((await bridge.ledger.get(holder.jobId))?.status).toBe('IN_PROGRESS');
  });
});
