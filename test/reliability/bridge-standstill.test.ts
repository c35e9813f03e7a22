/**
 * Issue 39, point 4: a pause is not a timeout. `mapflow-bridge start` with jobs in flight is stopped with
 * its whole process group (SIGSTOP, as Ctrl-Z or a sleeping laptop stops it: the bridge, s3rver, every
 * function process) for 90 s, longer than most functions' Timeout (60 s), then continued. Mapflow (the
 * simulator) and DynamoDB go on meanwhile, as they would. Before the standstill clock
 * (packages/local/src/assembly/standstill.ts), 2 of 8 good inputs ended FAILED SANDBOX_TIMEDOUT.
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../packages/bench/chaos.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 1_000_000));
const STANDSTILL_SECONDS = 90;

describe('the whole bridge stands still', () => {
  it.skipIf(process.platform === 'win32')(`a 90 s SIGSTOP with jobs in flight fails no good job (seed ${seed})`, { timeout: 420_000 }, async () => {
    // Prepare
    const log = (line: string) => console.log(line);

    // Act: 6 inputs at once, no kill; at the 2nd Processing Submitted the start's process group stops for 90 s.
    const figures = await runChaos({
      jobs: 6, batches: 1, kills: 0, seed, log, timeoutMs: 400_000,
      standstill: { seconds: STANDSTILL_SECONDS, atSubmitted: 2 },
      ...(await sharedLedgerOptions('standstill')),
    });

    // Assess
    expect(figures.standstills).toHaveLength(1);
    expect(figures.standstills[0]!.functionProcesses).toBeGreaterThan(0);
    expect(figures.inputsWithoutExactlyOneJob).toEqual([]);
    expect(figures.unfinishedJobs).toEqual([]);
    expect(figures.finalStates).toEqual({ SUCCEEDED: 6 });
    expect(figures.duplicateProcessings).toBe(0);
    expect(figures.processings).toBe(6);
    expect(figures.finalEventProblems).toEqual([]);
    expect(figures.missingInS3).toEqual([]);
    expect(figures.missingInOutputFolder).toEqual([]);
    // The bridge saw it (invocations it was timing were stopped with it) and said so.
    expect(figures.standstillsReported).toBeGreaterThan(0);
  });
});
