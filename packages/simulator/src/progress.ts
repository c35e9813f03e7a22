/**
 * Uneven progress: how far a processing's work has got at a point of its run.
 * Mapflow's percent does not rise evenly: it stalls (a tile set loading, a
 * queue), bursts (cached tiles) and moves in whole percents. The run is cut
 * into segments of 5-20 % of the whole time, each at its own speed: a stall
 * (0.1, one in five), a burst (3, about one in seven) or a normal pace
 * (0.6-1.4); the work is normalised so it is all done at the end.
 *
 * The simulator uses it with `unevenProgress` (seeded per processing and
 * attempt); packages/bench/polling.ts uses the same model for its simulated
 * processings, so what the poll policy is measured on is what a local run
 * shows.
 */
import type { Random } from './random.ts';

export interface ProgressProfile {
  /** Where the work begins, as a fraction of the whole time (0 when there is no wait before it). */
  from: number;
  /** Segments up to `until` (fraction of the whole time) at `speed`, in order; the last ends at 1. */
  segments: { until: number; speed: number }[];
  /** Total work (speed x time), so the done fraction is work so far / total. */
  work: number;
}

/** The segments of a run from `from` (a fraction of the whole time) to 1. */
export function unevenProfile(random: Random, from = 0): ProgressProfile {
  const segments: { until: number; speed: number }[] = [];
  let t = from;
  while (t < 1) {
    const length = Math.min(1 - t, 0.05 + 0.15 * random());
    const r = random();
    const speed = r < 0.2 ? 0.1 : r < 0.35 ? 3 : 0.6 + random() * 0.8; // stall, burst, normal
    t += length;
    segments.push({ until: t, speed });
  }
  let work = 0;
  let start = from;
  for (const s of segments) {
    work += (s.until - start) * s.speed;
    start = s.until;
  }
  return { from, segments, work };
}

/** Fraction of the work done (0-1) at `fraction` of the whole time. */
export function workDone(profile: ProgressProfile, fraction: number): number {
  if (fraction >= 1) return 1;
  if (fraction <= profile.from) return 0;
  let done = 0;
  let start = profile.from;
  for (const s of profile.segments) {
    const to = Math.min(fraction, s.until);
    if (to > start) done += (to - start) * s.speed;
    if (fraction <= s.until) break;
    start = s.until;
  }
  return Math.min(1, done / profile.work);
}
