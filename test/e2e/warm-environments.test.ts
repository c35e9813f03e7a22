/**
 * Function environments stay warm from job to job, as Lambda keeps an
 * execution environment: a second job through the same bridge starts no new
 * environment of the light functions (the ones that run as threads), whose
 * dozen steps per job used to evict each other's environments from one
 * shared budget of four, so that nearly every step was a cold start.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { UNTRUSTED_INPUT_STEPS } from '../../packages/local/src/crash-resumes.ts';
import { squareAoi, startTestBridge, tempFile } from './helpers.ts';

describe('warm function environments', () => {
  let bridge: LocalBridge;
  beforeAll(async () => {
    bridge = await startTestBridge();
  });
  afterAll(async () => {
    await bridge?.close();
  });

  const coldStarts = () =>
    Object.fromEntries(
      [...bridge.assembly.functions.values()].filter((fn) => !UNTRUSTED_INPUT_STEPS.has(fn.spec.bridgeFunction)).map((fn) => [fn.spec.bridgeFunction, fn.coldStarts]),
    );

  it('runs a second job on the environments the first one started', async () => {
    // Prepare: one job through the bridge
    const drop = async (name: string, west: number) => {
      const job = await bridge.putInbox(await tempFile(`${name}.geojson`, squareAoi({ west })), `${name}.geojson`);
      await bridge.waitForJobs();
      return (await bridge.ledger.get(job.jobId))?.status;
    };
    expect(await drop('first', 7.44)).toBe('SUCCEEDED');
    const afterFirst = coldStarts();

    // Act
    const status = await drop('second', 7.46);

    // Assess: the same environments served it
    expect(status).toBe('SUCCEEDED');
    expect(Object.values(afterFirst).filter((starts) => starts > 0).length).toBeGreaterThan(4);
    expect(coldStarts()).toEqual(afterFirst);
  });
});
