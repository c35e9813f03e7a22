/**
 * Poll Processing with the estimator, against the Mapflow simulator in its
 * live shapes (status null, UNPROCESSED, AWAITING, then IN_PROGRESS; times
 * without a zone) and a bridge clock one hour ahead of Mapflow's: the step
 * carries the estimate from poll to poll in `$.poll.estimate`, reads the
 * start of the progress from Mapflow's `updated` moved to our clock, and the
 * job still ends OK.
 */
import { describe, expect, it } from 'vitest';
import type { PollResult } from '../../../../../functions/jobs/workflow.ts';
import type { StepContext } from '../../../../../functions/jobs/context.ts';
import { Driver, dropInput, useBenches } from '../../../../support/workflow-harness.ts';

const benches = useBenches();

/** The driver, keeping every `$.poll` the step returned and every `$.processing`. */
class RecordingDriver extends Driver {
  readonly polls: PollResult[] = [];
  readonly processings: { startedAt: string; processingId: string }[] = [];
  override async task<S, R>(state: string, fn: (s: S, ctx: StepContext) => Promise<R>, payload: S): Promise<R> {
    const result = await super.task(state, fn, payload);
    if (state === 'Poll Processing') this.polls.push(result as PollResult);
    if (state === 'Create Processing') this.processings.push(result as { startedAt: string; processingId: string });
    return result;
  }
}

const SQUARE = JSON.stringify({
  type: 'Feature',
  properties: {},
  geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.445, 46.94], [7.445, 46.943], [7.44, 46.943], [7.44, 46.94]]] },
});

describe('Poll Processing with the estimator', () => {
  it('carries a small estimate, takes the start of progress from updated on our clock (1 h skew) and ends OK', async () => {
    // Prepare: queued 0.5 s, AWAITING 2.5 s, then an 8 s run; our clock 1 h ahead of Mapflow's
    const queuedSeconds = 0.5;
    const awaitingSeconds = 2.5;
    const bench = await benches.open({
      simulator: { realShapes: true, queuedSeconds, awaitingSeconds, processingSeconds: 8 },
      pollPolicy: { initialSeconds: 2, maxSeconds: 2 },
    });
    const skewMs = 3_600_000;
    bench.ctx.now = () => new Date(Date.now() + skewMs);
    const start = await dropInput(benches.aws.s3, 'inbox/poll-step/square.geojson', SQUARE);
    const driver = new RecordingDriver(bench.ctx, { msPerSecond: 1000 });
    // Act
    const final = await driver.runJob(start);
    // Assess
    expect(final.finish?.status).toBe('SUCCEEDED');
    const waits = driver.polls.filter((p) => p.outcome === 'WAIT');
    expect(waits.length).toBeGreaterThan(2);
    expect(driver.polls.at(-1)?.outcome).toBe('OK');
    for (const poll of waits) expect(JSON.stringify(poll.estimate).length).toBeLessThan(400);
    // The first poll that saw progress: its start is Mapflow's status change (created + queued + AWAITING) on our
    // clock, which reads early by the time between our startedAt and Mapflow's created (then the idle poll stands in).
    const running = waits.find((p) => p.estimate?.startAt !== undefined);
    expect(running).toBeDefined();
    const startedAt = Date.parse(driver.processings[0]!.startedAt);
    const { idleAt, startAt } = running!.estimate!;
    expect(startAt).toBe(Math.max(idleAt!, startedAt + (queuedSeconds + awaitingSeconds) * 1000));
    // Carried: every later poll keeps that start and the first sample.
    const later = waits.slice(waits.indexOf(running!));
    for (const poll of later) {
      expect(poll.estimate?.startAt).toBe(running!.estimate!.startAt);
      expect(poll.estimate?.samples[0]).toEqual(running!.estimate!.samples[0]);
    }
    expect(later.at(-1)!.estimate!.samples.length).toBeGreaterThan(1);
  }, 120_000);
});
