/**
 * A user who drops the exact same file again (same key, same bytes) is told
 * that it is the same, finished job and how to run it again, instead of
 * seeing nothing (exactly once: it is not processed twice).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { squareAoi, startTestBridge, tempFile } from './helpers.ts';

describe('dropping a finished job again', () => {
  const lines: string[] = [];
  let bridge: LocalBridge;

  beforeAll(async () => {
    bridge = await startTestBridge({ log: (line) => lines.push(line) });
  }, 120_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('says the file is the same, finished job and how to run it again', { timeout: 60_000 }, async () => {
    // Prepare: a job that has SUCCEEDED
    const file = await tempFile('again.geojson', squareAoi({ west: 7.45 }));
    const first = await bridge.putInbox(file, 'again.geojson');
    await bridge.waitForJobs();
    expect((await bridge.ledger.get(first.jobId))?.status).toBe('SUCCEEDED');
    const before = bridge.simulator!.stats().processingsCreated;

    // Act: the same bytes under the same key
    const second = await bridge.putInbox(file, 'again.geojson');
    await bridge.waitForJobs();

    // Assess: same job, nothing redone, and the user is told
    expect(second.jobId).toBe(first.jobId);
    expect(bridge.simulator!.stats().processingsCreated).toBe(before);
    expect(lines.join('\n')).toMatch(new RegExp(`again\\.geojson: same file as job ${first.jobId}, already SUCCEEDED: not run again\\. To run it again, drop it under a new name or change the file\\.`));
  });
});
