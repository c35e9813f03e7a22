/**
 * Uneven progress (packages/simulator/src/progress.ts): the model packages/bench/polling.ts
 * measures the poll policy on, and what the simulator serves with
 * `unevenProgress`: stalls and bursts, monotone, done exactly at the end, the
 * same profile for the same seed and processing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/index.ts';
import { unevenProfile, workDone } from '../src/progress.ts';
import { seededRandom, seedFrom } from '../src/random.ts';
import { call, finished, start, v2Body } from './helpers.ts';

describe('progress profile', () => {
  it('rises monotonically from 0 at its start to 1 at the end, with stalls and bursts across seeds', () => {
    // Prepare
    const profiles = Array.from({ length: 50 }, (_, seed) => unevenProfile(seededRandom(seed), 0.1));
    // Act
    const speeds = profiles.flatMap((p) => p.segments.map((s) => s.speed));
    // Assess
    for (const profile of profiles) {
      let last = 0;
      for (let f = 0; f <= 1; f += 0.01) {
        const done = workDone(profile, f);
        expect(done).toBeGreaterThanOrEqual(last);
        last = done;
      }
      expect(workDone(profile, 0.1)).toBe(0);
      expect(workDone(profile, 1)).toBe(1);
      expect(workDone(profile, 0.999_999)).toBeCloseTo(1, 4);
    }
    expect(speeds).toContain(0.1); // stalls
    expect(speeds).toContain(3); // bursts
    expect(speeds.some((s) => s > 0.6 && s < 1.4)).toBe(true);
  });
});

describe('simulator with unevenProgress', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await start({ processingSeconds: 3, unevenProgress: true, seed: 11 });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('reports the percent of the seeded profile (bounded by the times around each request) and ends OK', async () => {
    // Prepare
    const created = await call(sim, 'POST', '/processings/v2', v2Body());
    expect(created.status).toBe(200);
    const id = created.json.id as string;
    const begin = Date.parse(created.json.created as string);
    const profile = unevenProfile(seededRandom(seedFrom(11, id) + 1));
    const expected = (ms: number) => Math.min(99, Math.floor(workDone(profile, (ms - begin) / 3000) * 100));
    const seen: number[] = [];
    // Act: poll until done
    for (;;) {
      const before = Date.now();
      const answer = await call(sim, 'GET', `/processings/${id}`);
      const after = Date.now();
      if (answer.json.status !== 'IN_PROGRESS') break;
      const percent = answer.json.percentCompleted as number;
      seen.push(percent);
      // Assess: between what the profile gives at the request's start and end
      expect(percent).toBeGreaterThanOrEqual(expected(before - 1));
      expect(percent).toBeLessThanOrEqual(expected(after + 1));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await finished(sim, id)).status).toBe('OK');
    expect(seen.length).toBeGreaterThan(3);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  }, 60_000);
});
