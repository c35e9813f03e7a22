/** Small helpers shared by the steps. */
import { BridgeError, ConfigurationError } from '../core/errors.ts';
import type { EventDetailType, LedgerRow } from '../core/model.ts';
import type { JobEventDetail } from '../events/types.ts';
import type { PartJobContext, RegisterResult, WorkflowState } from './workflow.ts';
import { eventDetailFromRow } from '../events/publisher.ts';
import { readObjectText } from '../storage/s3.ts';
import { resolveRoute, type Route } from '../routing/index.ts';
import type { StepContext } from './context.ts';
import { HOW_TO_RETRY } from './outcome.ts';

/** The Register Job result inside the Map, whichever way the ItemSelector passed it. */
export function jobContextOf(job: PartJobContext): RegisterResult {
  if ('job' in job && job.job && typeof job.job === 'object') {
    return { ...job.job, executionArn: job.job.executionArn ?? job.executionArn };
  }
  return job as RegisterResult;
}

/**
 * The route a job was registered with: the one it keeps (`job.route`, from its
 * ledger row), whatever the routes are now; for a job registered by an older
 * version, by name, and by key when the routes changed since.
 */
export function routeOf(ctx: StepContext, job: Pick<RegisterResult, 'routeName' | 'input'> & { route?: Route }): Route {
  if (job.route) return job.route;
  const byName = ctx.config.routes.routes.find((r) => r.name === job.routeName);
  if (byName) return byName;
  const byKey = resolveRoute(ctx.config.routes, job.input.key, ctx.config.prefixes.inbox);
  if (byKey) return byKey;
  throw new ConfigurationError(`route '${job.routeName}' of this job is no longer configured; add it back to ROUTES, then ${HOW_TO_RETRY}`);
}

/** Publishes one event whose detail is the ledger row (plus `extra`). */
export async function publishRow(ctx: StepContext, detailType: EventDetailType, row: LedgerRow, extra?: Partial<JobEventDetail>): Promise<void> {
  await ctx.events.publish(detailType, { ...eventDetailFromRow(row), ...extra, at: ctx.now().toISOString() });
}

/** Eight characters that tell the jobs of one file apart: the start of the job id's hash. */
export function shortJobId(jobId: string): string {
  const hash = /-([0-9a-f]{8,})$/.exec(jobId);
  return hash ? hash[1]!.slice(0, 8) : jobId.replace(/[^A-Za-z0-9]/g, '').slice(-8);
}

/**
 * The deterministic Mapflow processing name of a part, `<name> [<jobId8>]`:
 * how a retried create finds what an earlier attempt made.
 */
export function processingNameFor(displayName: string, jobId: string): string {
  return `${displayName.slice(0, 200)} [${shortJobId(jobId)}]`;
}

/** Reads a small JSON object the bridge wrote under work/. */
export async function readWorkJson<T>(ctx: StepContext, bucket: string, key: string, maxBytes = 50 * 1024 * 1024): Promise<T> {
  return JSON.parse(await readObjectText(ctx.s3, { bucket, key }, maxBytes)) as T;
}

/** Runs `fn` over `items`, at most `limit` at a time, keeping the order of results. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** The error's `name`, for matching Mapflow client errors without depending on class identity. */
export function errorName(err: unknown): string | undefined {
  return err && typeof err === 'object' && 'name' in err ? String((err as { name: unknown }).name) : undefined;
}

export function isOutcomeUnknown(err: unknown): boolean {
  return errorName(err) === 'MapflowOutcomeUnknown';
}

export function isNotFound(err: unknown): boolean {
  return errorName(err) === 'MapflowNotFound';
}

/** Mapflow's code, HTTP status and params of a client error. */
export function mapflowErrorInfo(err: unknown): { status?: number; code?: string; params?: Record<string, unknown>; message: string } {
  const e = (err ?? {}) as { status?: unknown; code?: unknown; params?: unknown; message?: unknown };
  return {
    status: typeof e.status === 'number' ? e.status : undefined,
    code: typeof e.code === 'string' ? e.code : undefined,
    params: e.params && typeof e.params === 'object' ? (e.params as Record<string, unknown>) : undefined,
    message: typeof e.message === 'string' ? e.message : String(err),
  };
}

export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** The Register Job result of a top-level state. */
export function topJob(state: WorkflowState): RegisterResult {
  if (!state.job) throw new BridgeError('STATE_INCOMPLETE', `the state of job ${state.jobId} has no Register Job result at $.job`);
  return { ...state.job, executionArn: state.job.executionArn ?? state.executionArn };
}

/**
 * Why a job waits, in words that hold: how many slots are taken ("3 of 3 in
 * use"), or, when none is, that a slot goes to the jobs queued earlier first
 * (never "waiting for a slot (0 in use)").
 */
export function queuedNote(inUse: number, max: number): string {
  return inUse > 0
    ? `waiting for a processing slot (${inUse} of ${max} in use)`
    : 'waiting for a processing slot (the next free one goes to the jobs queued earlier first)';
}

/**
 * Releases a slot; a failure is logged, not thrown (the reconciler frees slots of finished executions).
 * Called by Finish Part, and by Poll Processing the moment it sees the processing finished (the
 * slot bounds Mapflow processings in flight; storing the results needs none).
 */
export async function releaseSlot(ctx: StepContext, holder: string): Promise<void> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    try {
      await ctx.slots.release(holder);
      return;
    } catch (err) {
      if (attempt === 2) ctx.logger.error('could not release the concurrency slot; the reconciler will free it', { holder, err: String(err) });
    }
  }
}
