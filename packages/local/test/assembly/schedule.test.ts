/**
 * Issue 37 point 8: the reconciler runs at the template's schedule, not every
 * 30 s, and is invoked as EventBridge invokes a Lambda target: asynchronously
 * (a slow run does not hold the next tick back) with Lambda's two retries of a
 * function error. The timers are injected: the tests fire them, nothing waits.
 */
import { describe, expect, it } from 'vitest';
import { loadLocalAssembly } from '../../src/assembly/cache.ts';
import { readAssembly } from '../../src/assembly/template.ts';
import { localAssemblySettings } from '../../src/bridge.ts';
import { ASYNC_RETRY_DELAYS_MS, LocalSchedule, rateExpressionMs, scheduleScaleOf, SCHEDULE_SCALE_ENV } from '../../src/assembly/schedule.ts';

/** Timers the test fires by hand, oldest first. */
function manualTimers() {
  const pending: { fn: () => void; ms: number; cleared: boolean }[] = [];
  return {
    pending: () => pending.filter((t) => !t.cleared),
    setTimer: (fn: () => void, ms: number) => {
      const timer = { fn, ms, cleared: false };
      pending.push(timer);
      return timer;
    },
    clearTimer: (timer: unknown) => {
      (timer as { cleared: boolean }).cleared = true;
    },
    /** Fires the oldest pending timer; returns its delay. */
    fire: () => {
      const timer = pending.find((t) => !t.cleared);
      if (!timer) throw new Error('no timer pending');
      timer.cleared = true;
      timer.fn();
      return timer.ms;
    },
  };
}

/** Lets the promise callbacks queued so far run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("the template's schedule, locally", () => {
  it("reads the reconcile rule's rate from the synthesized template: 15 minutes, Lambda's 2 retries", async () => {
    // Prepare
    const assembly = await loadLocalAssembly(localAssemblySettings({}));

    // Act
    const model = await readAssembly(assembly.dir, { bucket: 'data', ledgerTable: 'ledger', stateMachineName: 'jobs' }, assembly.templateFile);
    const [schedule] = model.schedules;

    // Assess
    expect(schedule?.expression).toBe('rate(15 minutes)');
    expect(rateExpressionMs(schedule!.expression)).toBe(15 * 60_000);
    expect(schedule?.asyncRetryAttempts).toBe(2);
    expect(schedule?.retryAttempts).toBe(2);
  });

  it('parses rate expressions as EventBridge does, and nothing else', () => {
    expect(rateExpressionMs('rate(1 minute)')).toBe(60_000);
    expect(rateExpressionMs('rate(2 hours)')).toBe(7_200_000);
    expect(rateExpressionMs('rate(1 day)')).toBe(86_400_000);
    // Singular exactly when the value is 1; no zero; no seconds; no cron.
    expect(rateExpressionMs('rate(1 minutes)')).toBeUndefined();
    expect(rateExpressionMs('rate(5 minute)')).toBeUndefined();
    expect(rateExpressionMs('rate(0 minutes)')).toBeUndefined();
    expect(rateExpressionMs('rate(30 seconds)')).toBeUndefined();
    expect(rateExpressionMs('cron(0/15 * * * ? *)')).toBeUndefined();
  });

  it('takes the local factor from the option, else the environment, else 1, and refuses nonsense', () => {
    expect(scheduleScaleOf(undefined, {})).toBe(1);
    expect(scheduleScaleOf(undefined, { [SCHEDULE_SCALE_ENV]: '60' })).toBe(60);
    expect(scheduleScaleOf(4, { [SCHEDULE_SCALE_ENV]: '60' })).toBe(4);
    expect(() => scheduleScaleOf(0, {})).toThrow(RangeError);
    expect(() => scheduleScaleOf(undefined, { [SCHEDULE_SCALE_ENV]: 'fast' })).toThrow(SCHEDULE_SCALE_ENV);
  });
});

describe('LocalSchedule', () => {
  it('ticks at the rate divided by the factor, and a slow run does not hold the next tick back', async () => {
    // Prepare: a run that never ends by itself
    const timers = manualTimers();
    let runs = 0;
    const finish: (() => void)[] = [];
    const schedule = new LocalSchedule({
      periodMs: 15 * 60_000,
      scale: 60,
      invoke: () => {
        runs++;
        return new Promise<void>((resolve) => finish.push(resolve));
      },
      log: () => undefined,
      ...timers,
    });

    // Act
    schedule.start();
    const first = timers.fire();
    const second = timers.fire();

    // Assess: 15 min / 60 = 15 s between ticks; two runs at once
    expect([first, second]).toEqual([15_000, 15_000]);
    expect(runs).toBe(2);
    const stopping = schedule.stop();
    expect(timers.pending()).toEqual([]);
    finish.forEach((f) => f());
    await stopping;
  });

  it("retries a failed run twice, after 1 and 2 minutes (scaled), then discards the event, as Lambda's asynchronous invoke does", async () => {
    // Prepare
    const timers = manualTimers();
    const logs: string[] = [];
    let attempts = 0;
    const schedule = new LocalSchedule({
      periodMs: 15 * 60_000,
      scale: 10,
      invoke: async () => {
        attempts++;
        throw new Error('Runtime.HandlerError: boom');
      },
      log: (message) => logs.push(message),
      ...timers,
    });

    // Act: one delivery, then each retry's timer as it comes
    schedule.deliver();
    await settle();
    const firstDelay = timers.fire();
    await settle();
    const secondDelay = timers.fire();
    await settle();

    // Assess
    expect(attempts).toBe(3);
    expect([firstDelay, secondDelay]).toEqual(ASYNC_RETRY_DELAYS_MS.map((ms) => ms / 10));
    expect(timers.pending()).toEqual([]);
    expect(logs.at(-1)).toMatch(/failed 3 times; the event is discarded/);
    await schedule.stop();
  });

  it('follows the retry count of the function (MaximumRetryAttempts 0: no retry)', async () => {
    // Prepare
    const timers = manualTimers();
    let attempts = 0;
    const schedule = new LocalSchedule({ periodMs: 60_000, scale: 1, retryAttempts: 0, invoke: async () => {
        attempts++;
        throw new Error('x');
      }, log: () => undefined, ...timers });

    // Act
    schedule.deliver();
    await settle();

    // Assess
    expect(attempts).toBe(1);
    expect(timers.pending()).toEqual([]);
    await schedule.stop();
  });
});
