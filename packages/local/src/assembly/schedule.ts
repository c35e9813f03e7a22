/**
 * The template's scheduled rule, locally (issue 37 point 8): the reconcile
 * function runs at the rule's own rate, not at a period of our choosing, and
 * it is invoked as EventBridge invokes a Lambda target: asynchronously, so a
 * slow run never delays the next tick, and a run that fails is run again by
 * Lambda's asynchronous retries.
 *
 * A local factor (`scheduleScale`, env MAPFLOW_BRIDGE_SCHEDULE_SCALE) divides
 * every period of this clock, the rate and the retry delays alike, for runs
 * that cannot wait 15 minutes (docs/local.md, "The reconciler's schedule").
 */

/** The environment variable of the local factor, read when the option is not given. */
export const SCHEDULE_SCALE_ENV = 'MAPFLOW_BRIDGE_SCHEDULE_SCALE';

const UNIT_MS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/**
 * The period of an EventBridge `rate(value unit)` expression in ms; undefined
 * for a cron() expression or anything else. The value is a positive whole
 * number; the unit is minute(s), hour(s) or day(s), singular exactly when the
 * value is 1 (docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html,
 * "Rate expressions").
 */
export function rateExpressionMs(expression: string): number | undefined {
  const match = /^rate\((\d+) (minute|hour|day)(s?)\)$/.exec(expression.trim());
  if (!match) return undefined;
  const value = Number(match[1]);
  if (!Number.isSafeInteger(value) || value < 1) return undefined;
  if ((value === 1) !== (match[3] === '')) return undefined;
  return value * UNIT_MS[match[2]!]!;
}

/** The local factor: the option, else the environment variable, else 1 (AWS's own times). */
export function scheduleScaleOf(option: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  const raw = option ?? (env[SCHEDULE_SCALE_ENV] !== undefined && env[SCHEDULE_SCALE_ENV] !== '' ? Number(env[SCHEDULE_SCALE_ENV]) : 1);
  if (!Number.isFinite(raw) || raw <= 0) throw new RangeError(`the local schedule factor must be a number above 0 (${SCHEDULE_SCALE_ENV} or scheduleScale), not ${String(option ?? env[SCHEDULE_SCALE_ENV])}`);
  return raw;
}

/**
 * How Lambda retries an asynchronous invocation whose function returned an
 * error: two more attempts, one minute before the first and two before the
 * second (docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
 * MaximumRetryAttempts of the function's EventInvokeConfig lowers the count.
 */
export const ASYNC_RETRY_DELAYS_MS = [60_000, 120_000] as const;

export interface LocalScheduleOptions {
  /** The rule's period in ms, before the factor. */
  periodMs: number;
  /** The local factor: every period and delay is divided by it. */
  scale: number;
  /** One invocation of the target with a fresh scheduled event; rejects with the function's error. */
  invoke: () => Promise<unknown>;
  /** Retries after a function error (Lambda's default 2). */
  retryAttempts?: number;
  log: (message: string) => void;
  /** Timers, injected by the tests. */
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

/** A rule's schedule delivering to a Lambda target asynchronously, with Lambda's retries on a function error. */
export class LocalSchedule {
  private readonly inFlight = new Set<Promise<void>>();
  /** Pending timers, each with what to settle if the schedule stops first. */
  private readonly timers = new Map<unknown, (() => void) | undefined>();
  private stopped = false;
  private readonly setTimer: NonNullable<LocalScheduleOptions['setTimer']>;
  private readonly clearTimer: NonNullable<LocalScheduleOptions['clearTimer']>;

  constructor(private readonly options: LocalScheduleOptions) {
    this.setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = options.clearTimer ?? ((timer) => clearTimeout(timer as NodeJS.Timeout));
  }

  /** The period between ticks, as run here. */
  get localPeriodMs(): number {
    return this.options.periodMs / this.options.scale;
  }

  start(): void {
    this.arm(this.localPeriodMs, () => {
      this.start();
      this.deliver();
    });
  }

  /**
   * One scheduled event, handed over without waiting for the function (an
   * asynchronous invoke returns once the event is queued): the next tick comes
   * on time even while this one still runs, as on AWS.
   */
  deliver(): void {
    if (this.stopped) return;
    const run = this.attempt(0).finally(() => this.inFlight.delete(run));
    this.inFlight.add(run);
  }

  /** Resolves once no delivery runs: no tick, no retry after this. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const [timer, onStop] of this.timers) {
      this.clearTimer(timer);
      onStop?.();
    }
    this.timers.clear();
    await Promise.all([...this.inFlight]);
  }

  private async attempt(retry: number): Promise<void> {
    try {
      await this.options.invoke();
    } catch (error) {
      const retries = this.options.retryAttempts ?? ASYNC_RETRY_DELAYS_MS.length;
      const message = error instanceof Error ? error.message : String(error);
      if (this.stopped) return;
      if (retry >= retries) {
        // Lambda discards the event here (or sends it to an on-failure destination / DLQ, which the bridge has none of).
        this.options.log(`local bridge: the scheduled reconcile failed ${retry + 1} times; the event is discarded, the next tick runs it again: ${message}`);
        return;
      }
      const delay = ASYNC_RETRY_DELAYS_MS[Math.min(retry, ASYNC_RETRY_DELAYS_MS.length - 1)]! / this.options.scale;
      this.options.log(`local bridge: the scheduled reconcile failed (${message}); Lambda's asynchronous retry ${retry + 1} of ${retries} in ${Math.round(delay / 1000)} s`);
      await new Promise<void>((resolve) => this.arm(delay, resolve, resolve));
      if (!this.stopped) await this.attempt(retry + 1);
    }
  }

  private arm(ms: number, fn: () => void, onStop?: () => void): void {
    if (this.stopped) {
      onStop?.();
      return;
    }
    const timer = this.setTimer(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    (timer as { unref?: () => void }).unref?.();
    this.timers.set(timer, onStop);
  }
}
