/**
 * Jobs that keep taking the bridge down are not resumed forever (issue 23),
 * and a death the bridge cannot attribute is never blamed on a file (issue 39).
 *
 * `npm start` resumes every unfinished job when it starts. A job whose step
 * crashes the process (a native abort, an out-of-memory kill) would crash it
 * again on every start: a crash loop that only deleting the state folder
 * ended. So the bridge keeps, in the state folder, the jobs one of whose
 * steps is running right now (StepsInFlight), and each start counts how
 * many times in a row each unfinished job had a step running when the bridge
 * stopped without closing; a clean stop (Ctrl-C) clears the counts. A job
 * found so MAX_UNCLEAN_RESUMES times is not resumed: it ends FAILED with
 * PROCESS_CRASHED, and the bridge serves the others.
 *
 * Only a death the bridge itself recorded counts (a crash record: an error
 * no code caught, written by the dying process with the jobs whose
 * input-decoding step ran then, UNTRUSTED_INPUT_STEPS). A kill -9, a Ctrl-C
 * pressed twice, an out-of-memory kill of the machine or a laptop's lid leave
 * no record: the bridge cannot tell them from a poison file, so they count
 * against no job, and an interrupted job is resumed and ends as its
 * processing does. (The steps that decode the input run in child processes
 * of their own, so a crafted file kills only that child, which the job sees
 * as an invocation error; what can still take the bridge's own process down
 * leaves a record.)
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
export function planResumes(
  unfinished: readonly string[],
  previous: Readonly<Record<string, number>> | undefined,
  max = MAX_UNCLEAN_RESUMES,
  /** Jobs with a step running when the last run stopped (readStepsInFlight); undefined: every unfinished job counts. */
  runningAtStop?: ReadonlySet<string>,
): ResumePlan {
  const plan: ResumePlan = { resume: [], giveUp: [], counts: {} };
  for (const jobId of unfinished) {
    // A count file present: the last run did not close cleanly. It counts against a job whose step was running then.
    const counted = previous !== undefined && (runningAtStop === undefined || runningAtStop.has(jobId));
    const uncleanStops = counted ? (previous[jobId] ?? 0) + 1 : 0;
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

export const STEPS_IN_FLIGHT_FILE = 'steps-in-flight.json';
export const CRASH_RECORD_FILE = 'crash.json';

/** What a bridge that died of an error no code caught wrote as it died. */
export interface CrashRecord {
  /** The jobs one of whose input-decoding steps ran then. */
  jobs: string[];
  /** The error, one line (no stack: it may quote the input). */
  reason: string;
  at: string;
}

/**
 * Writes the crash record as this process dies of an uncaught error (Node's
 * `uncaughtExceptionMonitor`: it changes nothing of how the process dies).
 * Returns the function that removes the hook.
 */
export function recordCrashes(stateDir: string, inFlight: () => string[]): () => void {
  const monitor = (error: unknown) => {
    const reason = (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).split('\n')[0]!.slice(0, 300);
    try {
      writeFileSync(path.join(stateDir, CRASH_RECORD_FILE), JSON.stringify({ jobs: inFlight(), reason, at: new Date().toISOString() } satisfies CrashRecord));
    } catch {
      // The state folder is gone or the disk full: the death then counts against no job.
    }
  };
  process.on('uncaughtExceptionMonitor', monitor);
  return () => process.off('uncaughtExceptionMonitor', monitor);
}

/** The crash record the last run left, and removes it (it is read once); undefined when that run left none. */
export function takeCrashRecord(stateDir: string): CrashRecord | undefined {
  const file = path.join(stateDir, CRASH_RECORD_FILE);
  if (!existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<CrashRecord>;
    return {
      jobs: Array.isArray(parsed.jobs) ? parsed.jobs.filter((id): id is string => typeof id === 'string') : [],
      reason: typeof parsed.reason === 'string' ? parsed.reason : 'unknown',
      at: typeof parsed.at === 'string' ? parsed.at : '',
    };
  } catch {
    return undefined; // cut short: nothing can be attributed
  } finally {
    rmSync(file, { force: true });
  }
}

/** The functions that parse or decode the input's bytes (GeoJSON, GeoTIFF, results): the steps a crafted file can crash. */
export const UNTRUSTED_INPUT_STEPS: ReadonlySet<string> = new Set(['inspect-geotiff', 'plan-processing', 'upload-image', 'store-results']);

/** The job id of a Task's or Register Job's event (`{job: {jobId}}` or `{jobId}`), if any. */
function jobIdOf(event: unknown): string | undefined {
  if (event === null || typeof event !== 'object') return undefined;
  const record = event as { jobId?: unknown; job?: { jobId?: unknown } };
  const id = record.job?.jobId ?? record.jobId;
  return typeof id === 'string' ? id : undefined;
}

/**
 * The jobs one of whose steps runs right now, kept in the state folder
 * (written synchronously at each start and end of a step: a crash may come
 * at any instant) so that the next start knows which jobs a crash found mid-step.
 */
export class StepsInFlight {
  private readonly running = new Map<string, number>();
  constructor(private readonly stateDir: string) {}

  /** Records a step of the event's job as running (a step of UNTRUSTED_INPUT_STEPS); returns the function that records its end. */
  begin(event: unknown, bridgeFunction: string): () => void {
    const jobId = UNTRUSTED_INPUT_STEPS.has(bridgeFunction) ? jobIdOf(event) : undefined;
    if (!jobId) return () => undefined;
    this.running.set(jobId, (this.running.get(jobId) ?? 0) + 1);
    this.write();
    return () => {
      const left = (this.running.get(jobId) ?? 1) - 1;
      if (left > 0) this.running.set(jobId, left);
      else this.running.delete(jobId);
      this.write();
    };
  }

  /** Forgets what an earlier run left: a crash before this run's first step then counts against nobody. */
  reset(): void {
    this.running.clear();
    this.write();
  }

  /** The jobs with an input-decoding step running now. */
  jobs(): string[] {
    return [...this.running.keys()];
  }

  private write(): void {
    try {
      writeFileSync(path.join(this.stateDir, STEPS_IN_FLIGHT_FILE), JSON.stringify([...this.running.keys()]));
    } catch {
      // The state folder is gone (a closing bridge): nothing left to protect.
    }
  }
}

/** The jobs that had a step running when the last run stopped; undefined when no run left the file. */
export function readStepsInFlight(stateDir: string): Set<string> | undefined {
  const file = path.join(stateDir, STEPS_IN_FLIGHT_FILE);
  if (!existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    return new Set(Array.isArray(parsed) ? parsed.filter((id): id is string => typeof id === 'string') : []);
  } catch {
    return new Set(); // cut by the crash itself while being written: no job is known to have been mid-step
  }
}
