/**
 * How long to wait between two polls of a Mapflow processing.
 *
 * Mapflow sends no events, so the state machine polls. The wait grows
 * exponentially from `initialSeconds` by `factor` up to `maxSeconds`, with a
 * little jitter so that many jobs started together do not poll in lock-step.
 * When the percentage rises steadily, the wait is shortened to about the time
 * the processing needs to finish, so a job near completion is not left waiting
 * a full `maxSeconds` after Mapflow is done.
 */

export interface PollPolicy {
  /** First wait, seconds. */
  initialSeconds: number;
  /** Longest wait, seconds. */
  maxSeconds: number;
  /** Growth factor of the wait from one poll to the next. */
  factor: number;
  /**
   * Leave unset: the number of polls then follows from `maxJobSeconds` (see
   * pollsFor). A Mapflow processing may wait in AWAITING for hours (for its
   * imagery provider); the former fixed count (500 x 60 s = 8.3 h) ended such
   * jobs long before maxJobSeconds (24 h). When set, it caps the count further
   * (tests use it to end a job after a few polls).
   */
  maxPolls?: number;
  /** Seconds after the job was registered after which it is given up (TIMEOUT). The one limit. */
  maxJobSeconds: number;
}

export const DEFAULT_POLL_POLICY: PollPolicy = {
  initialSeconds: 15,
  maxSeconds: 60,
  factor: 1.5,
  maxJobSeconds: 86_400,
};

/**
 * Polls one processing may take within `maxJobSeconds`: the polls of the
 * ramp from initialSeconds up to maxSeconds, then one per maxSeconds, plus a
 * tenth for jitter and early polls near completion. A safety bound on the
 * execution history only: the job ends on time (maxJobSeconds) first.
 */
export function pollsFor(policy: Pick<PollPolicy, 'initialSeconds' | 'maxSeconds' | 'factor' | 'maxJobSeconds'>): number {
  let polls = 0;
  let elapsed = 0;
  let wait = policy.initialSeconds;
  while (wait < policy.maxSeconds && elapsed < policy.maxJobSeconds && polls < 1_000) {
    elapsed += wait;
    polls++;
    wait = policy.factor > 1 ? wait * policy.factor : policy.maxSeconds;
  }
  if (elapsed < policy.maxJobSeconds) polls += Math.ceil((policy.maxJobSeconds - elapsed) / policy.maxSeconds);
  return Math.ceil(polls * 1.1) + 1;
}

/** Fraction of the wait that jitter may add or take away. */
const JITTER = 0.1;

export interface PollProgress {
  /** Polls made so far, including the one just made (1 after the first poll). */
  polls: number;
  /** Percent completed now. */
  percent?: number;
  /** Percent completed at the previous poll. */
  previousPercent?: number;
  /** Seconds waited before the poll just made. */
  previousWaitSeconds?: number;
}

/**
 * Seconds to wait before the next poll: a whole number of at least 1 (what a
 * Step Functions Wait state takes).
 *
 * @param random a source of uniform numbers in [0, 1) (injected for tests)
 */
export function nextPollSeconds(policy: PollPolicy, progress: PollProgress, random: () => number = Math.random): number {
  const exponent = Math.max(0, progress.polls - 1);
  let seconds = Math.min(policy.maxSeconds, policy.initialSeconds * policy.factor ** exponent);

  const remaining = estimateRemainingSeconds(progress);
  if (remaining !== undefined && remaining < seconds) {
    // Near completion: poll about when it should be done, but not more often
    // than a third of the first wait (or every second for tiny policies).
    seconds = Math.max(policy.initialSeconds / 3, remaining);
  }

  const jitter = 1 + (random() * 2 - 1) * JITTER;
  return Math.max(1, Math.round(seconds * jitter));
}

/** Time to completion from the rate of the last two polls, when the percentage rose. */
export function estimateRemainingSeconds(progress: PollProgress): number | undefined {
  const { percent, previousPercent, previousWaitSeconds } = progress;
  if (percent === undefined || previousPercent === undefined || !previousWaitSeconds) return undefined;
  const rise = percent - previousPercent;
  if (rise <= 0 || percent >= 100) return undefined;
  return ((100 - percent) / rise) * previousWaitSeconds;
}

/** The poll count in force: derived from maxJobSeconds, capped by an explicit maxPolls. */
export function maxPollsOf(policy: PollPolicy): number {
  const derived = pollsFor(policy);
  return policy.maxPolls !== undefined ? Math.min(policy.maxPolls, derived) : derived;
}

/** True when the processing has been polled for too long: past maxJobSeconds (or, as a safety net, more polls than that time allows). */
export function pollBudgetExhausted(policy: PollPolicy, polls: number, jobStartedAt: Date | undefined, now: Date): boolean {
  if (polls >= maxPollsOf(policy)) return true;
  if (jobStartedAt && (now.getTime() - jobStartedAt.getTime()) / 1000 > policy.maxJobSeconds) return true;
  return false;
}

/**
 * Mapflow failure codes worth one restart: errors in loading imagery or inside
 * Mapflow's own pipeline, which a new run usually does not meet again.
 * Anything about the input (pixel size, zoom, geometry, no data) is not.
 */
const TRANSIENT_CODES = new Set([
  'dataloader.internalError',
  'dataloader.InternalError',
  'dataloader.MaploaderInternalError',
  'dataloader.SentinelLoaderInternalError',
  'dataloader.TileNotLoaded',
  'dataloader.TileNotReadable',
  'source-validator.UnhandledException',
  'source-validator.ReadFromS3Failed',
]);

export function isTransientFailureCode(code: string): boolean {
  return TRANSIENT_CODES.has(code) || /\.internalError$/.test(code);
}

/** Restart rule: a FAILED processing whose messages are all transient, restarted fewer than `maxRestarts` times. */
export function shouldRestart(messages: { code: string }[] | undefined, restartsSoFar: number, maxRestarts = 1): boolean {
  if (restartsSoFar >= maxRestarts) return false;
  if (!messages || messages.length === 0) return false;
  return messages.every((m) => isTransientFailureCode(m.code));
}
