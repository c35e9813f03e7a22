/**
 * The fault suite, small: 12 jobs (GeoJSON AOIs, GeoTIFF uploads, GeoTIFF +
 * Buildings, a named project) through the whole local bridge while the
 * simulator fails 20 % of all requests (500/502/503, 429, resets) and loses
 * the response of a share of the creates. Every job must end final with its
 * event and its result or report, with no duplicate in Mapflow and no slot
 * left. `npx tsx packages/bench/fault-suite.ts` runs the large version.
 */
import { describe, expect, it } from 'vitest';
import { runFaultSuite } from '../../packages/bench/fault-suite.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';

describe('fault suite (12 jobs, 20 % faults, lost create responses)', () => {
  it('ends every job final with its event and result/report, no duplicate, nothing lost, no slot left', async () => {
    // Act: a higher drop rate than the bench's 10 % so that 12 jobs surely lose some create responses
    const figures = await runFaultSuite({ jobs: 12, faultRate: 0.2, dropAfterCommit: 0.25, seed: 11, maxConcurrentProcessings: 3, ledger: await sharedLedgerOptions('faults') });
    // Assess: the faults really happened
    expect(figures.faultsInjected).toBeGreaterThan(10);
    expect(figures.responsesDropped).toBeGreaterThan(0);
    // ... and nothing broke
    expect(figures.jobsRun).toBe(12);
    expect(figures.notSucceeded).toEqual([]);
    expect(figures.finalStates).toEqual({ SUCCEEDED: 12 });
    expect(figures.lost).toEqual([]);
    expect(figures.lostJobs).toBe(0);
    expect(figures.eventsMissing).toBe(0);
    expect(figures.duplicateFinalEvents).toBe(0);
    expect(figures.duplicateProcessings).toBe(0);
    expect(figures.duplicateImages).toBe(0);
    expect(figures.duplicateMosaics).toBe(0);
    expect(figures.processingsListed).toBe(figures.processingsCreated);
    expect(figures.executionsCrashed).toBe(0);
    expect(figures.slotsLeft).toBe(0);
  }, 120_000);
});
