/**
 * Goal 5 of issue 12 on the polling suite (packages/bench/polling.ts): what the
 * policy meets, and the bounds that say why 2 and 10 minutes stay open. The
 * suite is seeded, so the figures repeat; the bounds are what the README and
 * docs/workflow.md quote.
 */
import { describe, expect, it } from 'vitest';
import { oracleFigures, pollingGoals, runPollingSuites } from '../../packages/bench/polling.ts';

describe('polling suite: goal 5', () => {
  it('meets >= 50 % fewer polls than fixed 30 s with p95 <= 15 s from 30 minutes to 6 hours, on every seed', () => {
    // Act
    const goals = pollingGoals(runPollingSuites(200));
    // Assess
    for (const g of goals.filter((g) => g.minutes >= 30)) expect(g, `${g.minutes} min`).toMatchObject({ met: true });
    for (const g of goals) expect(g.p95, `${g.minutes} min`).toBeLessThanOrEqual(15);
  });

  it('cannot be met at 2 and 10 minutes from progress alone: an oracle knowing the start and the model\'s own spread of the end needs more than half the polls', () => {
    // Act
    const bounds = [2, 10].map((minutes) => oracleFigures(minutes).find((o) => o.oracle === 'oracle: progress'));
    // Assess: within the detection goal, yet above 0.5 of fixed 30 s
    for (const bound of bounds) {
      expect(bound?.delayP95).toBeLessThanOrEqual(15);
      expect(bound?.pollsVs30).toBeGreaterThan(0.5);
    }
  });

  it('would need the duration in advance: an oracle that knows it within ±15 % meets 10 minutes and only just reaches 2', () => {
    // Act
    const [two, ten] = [2, 10].map((minutes) => oracleFigures(minutes).find((o) => o.oracle === 'oracle: duration'));
    // Assess
    expect(ten?.delayP95).toBeLessThanOrEqual(15);
    expect(ten?.pollsVs30).toBeLessThan(0.5);
    expect(two?.delayP95).toBeLessThanOrEqual(15);
    expect(two?.pollsVs30).toBeGreaterThan(0.45);
  });
});
