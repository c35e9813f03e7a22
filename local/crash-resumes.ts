/**
 * Jobs that keep taking the bridge down are not resumed forever (issue 23).
 *
 * `npm start` resumes every unfinished job when it starts. A job whose step
 * crashes the process (a native abort, an out-of-memory kill) would crash it
 * again on every start: a crash loop that only deleting the state folder
 * ended. So each start counts, in the state folder, how many times in a row
 * each unfinished job was found in flight after the bridge stopped without
 * closing; a clean stop (Ctrl-C) clears the counts. A job found so
 * MAX_UNCLEAN_RESUMES times is not resumed: it ends FAILED with
 * PROCESS_CRASHED, and the bridge serves the others.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Unclean stops in a row a job may be in flight for; the next start ends it FAILED instead of resuming it. */
export const MAX_UNCLEAN_RESUMES = 3;

export const PROCESS_CRASHED = 'PROCESS_CRASHED';

const FILE = 'unclean-resumes.json';

export interface ResumePlan {
  /** Jobs to start again. */
  resume: string[];
  /** Jobs to end FAILED (in flight through MAX_UNCLEAN_RESUMES unclean stops), with their count. */
  giveUp: { jobId: string; uncleanStops: number }[];
  /** The counts to keep until the next clean stop. */
  counts: Record<string, number>;
}

/**
 * What to do with the unfinished jobs, given the counts left by the previous
 * start (`previous`, absent after a clean stop). Jobs no longer unfinished
 * drop out of the counts.
 */
export function planResumes(unfinished: readonly string[], previous: Readonly<Record<string, number>> | undefined, max = MAX_UNCLEAN_RESUMES): ResumePlan {
  const plan: ResumePlan = { resume: [], giveUp: [], counts: {} };
  for (const jobId of unfinished) {
    // Found unfinished with a count file present: the last run did not close cleanly while the job was in flight.
    const uncleanStops = previous ? (previous[jobId] ?? 0) + 1 : 0;
    if (uncleanStops >= max) {
      plan.giveUp.push({ jobId, uncleanStops });
      continue;
    }
    plan.resume.push(jobId);
    plan.counts[jobId] = uncleanStops;
  }
  return plan;
}

/** The counts a previous start left (undefined when it stopped cleanly or never ran). */
export function readResumeCounts(stateDir: string): Record<string, number> | undefined {
  const file = path.join(stateDir, FILE);
  if (!existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((entry): entry is [string, number] => typeof entry[1] === 'number'));
  } catch {
    return {}; // a file cut by the crash itself still means an unclean stop
  }
}

/** Written (synchronously: the next crash may come at once) before the jobs are resumed. */
export function writeResumeCounts(stateDir: string, counts: Record<string, number>): void {
  writeFileSync(path.join(stateDir, FILE), JSON.stringify(counts));
}

/** A clean stop: nothing was in flight through a crash. */
export function clearResumeCounts(stateDir: string): void {
  rmSync(path.join(stateDir, FILE), { force: true });
}
