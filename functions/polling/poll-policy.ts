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
  /**
   * Wait near the predicted end of a processing, seconds: the bound on the
   * time between Mapflow finishing and the bridge seeing it. Default 12
   * (maxSeconds if that is shorter).
   */
  nearEndSeconds?: number;
  /** Longest wait while the progress says the end is far, seconds. Default 30 x maxSeconds (1800); never below maxSeconds. */
  maxEstimatedSeconds?: number;
}

export const DEFAULT_POLL_POLICY: PollPolicy = {
  initialSeconds: 15,
  maxSeconds: 60,
  factor: 1.5,
  maxJobSeconds: 86_400,
};

/** The optional keys of a poll policy (unset: derived; see their docs). */
export const OPTIONAL_POLL_POLICY_KEYS = ['maxPolls', 'nearEndSeconds', 'maxEstimatedSeconds'] as const;

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

/**
 * A catalog scene "available for ordering by request" (mapflow-docs-en
 * source/api/api_reference.rst lines 1251-1252) keeps its processing AWAITING
 * until the provider delivers, which can take days. Time spent AWAITING, up
 * to this long, does not count toward `maxJobSeconds`, nor do the polls made
 * meanwhile count toward the poll count: the job keeps polling, slowly, and
 * fetches the result when it comes, instead of ending TIMEOUT while the
 * processing lives on in Mapflow. 7 days.
 */
export const MAX_AWAITING_SECONDS = 7 * 86_400;
/** Slowest poll while AWAITING, seconds: an hour. */
export const AWAITING_MAX_WAIT_SECONDS = 3_600;

/**
 * The wait after a poll that found the processing AWAITING for
 * `awaitedSeconds` in all: a tenth of the time it has waited so far, up to an
 * hour, or what the policy planned if that is longer (a short AWAITING, as
 * for a data provider, is polled as before).
 */
export function awaitingWaitSeconds(awaitedSeconds: number, plannedSeconds: number): number {
  return Math.max(plannedSeconds, Math.min(AWAITING_MAX_WAIT_SECONDS, Math.floor(awaitedSeconds / 10)));
}

/** Most polls awaitingWaitSeconds makes over MAX_AWAITING_SECONDS with planned waits of a second or more, plus a tenth (the execution history's bound). */
export function awaitingPollsBound(): number {
  let polls = 0;
  for (let awaited = 0; awaited < MAX_AWAITING_SECONDS; polls++) awaited += awaitingWaitSeconds(awaited, 1);
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

/**
 * The estimator: when the processing will end, from what Mapflow reports
 * (status, whole-number percent, its own `updated` time) and the earlier polls
 * of the same processing (a small state carried in `$.poll.estimate`). The
 * next poll comes `nearEndSeconds` after the earliest moment the processing
 * could end, so the end is seen within that time while the polls stay sparse
 * as long as the end is far.
 */

/**
 * How fast the rest of a processing may go, for the earliest moment it could
 * end: a burst at up to BURST_FACTOR times its long-run pace (or at the recent
 * pace, if that is faster: a burst under way) for at most BURST_SHARE of the
 * whole run, the rest at up to REST_FACTOR times the long-run pace. Mapflow's
 * percent moves unevenly (stalls, bursts); with these bounds the p95 detection
 * delay of packages/bench/polling.ts stays under nearEndSeconds at every seed tried, and
 * a processing faster still is seen late, not lost.
 */
export const BURST_FACTOR = 3.5;
export const BURST_SHARE = 0.3;
export const REST_FACTOR = 1.5;
/**
 * A young pace is a poor guide (a slow start may be a stall): a wait is at
 * most the time the progress has run, times 1 + percent / YOUNG_PERCENT.
 */
const YOUNG_PERCENT = 10;
/** How much earlier than the idle poll Mapflow's `updated` (on our clock) may read and still be believed. */
const UPDATED_TOLERANCE_MS = 60_000;
/** Samples of the percent kept in the estimate (the state stays under 400 bytes). */
const MAX_SAMPLES = 6;
/** Default wait near the predicted end, seconds: the bound on the detection delay (p95 goal: 15 s). */
export const DEFAULT_NEAR_END_SECONDS = 12;
/** Default longest wait while the estimate says the end is far, in maxSeconds. */
const MAX_ESTIMATED_IN_MAX_SECONDS = 30;

/** nearEndSeconds and maxEstimatedSeconds with their defaults. */
export function estimatedWaits(policy: PollPolicy): { near: number; longest: number } {
  const near = policy.nearEndSeconds ?? Math.min(DEFAULT_NEAR_END_SECONDS, policy.maxSeconds);
  const longest = Math.max(policy.maxSeconds, policy.maxEstimatedSeconds ?? MAX_ESTIMATED_IN_MAX_SECONDS * policy.maxSeconds);
  return { near, longest };
}

/** What one poll saw, on the bridge's clock. */
export interface PollObservation {
  /** When the poll was made (ms since the epoch, the bridge's clock). */
  at: number;
  /** Mapflow's status (null reads as 'UNPROCESSED'). */
  status: string;
  /** Percent completed, 0-100 (a fraction when it is the mean of several AOIs). */
  percent: number;
  /** Mapflow's `updated`, moved to the bridge's clock (see mapflowClockOffset), when known. */
  updatedAt?: number;
}

/**
 * The estimator's memory between polls (`$.poll.estimate`): a handful of
 * numbers, whatever the length of the processing. Times are ms on the
 * bridge's clock.
 */
export interface PollEstimate {
  /** The poll that made this estimate. */
  lastAt: number;
  /** The last poll that saw the processing not running (null, UNPROCESSED, AWAITING or 0 %). */
  idleAt?: number;
  /** When the progress began: Mapflow's time of the status change if it falls after idleAt, else halfway. */
  startAt?: number;
  /** [time, percent]: when each of the last few percents was first seen (the first one kept, oldest first). */
  samples: [number, number][];
  /** Polls in a row that saw no pace (the ramp of the blind waits). */
  blindPolls: number;
}

export interface PollPlan {
  waitSeconds: number;
  estimate: PollEstimate;
  /** Earliest and likeliest seconds to the end, when the processing runs and a pace is known. */
  remaining?: { earliest: number; likely: number };
}

export interface PollBudget {
  /** Polls left before the derived count runs out (pollsFor minus the polls made; an explicit maxPolls is meant to end a job early). */
  pollsLeft: number;
  /** Seconds left before maxJobSeconds. */
  secondsLeft: number;
}

function running(observation: PollObservation): boolean {
  return observation.status === 'IN_PROGRESS' && observation.percent > 0;
}

/** The estimate after one more poll (blindPolls is counted by planNextPoll). */
export function updateEstimate(previous: PollEstimate | undefined, observation: PollObservation): PollEstimate {
  const at = Math.round(observation.at);
  const blindPolls = previous?.blindPolls ?? 0;
  // Mapflow's clock may differ from ours (mapflowClockOffset corrects most of it); a time after our poll is not believed.
  const updatedAt = observation.updatedAt !== undefined && Number.isFinite(observation.updatedAt) && observation.updatedAt <= at ? Math.round(observation.updatedAt) : undefined;
  if (!running(observation)) {
    // Not running (yet, or again: AWAITING, a restart): what was learned of the pace is void.
    return { lastAt: at, idleAt: at, samples: [], blindPolls };
  }
  const last = previous?.samples[previous.samples.length - 1];
  // A percent more than one below the last: a new run (a restart). Less is the
  // noise of a per-AOI mean against the processing's whole percent.
  if (!previous || !last || observation.percent < last[1] - 1) {
    // First sight of progress (or a new run). It began
    // after the last idle poll; Mapflow's `updated` (the status change) says when.
    // Moved to our clock it reads a little early (by the time between our
    // create call and Mapflow's `created`), so a time shortly before the idle
    // poll is taken as the idle poll; one far before it is not believed (halfway).
    const idleAt = previous?.idleAt;
    let startAt: number | undefined;
    if (idleAt !== undefined) {
      startAt = updatedAt !== undefined && updatedAt >= idleAt - UPDATED_TOLERANCE_MS ? Math.max(idleAt, updatedAt) : Math.round((idleAt + at) / 2);
    }
    return { lastAt: at, ...(idleAt !== undefined && { idleAt }), ...(startAt !== undefined && { startAt }), samples: [[at, observation.percent]], blindPolls };
  }
  let samples = previous.samples;
  if (observation.percent > last[1]) {
    // Reached since the last poll: when Mapflow's `updated` says, if it moved
    // in between (a service that stamps percent changes), else when first seen.
    const reachedAt = updatedAt !== undefined && updatedAt > previous.lastAt ? updatedAt : at;
    samples = [...samples, [reachedAt, observation.percent]];
    // Keep the first sample (the long-run pace) and the most recent ones.
    if (samples.length > MAX_SAMPLES) samples = [samples[0] as [number, number], ...samples.slice(samples.length - MAX_SAMPLES + 1)];
  }
  return { ...previous, lastAt: at, samples };
}

/**
 * Seconds to the end: the earliest (see BURST_FACTOR) and the likeliest (at
 * the long-run pace). Undefined while the processing is not running or no
 * pace is known yet.
 */
export function estimateRemaining(estimate: PollEstimate, observation: PollObservation): { earliest: number; likely: number } | undefined {
  if (!running(observation)) return undefined;
  const at = observation.at;
  const percent = Math.min(100, observation.percent);
  const seconds = (from: number) => (at - from) / 1000;
  const paces: number[] = [];
  // Long-run pace: from the start of the progress (the true percent lies in [p, p + 1)) ...
  if (estimate.startAt !== undefined && seconds(estimate.startAt) >= 1) paces.push((percent + 0.5) / seconds(estimate.startAt));
  // ... or, start unknown, from the first percent seen.
  const first = estimate.samples[0];
  if (first && seconds(first[0]) >= 1 && percent > first[1]) paces.push((percent - first[1]) / seconds(first[0]));
  if (paces.length === 0) return undefined;
  // Recent pace: over the last few percents (a burst shows here first).
  const recent = estimate.samples[Math.max(1, estimate.samples.length - 3)];
  if (recent && seconds(recent[0]) >= 1 && percent > recent[1]) paces.push((percent - recent[1]) / seconds(recent[0]));
  const longRun = paces[0] as number;
  const left = 100 - percent;
  const likely = Math.max(0, left - 0.5) / longRun;
  const burstPace = Math.max(longRun * BURST_FACTOR, ...paces.slice(1));
  const ran = estimate.startAt !== undefined ? seconds(estimate.startAt) : first ? seconds(first[0]) : 0;
  const burstSeconds = BURST_SHARE * (ran + likely);
  const work = Math.max(0, left - 1);
  const earliest = work <= burstPace * burstSeconds ? work / burstPace : burstSeconds + (work - burstPace * burstSeconds) / (longRun * REST_FACTOR);
  return { earliest, likely };
}

/**
 * The wait before the next poll of a processing, and the estimate to carry
 * to it.
 *
 * - No pace yet (null, UNPROCESSED, AWAITING, 0 %, or a single percent seen):
 *   the ramp of nextPollSeconds (initialSeconds growing by factor up to
 *   maxSeconds); nothing tells when it will start.
 * - Running: `nearEndSeconds` after the earliest moment it could end, at most
 *   maxEstimatedSeconds, and not much longer than the progress has run (a
 *   young pace is a poor guide). Near the end that is every nearEndSeconds, so
 *   the end is seen within that time. A stall longer than the whole run before
 *   it is not believed for ever: the waits then grow with the stall.
 * - Never so often that the poll count (maxPollsOf) would run out before
 *   maxJobSeconds.
 * Jitter (up to 10 %) keeps jobs started together apart; once the end is
 * estimated it only shortens a wait, so the detection bound holds.
 */
export function planNextPoll(
  policy: PollPolicy,
  previous: PollEstimate | undefined,
  observation: PollObservation,
  budget: PollBudget,
  random: () => number = Math.random,
): PollPlan {
  const estimate = updateEstimate(previous, observation);
  const { near, longest } = estimatedWaits(policy);
  const remaining = estimateRemaining(estimate, observation);
  let seconds: number;
  if (!remaining) {
    estimate.blindPolls += 1;
    seconds = Math.min(policy.maxSeconds, policy.initialSeconds * policy.factor ** (estimate.blindPolls - 1));
  } else {
    estimate.blindPolls = 0;
    // The end cannot come before `earliest`: a poll `near` seconds later sees it in time.
    seconds = remaining.earliest + near;
    const began = estimate.startAt ?? (estimate.samples[0] as [number, number])[0];
    const young = ((observation.at - began) / 1000) * (1 + observation.percent / YOUNG_PERCENT);
    seconds = Math.min(longest, seconds, Math.max(near, young));
    const last = estimate.samples[estimate.samples.length - 1] as [number, number];
    const stuck = (observation.at - last[0]) / 1000;
    const before = (last[0] - began) / 1000;
    if (remaining.earliest <= near && stuck > Math.max(before, 10 * near)) {
      // A stall near the end, longer than the whole run before it: back off in proportion.
      seconds = Math.min(longest, Math.max(seconds, stuck / 4));
    }
  }
  const spread = (random() * 2 - 1) * JITTER;
  let waitSeconds = remaining ? Math.max(1, Math.floor(seconds * (1 - Math.abs(spread)))) : Math.max(1, Math.round(seconds * (1 + spread)));
  // The poll count (pollsFor) allows one poll per maxSeconds until
  // maxJobSeconds plus a margin. Short waits spend the margin and what longer
  // waits saved; once that is gone, poll no more often than the count allows
  // (after the jitter, which must not eat into it).
  if (budget.pollsLeft >= 1 && (budget.pollsLeft - 1) * policy.maxSeconds < budget.secondsLeft) {
    waitSeconds = Math.max(waitSeconds, Math.ceil(budget.secondsLeft / Math.max(1, budget.pollsLeft - 1)));
  }
  return { waitSeconds, estimate, ...(remaining && { remaining: { earliest: Math.round(remaining.earliest), likely: Math.round(remaining.likely) } }) };
}

/**
 * Milliseconds to add to a Mapflow time to read it on the bridge's clock:
 * our time of the create call minus Mapflow's `created`. Our time is taken
 * just before the call, so Mapflow times read up to one request's latency
 * early (well under a second; the estimate is made of minutes). Undefined
 * when either time is missing.
 */
export function mapflowClockOffset(createdByUs: string | undefined, createdByMapflow: string | undefined): number | undefined {
  const ours = createdByUs ? Date.parse(createdByUs) : Number.NaN;
  const theirs = createdByMapflow ? Date.parse(createdByMapflow) : Number.NaN;
  if (Number.isNaN(ours) || Number.isNaN(theirs)) return undefined;
  return ours - theirs;
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
