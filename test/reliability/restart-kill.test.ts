/**
 * Point 5 of issue 24: "restart a processing once" holds when the bridge is
 * killed -9 around the restart. The execution resumed on the next start has
 * lost its state ($.restart, $.poll); the ledger has not.
 */
import { describe, expect, it } from 'vitest';
import type { PartState, PollResult, WorkflowState } from '../../functions/jobs/workflow.ts';
import { acquireSlot } from '../../functions/jobs/steps/acquire-slot.ts';
import { createProcessing } from '../../functions/jobs/steps/create-processing.ts';
import { planProcessing } from '../../functions/jobs/steps/plan-processing.ts';
import { pollProcessing } from '../../functions/jobs/steps/poll-processing.ts';
import { registerJob } from '../../functions/jobs/steps/register-job.ts';
import { restartProcessing } from '../../functions/jobs/steps/restart-processing.ts';
import { Driver, dropInput, useBenches, type Bench } from '../support/workflow-harness.ts';

const AOI = JSON.stringify({
  type: 'FeatureCollection',
  features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.445, 46.94], [7.445, 46.943], [7.44, 46.943], [7.44, 46.94]]] } }],
});

const benches = useBenches();

/** Polls (waits compressed) until the outcome is not WAIT. */
async function pollUntilDecided(driver: Driver, state: PartState): Promise<PollResult> {
  for (;;) {
    state.poll = await driver.task('Poll Processing', pollProcessing, state);
    if (state.poll.outcome !== 'WAIT') return state.poll;
    await driver.wait(state.poll.waitSeconds);
  }
}

/** A part from the top, as an execution started again after a kill: Acquire Slot, Create Processing (finds the first one). */
async function resumedPart(driver: Driver, job: NonNullable<WorkflowState['job']>, plan: NonNullable<WorkflowState['plan']>): Promise<PartState> {
  const state: PartState = { job, part: plan.parts[0]! };
  state.slot = await driver.task('Acquire Slot', acquireSlot, state);
  state.processing = await driver.task('Create Processing', createProcessing, state);
  return state;
}

/**
 * A job whose one processing fails with `simulate` (the simulator's meta),
 * driven to its first RESTART decision: Register Job, Plan Processing, the
 * part created and polled.
 */
async function jobAtFirstRestart(simulate: string, key: string): Promise<{ bench: Bench; driver: Driver; jobId: string; job: NonNullable<WorkflowState['job']>; plan: NonNullable<WorkflowState['plan']>; first: PartState }> {
  const bench = await benches.open({ routes: [{ name: 'default', prefix: '', meta: { simulate } }] });
  const start = await dropInput(benches.aws.s3, key, AOI);
  const driver = new Driver(bench.ctx);
  const top: WorkflowState = { jobId: start.jobId, input: start.input };
  const job = (top.job = await driver.task('Register Job', registerJob, { ...top, executionArn: `arn:aws:states:local:0:execution:jobs:${start.jobId}` }));
  const plan = (top.plan = await driver.task('Plan Processing', planProcessing, top));
  const first = await resumedPart(driver, job, plan);
  expect((await pollUntilDecided(driver, first)).outcome).toBe('RESTART');
  return { bench, driver, jobId: start.jobId, job, plan, first };
}

describe('restart once across a kill -9', { timeout: 120_000 }, () => {
  it('a processing restarted just before the kill is not restarted again by the resumed execution', async () => {
    // Prepare: a processing that fails with a transient code every time
    const { bench, driver, jobId, job, plan, first } = await jobAtFirstRestart('fail:dataloader.TileNotReadable', 'inbox/flaky.geojson');
    first.restart = await driver.task('Restart Processing', restartProcessing, first);

    // Act: killed here; the execution starts again from the top with none of that state
    const resumed = await resumedPart(driver, job, plan);
    const decided = await pollUntilDecided(driver, resumed);

    // Assess: the second failure ends the part; one processing, two attempts in the ledger
    expect(resumed.processing?.processingId).toBe(first.processing?.processingId);
    expect(decided.outcome).toBe('FAILED');
    expect(decided.restarts).toBe(1);
    expect(driver.calls.filter((call) => call.state === 'Restart Processing')).toHaveLength(1);
    expect((await bench.ledger.get(jobId))?.parts?.[0]).toMatchObject({ attempts: 2 });
  });

  it('a restart recorded but never sent (killed in between) is sent once by the resumed execution', async () => {
    // Prepare: the processing failed once; the ledger records a restart that never reached Mapflow
    const { bench, driver, jobId, job, plan } = await jobAtFirstRestart('fail-once:dataloader.TileNotReadable', 'inbox/flaky-once.geojson');
    const row = await bench.ledger.get(jobId);
    await bench.ledger.upsertPart(jobId, { ...row!.parts![0]!, attempts: 2, restartRequestedAt: new Date().toISOString() });

    // Act: the resumed execution
    const resumed = await resumedPart(driver, job, plan);
    const again = await pollUntilDecided(driver, resumed);
    resumed.restart = await driver.task('Restart Processing', restartProcessing, resumed);
    const after = await pollUntilDecided(driver, resumed);

    // Assess: the same restart sent (attempt 2, not 3), and the processing then succeeds
    expect(again).toMatchObject({ outcome: 'RESTART', resendRestart: true, restarts: 1 });
    expect(after.outcome).toBe('OK');
    expect((await bench.ledger.get(jobId))?.parts?.[0]).toMatchObject({ attempts: 2 });
  });
});
