/**
 * The poll estimator (functions/polling/poll-policy.ts planNextPoll): where
 * the next poll goes for a processing that waits, runs evenly, bursts,
 * stalls, reaches 100 % before OK, or reports times on a skewed clock; and
 * that its state stays small and its polls never run out before maxJobSeconds.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_POLL_POLICY,
  mapflowClockOffset,
  maxPollsOf,
  planNextPoll,
  pollBudgetExhausted,
  updateEstimate,
  type PollEstimate,
  type PollObservation,
  type PollPolicy,
} from '../../../../functions/polling/poll-policy.ts';
import { finePercent } from '../../../../functions/jobs/steps/poll-processing.ts';
import type { MapflowClient, Processing } from '../../../../functions/mapflow/index.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const noJitter = () => 0.5;
const roomy = { pollsLeft: 10_000, secondsLeft: 86_400 };

/** A processing on our clock: status and whole percent at a second after the create call; `updated` = last status change. */
interface Fake {
  end: number;
  awaitingUntil?: number;
  percentAt(second: number): number;
}

/** Polls `fake` the way the state machine does (first poll right after create); returns the polls and the detection delay. */
function run(fake: Fake, policy: PollPolicy = DEFAULT_POLL_POLICY, random = noJitter): { polls: number; delay: number; waits: number[]; estimates: PollEstimate[] } {
  let estimate: PollEstimate | undefined;
  let t = 0;
  const waits: number[] = [];
  const estimates: PollEstimate[] = [];
  for (let polls = 1; polls < 100_000; polls++) {
    if (t >= fake.end) return { polls, delay: t - fake.end, waits, estimates };
    const awaiting = fake.awaitingUntil !== undefined && t < fake.awaitingUntil;
    const observation: PollObservation = {
      at: T0 + t * 1000,
      status: awaiting ? 'AWAITING' : 'IN_PROGRESS',
      percent: awaiting ? 0 : Math.min(99, Math.floor(fake.percentAt(t))),
      updatedAt: T0 + (awaiting || fake.awaitingUntil === undefined ? 0 : fake.awaitingUntil) * 1000,
    };
    const plan = planNextPoll(policy, estimate, observation, { pollsLeft: maxPollsOf(policy) - polls, secondsLeft: policy.maxJobSeconds - t }, random);
    estimate = plan.estimate;
    estimates.push(estimate);
    waits.push(plan.waitSeconds);
    t += plan.waitSeconds;
  }
  throw new Error('never ended');
}

/** Linear progress from `from` to `end`. */
const linear = (end: number, from = 0): Fake => ({ end, awaitingUntil: from || undefined, percentAt: (s) => ((s - from) / (end - from)) * 100 });

describe('planNextPoll: where the polls go', () => {
  it('ramps while the processing is AWAITING (nothing tells when it starts) and learns no pace', () => {
    // Prepare / Act
    const { waits, estimates } = run({ end: 4_000, awaitingUntil: 3_000, percentAt: (s) => (s - 3_000) / 10 });
    // Assess: 15 s growing by 1.5 up to 60 s while AWAITING
    expect(waits.slice(0, 6)).toEqual([15, 23, 34, 51, 60, 60]);
    expect(estimates[5]).toMatchObject({ samples: [], blindPolls: 6 });
  });

  it('takes the start of progress from Mapflow\'s updated (the status change), not from the poll that first saw it', () => {
    // Prepare: AWAITING until 1000 s; polls at 0 and 1500 s
    const idle = updateEstimate(undefined, { at: T0, status: 'AWAITING', percent: 0 });
    // Act
    const seen = updateEstimate(idle, { at: T0 + 1_500_000, status: 'IN_PROGRESS', percent: 25, updatedAt: T0 + 1_000_000 });
    const unknown = updateEstimate(idle, { at: T0 + 1_500_000, status: 'IN_PROGRESS', percent: 25 });
    const early = updateEstimate(idle, { at: T0 + 1_500_000, status: 'IN_PROGRESS', percent: 25, updatedAt: T0 - 20_000 });
    const far = updateEstimate(idle, { at: T0 + 1_500_000, status: 'IN_PROGRESS', percent: 25, updatedAt: T0 - 3_600_000 });
    // Assess
    expect(seen.startAt).toBe(T0 + 1_000_000);
    expect(unknown.startAt).toBe(T0 + 750_000); // halfway between the idle poll and the first sight
    expect(early.startAt).toBe(T0); // a little before the idle poll (our clock offset reads early): the idle poll
    expect(far.startAt).toBe(T0 + 750_000); // an hour before it: not believed
  });

  it('does not believe an updated time after the poll (Mapflow\'s clock ahead) and corrects skew with the created times', () => {
    // Prepare: Mapflow's clock 10 minutes ahead of ours
    const skewMs = 600_000;
    const idle = updateEstimate(undefined, { at: T0, status: 'AWAITING', percent: 0 });
    const offset = mapflowClockOffset(new Date(T0).toISOString(), new Date(T0 + skewMs).toISOString());
    // Act
    const raw = updateEstimate(idle, { at: T0 + 1_500_000, status: 'IN_PROGRESS', percent: 25, updatedAt: T0 + 1_400_000 + skewMs });
    const corrected = updateEstimate(idle, { at: T0 + 1_500_000, status: 'IN_PROGRESS', percent: 25, updatedAt: T0 + 1_400_000 + skewMs + offset! });
    // Assess
    expect(offset).toBe(-skewMs);
    expect(raw.startAt).toBe(T0 + 750_000);
    expect(corrected.startAt).toBe(T0 + 1_400_000);
    expect(mapflowClockOffset(undefined, '2026-01-01T00:00:00Z')).toBeUndefined();
  });

  it('polls a steady one-hour processing a few times and sees the end within nearEndSeconds', () => {
    // Prepare / Act
    const { polls, delay } = run(linear(3_600));
    // Assess: fixed 30 s would poll 121 times
    expect(delay).toBeLessThanOrEqual(12);
    expect(polls).toBeLessThan(40);
  });

  it('sees the end of a burst (3x the pace for the last fifth) within nearEndSeconds', () => {
    // Prepare: 80 % in 4800 s, then the last 20 % in 400 s
    const fake: Fake = { end: 5_200, percentAt: (s) => (s <= 4_800 ? (s / 4_800) * 80 : 80 + ((s - 4_800) / 400) * 20) };
    // Act
    const { delay } = run(fake);
    // Assess
    expect(delay).toBeLessThanOrEqual(12);
  });

  it('polls densely through a short stall at 99 % (the end is near) and sees the end in time', () => {
    // Prepare: 99 % at 3564 s of a steady run, then a stall of 5 minutes
    const fake: Fake = { end: 3_900, percentAt: (s) => Math.min(99, (s / 3_600) * 100) };
    // Act
    const { delay, waits } = run(fake);
    // Assess
    expect(delay).toBeLessThanOrEqual(12);
    expect(waits.slice(-10).every((w) => w <= 12)).toBe(true);
  });

  it('is not fooled for long by a long stall: waits grow once it outlasts the run before it', () => {
    // Prepare: 99 % after 1 h, then stuck for 10 h
    const fake: Fake = { end: 3_600 + 36_000, percentAt: (s) => Math.min(99, (s / 3_600) * 100) };
    // Act
    const { polls, delay, waits } = run(fake);
    // Assess: every 12 s would be 3000 polls; the waits grow with the stall (a quarter of it)
    expect(polls).toBeLessThan(400);
    expect(Math.max(...waits)).toBeGreaterThan(600);
    expect(delay).toBeLessThanOrEqual(36_000 / 4 + 12);
  });

  it('polls every nearEndSeconds or less once 100 % shows while the status is still IN_PROGRESS', () => {
    // Prepare: a steady run seen at 50 %, then at 100 % (Mapflow finishing its vector stage)
    const first = planNextPoll(DEFAULT_POLL_POLICY, undefined, { at: T0, status: 'AWAITING', percent: 0 }, roomy, noJitter);
    const half = planNextPoll(DEFAULT_POLL_POLICY, first.estimate, { at: T0 + 600_000, status: 'IN_PROGRESS', percent: 50, updatedAt: T0 }, roomy, noJitter);
    // Act
    const low = planNextPoll(DEFAULT_POLL_POLICY, half.estimate, { at: T0 + 1_200_000, status: 'IN_PROGRESS', percent: 100, updatedAt: T0 }, roomy, () => 0);
    const high = planNextPoll(DEFAULT_POLL_POLICY, half.estimate, { at: T0 + 1_200_000, status: 'IN_PROGRESS', percent: 100, updatedAt: T0 }, roomy, () => 0.9999);
    // Assess: jitter only shortens a wait once the end is estimated
    expect(low.remaining?.earliest).toBe(0);
    expect(low.waitSeconds).toBeLessThanOrEqual(12);
    expect(high.waitSeconds).toBeLessThanOrEqual(12);
    expect(Math.min(low.waitSeconds, high.waitSeconds)).toBeGreaterThanOrEqual(10);
  });

  it('forgets the pace when the percent goes back (a restarted run) or the processing waits again', () => {
    // Prepare
    const a = updateEstimate(undefined, { at: T0, status: 'IN_PROGRESS', percent: 0 });
    const b = updateEstimate(a, { at: T0 + 60_000, status: 'IN_PROGRESS', percent: 40 });
    const c = updateEstimate(b, { at: T0 + 120_000, status: 'IN_PROGRESS', percent: 60 });
    // Act
    const back = updateEstimate(c, { at: T0 + 180_000, status: 'IN_PROGRESS', percent: 10 });
    const awaiting = updateEstimate(c, { at: T0 + 180_000, status: 'AWAITING', percent: 60 });
    const fine = updateEstimate(updateEstimate(c, { at: T0 + 150_000, status: 'IN_PROGRESS', percent: 60.6 }), { at: T0 + 180_000, status: 'IN_PROGRESS', percent: 60 });
    // Assess
    expect(c.samples).toEqual([[T0 + 60_000, 40], [T0 + 120_000, 60]]);
    expect(back.samples).toEqual([[T0 + 180_000, 10]]);
    // A per-AOI mean (60.6) then the whole percent (60): noise, not a new run
    expect(fine.samples).toEqual([[T0 + 60_000, 40], [T0 + 120_000, 60], [T0 + 150_000, 60.6]]);
    expect(awaiting).toMatchObject({ samples: [], idleAt: T0 + 180_000 });
  });
});

describe('planNextPoll: budget and state size', () => {
  it('keeps the estimate under 400 bytes of JSON, however long the processing', () => {
    // Prepare / Act
    const { estimates } = run(linear(6 * 3_600, 600));
    // Assess
    const largest = Math.max(...estimates.map((e) => JSON.stringify(e).length));
    expect(largest).toBeLessThan(400);
  });

  it('never spends the poll count before maxJobSeconds, even stuck near the end the whole time', () => {
    // Prepare: a tight budget (1 h, one poll a minute) and a processing stuck at 99 % for ever
    const policy: PollPolicy = { ...DEFAULT_POLL_POLICY, maxJobSeconds: 3_600 };
    const maxPolls = maxPollsOf(policy);
    let estimate: PollEstimate | undefined;
    let t = 0;
    let polls = 0;
    // Act: poll until maxJobSeconds
    while (t <= policy.maxJobSeconds) {
      polls++;
      const observation: PollObservation = { at: T0 + t * 1000, status: 'IN_PROGRESS', percent: t < 60 ? Math.floor(t * 1.65) : 99 };
      if (t < policy.maxJobSeconds) expect(pollBudgetExhausted(policy, polls, new Date(T0), new Date(T0 + t * 1000))).toBe(false);
      const plan = planNextPoll(policy, estimate, observation, { pollsLeft: maxPolls - polls, secondsLeft: policy.maxJobSeconds - t }, () => 0);
      estimate = plan.estimate;
      t += plan.waitSeconds;
    }
    // Assess
    expect(polls).toBeLessThanOrEqual(maxPolls);
  });

  it('waits at least what the remaining polls allow once the margin is spent', () => {
    // Prepare: 10 polls left for 3000 s, the end estimated near
    const first = planNextPoll(DEFAULT_POLL_POLICY, undefined, { at: T0, status: 'AWAITING', percent: 0 }, roomy, noJitter);
    const half = planNextPoll(DEFAULT_POLL_POLICY, first.estimate, { at: T0 + 600_000, status: 'IN_PROGRESS', percent: 98, updatedAt: T0 }, roomy, noJitter);
    // Act
    const tight = planNextPoll(DEFAULT_POLL_POLICY, half.estimate, { at: T0 + 601_000, status: 'IN_PROGRESS', percent: 99, updatedAt: T0 }, { pollsLeft: 10, secondsLeft: 3_000 }, noJitter);
    const free = planNextPoll(DEFAULT_POLL_POLICY, half.estimate, { at: T0 + 601_000, status: 'IN_PROGRESS', percent: 99, updatedAt: T0 }, roomy, noJitter);
    // Assess
    expect(free.waitSeconds).toBeLessThanOrEqual(12);
    expect(tight.waitSeconds).toBeGreaterThanOrEqual(3_000 / 9 - 1);
  });

  it('defaults nearEndSeconds to maxSeconds when that is shorter (local runs poll within 3 s)', () => {
    // Prepare
    const local: PollPolicy = { initialSeconds: 1, maxSeconds: 3, factor: 1.5, maxJobSeconds: 3_600 };
    // Act
    const { delay, waits } = run(linear(60, 5), local);
    // Assess
    expect(delay).toBeLessThanOrEqual(3);
    expect(Math.max(...waits)).toBeLessThanOrEqual(90);
  });
});

describe('finePercent: per-AOI progress', () => {
  /** A client that answers GET /processings/{id}/aois with these percents, counting the calls. */
  function client(percents: number[]) {
    const calls: string[] = [];
    return {
      calls,
      getProcessingAois: async (id: string) => {
        calls.push(id);
        return percents.map((percentCompleted, i) => ({ id: `aoi-${i}`, percentCompleted, messages: [] }));
      },
    } as unknown as MapflowClient & { calls: string[] };
  }
  const processing = (aoiCount: number, status = 'IN_PROGRESS') => ({ id: 'p-1', status, aoiCount, percentCompleted: 42, reviewStatus: null, messages: [] }) as unknown as Processing;

  it('takes the mean of the AOIs\' percents when several run and it agrees with the processing\'s own', async () => {
    // Prepare
    const three = client([40, 43, 44.5]);
    // Act
    const fine = await finePercent(three, processing(3), 42);
    // Assess
    expect(fine).toBe(42.5);
    expect(three.calls).toEqual(['p-1']);
  });

  it('keeps the processing\'s percent when the AOIs disagree with it, and asks nothing for one AOI or a processing not running', async () => {
    // Prepare
    const far = client([90, 95]);
    const one = client([41]);
    const waiting = client([40, 44]);
    // Act
    const disagreeing = await finePercent(far, processing(2), 42);
    const single = await finePercent(one, processing(1), 42);
    const awaiting = await finePercent(waiting, processing(2, 'AWAITING'), 0);
    // Assess
    expect(disagreeing).toBe(42);
    expect(single).toBe(42);
    expect(one.calls).toEqual([]);
    expect(awaiting).toBe(0);
    expect(waiting.calls).toEqual([]);
  });
});
