import { describe, expect, it } from 'vitest';
import {
  DEFAULT_POLL_POLICY,
  estimateRemainingSeconds,
  isTransientFailureCode,
  nextPollSeconds,
  pollBudgetExhausted,
  shouldRestart,
} from '../../../../functions/polling/poll-policy.ts';

const noJitter = () => 0.5; // random() = 0.5 -> jitter factor exactly 1

describe('nextPollSeconds', () => {
  it('grows exponentially from initialSeconds by factor and stops at maxSeconds', () => {
    // Prepare
    const policy = { ...DEFAULT_POLL_POLICY, initialSeconds: 10, factor: 2, maxSeconds: 60 };
    // Act
    const waits = [1, 2, 3, 4, 5].map((polls) => nextPollSeconds(policy, { polls }, noJitter));
    // Assess
    expect(waits).toEqual([10, 20, 40, 60, 60]);
  });

  it('adds at most 10% jitter either way, and never less than one second', () => {
    // Prepare
    const policy = { ...DEFAULT_POLL_POLICY, initialSeconds: 100, maxSeconds: 100 };
    // Act
    const low = nextPollSeconds(policy, { polls: 1 }, () => 0);
    const high = nextPollSeconds(policy, { polls: 1 }, () => 0.9999);
    const tiny = nextPollSeconds({ ...policy, initialSeconds: 0.1, maxSeconds: 0.1 }, { polls: 1 }, () => 0);
    // Assess
    expect(low).toBe(90);
    expect(high).toBe(110);
    expect(tiny).toBe(1);
  });

  it('waits less near completion when the percentage rises steadily', () => {
    // Prepare: 80% -> 90% in 60 s, so about 60 s remain... at 90% -> 96% in 60 s, 40 s remain
    const policy = { ...DEFAULT_POLL_POLICY, initialSeconds: 15, maxSeconds: 120, factor: 2 };
    // Act
    const wait = nextPollSeconds(policy, { polls: 6, percent: 96, previousPercent: 90, previousWaitSeconds: 60 }, noJitter);
    const stalled = nextPollSeconds(policy, { polls: 6, percent: 90, previousPercent: 90, previousWaitSeconds: 60 }, noJitter);
    // Assess
    expect(wait).toBe(40);
    expect(stalled).toBe(120);
  });

  it('estimates no remaining time without a rise', () => {
    expect(estimateRemainingSeconds({ polls: 2, percent: 50, previousPercent: 60, previousWaitSeconds: 10 })).toBeUndefined();
    expect(estimateRemainingSeconds({ polls: 2, percent: 50 })).toBeUndefined();
    expect(estimateRemainingSeconds({ polls: 2, percent: 50, previousPercent: 25, previousWaitSeconds: 10 })).toBe(20);
  });
});

describe('pollBudgetExhausted', () => {
  it('stops after maxPolls or maxJobSeconds', () => {
    // Prepare
    const policy = { ...DEFAULT_POLL_POLICY, maxPolls: 3, maxJobSeconds: 100 };
    const start = new Date('2025-01-01T00:00:00Z');
    // Act / Assess
    expect(pollBudgetExhausted(policy, 2, start, new Date('2025-01-01T00:01:00Z'))).toBe(false);
    expect(pollBudgetExhausted(policy, 3, start, new Date('2025-01-01T00:01:00Z'))).toBe(true);
    expect(pollBudgetExhausted(policy, 1, start, new Date('2025-01-01T00:02:00Z'))).toBe(true);
    expect(pollBudgetExhausted(policy, 1, undefined, new Date('2030-01-01T00:00:00Z'))).toBe(false);
  });
});

describe('restart rule', () => {
  it('treats loader and internal errors as transient, input errors not', () => {
    expect(isTransientFailureCode('dataloader.TileNotReadable')).toBe(true);
    expect(isTransientFailureCode('dataloader.TileNotLoaded')).toBe(true);
    expect(isTransientFailureCode('inference.internalError')).toBe(true);
    expect(isTransientFailureCode('vector-processor.internalError')).toBe(true);
    expect(isTransientFailureCode('source-validator.PixelSizeTooHigh')).toBe(false);
    expect(isTransientFailureCode('source-validator.NoDataInAOI')).toBe(false);
    expect(isTransientFailureCode('dataloader.MemoryLimitExceeded')).toBe(false);
    expect(isTransientFailureCode('geometry.Invalid')).toBe(false);
  });

  it('restarts once, only when every message is transient', () => {
    const transient = [{ code: 'dataloader.TileNotReadable' }];
    expect(shouldRestart(transient, 0)).toBe(true);
    expect(shouldRestart(transient, 1)).toBe(false);
    expect(shouldRestart([...transient, { code: 'source-validator.NoDataInAOI' }], 0)).toBe(false);
    expect(shouldRestart([], 0)).toBe(false);
    expect(shouldRestart(undefined, 0)).toBe(false);
  });
});
