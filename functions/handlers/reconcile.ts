/**
 * Reconcile ("nothing lost"), run on a schedule.
 *
 * Every task of the state machine has a Catch that ends the job, so a job only
 * stays unfinished if its execution itself ended without running Fail Job
 * (aborted by an operator, timed out, a bug in the definition) or never
 * started. This sweep finds such jobs and finishes them as FAILED with code
 * EXECUTION_LOST: a report under failed/, the final ledger status, the
 * "Job Failed" event, the input's status tag, and its concurrency slots freed.
 * It also frees slots held by executions that are gone, so capacity never leaks.
 *
 * Safe to run concurrently with live jobs: a job is touched only when its
 * execution is not running, and the final transition is conditional.
 */
import { recordBacklog, recordJobOutcome, recordReconcileErrors } from '../runtime/metrics.ts';
import { DescribeExecutionCommand, ExecutionDoesNotExist, ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { EVENT_DETAIL_TYPES, JOB_STATUSES, isFinalStatus, type InputObject, type JobError, type LedgerRow } from '../core/model.ts';
import { eventDetailFromRow } from '../events/publisher.ts';
import { jobIdFor, normaliseEtag, recordedKind, reportKey } from '../routing/index.ts';
import { HOW_TO_RETRY } from '../jobs/retry-advice.ts';
// The lean context plus S3: no Mapflow client (undici) in this bundle.
import { bridgeContext, type BridgeContext } from '../runtime/lean-context.ts';
import '../runtime/with-s3.ts';
import '../runtime/with-sfn.ts';
import { tagObject, writeJson } from '../storage/s3.ts';
import { sweepInbox } from '../jobs/inbox-sweep.ts';
import { dispatchObjectCreated, stepFunctionsStarter } from './dispatch.ts';

export type IsExecutionAlive = (executionArn: string) => Promise<boolean>;

/**
 * How the reconciler learns which executions still run. With a listing, one
 * ListExecutions page answers for 1,000 executions and only the jobs missing
 * from it are asked about one by one: the calls then follow the jobs that may
 * be lost, not the backlog.
 */
export interface ExecutionLiveness {
  /** One execution: alive while running (or waiting to be redriven). On AWS one DescribeExecution. */
  isAlive: IsExecutionAlive;
  /** The ARNs of every execution running now, when the engine can list them. */
  listRunning?: () => Promise<ReadonlySet<string>>;
}

export interface ReconcileOptions {
  /** A job with no known execution is declared lost once it has not changed for this long. Default 15 minutes. */
  graceSeconds?: number;
  /**
   * Most executions asked about one by one in a run (DescribeExecution);
   * the jobs left over are looked at in the next run. Default
   * DEFAULT_EXECUTION_CHECKS (250).
   */
  maxExecutionChecks?: number;
  now?: () => Date;
}

export interface ReconcileSummary {
  /** Unfinished jobs looked at. */
  checked: number;
  /** Jobs finished as FAILED / EXECUTION_LOST. */
  lost: string[];
  /** Slot holders freed because their execution is gone. */
  reclaimedSlots: string[];
  /** Jobs that could not be reconciled this time (retried on the next run). */
  errors: { jobId: string; message: string }[];
  /**
   * Executions whose liveness could not be learned (a denied or failed
   * DescribeExecution / ListExecutions): their slots and waiters are kept, as
   * if alive, until a later run can tell.
   */
  livenessErrors: { executionArn: string; message: string }[];
  /** Executions asked about one by one (DescribeExecution on AWS). */
  executionChecks: number;
  /** Running executions found by listing them (undefined: no listing). */
  listedRunning?: number;
  /** Jobs left for the next run because this run's maxExecutionChecks was spent. */
  deferred: number;
}

export const EXECUTION_LOST = 'EXECUTION_LOST';
/**
 * A job whose execution closed (stopped, timed out, failed) before Register
 * Job wrote its ledger row: the inbox sweep found the object without a row,
 * and its StartExecution answered ExecutionAlreadyExists, as it would for 90
 * days (a closed execution's name stays taken, API_StartExecution). The
 * reconciler ends it so that the sweep stops picking it.
 */
export const EXECUTION_ENDED_UNREGISTERED = 'EXECUTION_ENDED_UNREGISTERED';
export const DEFAULT_GRACE_SECONDS = 15 * 60;
const TAG_JOB_ID = 'mapflow-bridge:job-id';
const TAG_STATUS = 'mapflow-bridge:status';
const PAGE_LIMIT = 10_000;
/**
 * DescribeExecution calls per run, at most. Step Functions throttles
 * DescribeExecution per account and region with a token bucket of 250
 * (refilled at 10 a second; 300 and 15 in us-east-1, us-west-2 and
 * eu-west-1), shared with every other caller in the account: one run never
 * drains more than the smaller bucket.
 */
export const DEFAULT_EXECUTION_CHECKS = 250;
/** ListExecutions returns at most this many executions a page. */
const LIST_PAGE_SIZE = 1_000;

export async function reconcile(
  ctx: BridgeContext,
  liveness: IsExecutionAlive | ExecutionLiveness,
  options: ReconcileOptions = {},
): Promise<ReconcileSummary> {
  const now = options.now ?? (() => new Date());
  const graceMs = (options.graceSeconds ?? DEFAULT_GRACE_SECONDS) * 1000;
  const summary: ReconcileSummary = { checked: 0, lost: [], reclaimedSlots: [], errors: [], livenessErrors: [], executionChecks: 0, deferred: 0 };
  const { isAlive, listRunning } = typeof liveness === 'function' ? { isAlive: liveness, listRunning: undefined } : liveness;
  // The listing comes before the ledger is read: a job missing from it started
  // later (or ended) and is asked about on its own, so nothing is judged on a stale list.
  // A failed listing (denied, throttled) only costs the shortcut: every job is then asked about on its own.
  const running = listRunning ? await listRunning().catch((error: unknown) => noteLivenessError(ctx, summary, '(ListExecutions)', error)) : undefined;
  if (running) summary.listedRunning = running.size;
  const maxChecks = options.maxExecutionChecks ?? DEFAULT_EXECUTION_CHECKS;
  // Undefined: not known this run (the checks are spent).
  const alive = memoise(async (executionArn): Promise<boolean | undefined> => {
    if (running?.has(executionArn)) return true;
    if (summary.executionChecks >= maxChecks) return undefined;
    summary.executionChecks++;
    return isAlive(executionArn);
  });
  // Slots and the queue change only for executions known to be gone. One execution
  // that cannot be described (AccessDenied, throttling, anything unexpected) is
  // logged, counted and kept as it is: it never stops the other rows, the queue
  // repair, the inbox sweep or the backlog metric.
  const livenessFailed = new Set<string>();
  const aliveOrUnknown: IsExecutionAlive = async (executionArn) => {
    try {
      return (await alive(executionArn)) ?? true;
    } catch (error) {
      if (!livenessFailed.has(executionArn)) {
        livenessFailed.add(executionArn);
        noteLivenessError(ctx, summary, executionArn, error);
      }
      return true;
    }
  };

  const unfinished = JOB_STATUSES.filter((status) => !isFinalStatus(status));
  const backlog = { oldestInFlightSecondsByRoute: {} as Record<string, number>, oldestQueuedSeconds: 0 };
  for (const status of unfinished) {
    for (const row of await ctx.ledger.listByStatus(status, { limit: PAGE_LIMIT })) {
      summary.checked++;
      noteBacklog(backlog, row, now());
      try {
        const executionArn = row.executionArn ?? executionArnFor(ctx.config.stateMachineArn, row.jobId);
        const known = executionArn ? await alive(executionArn) : false;
        if (known === undefined) {
          summary.deferred++;
          continue;
        }
        if (known) continue;
        const idleMs = now().getTime() - Date.parse(row.updatedAt);
        // A recorded execution that is not running is lost; an unknown one gets time to appear.
        if (!row.executionArn && !(idleMs > graceMs)) continue;
        // The listing may be stale: a job that finished while we looked keeps its own outcome and report.
        const current = await ctx.ledger.get(row.jobId);
        if (!current || isFinalStatus(current.status)) continue;
        if (await finishLostJob(ctx, current, executionArn, now())) summary.lost.push(row.jobId);
      } catch (error) {
        ctx.logger.error('could not reconcile job; will retry on the next run', { jobId: row.jobId, error });
        summary.errors.push({ jobId: row.jobId, message: (error as Error)?.message ?? String(error) });
      }
    }
  }

  if (summary.deferred > 0) ctx.logger.warn('execution checks spent: some jobs are left for the next run', { deferred: summary.deferred, maxExecutionChecks: maxChecks });
  const freed = await ctx.slots.reclaim(aliveOrUnknown);
  summary.reclaimedSlots = freed.map((slot) => slot.holder);
  for (const slot of freed) ctx.logger.warn('slot reclaimed from an execution that is gone', { ...slot });
  // Admission's safety net: re-send hand-overs that failed half way, drop waiters whose execution is gone, put the count of waiters right.
  const queue = await ctx.slots.repairQueue(aliveOrUnknown);
  if (queue.rewoken.length + queue.dropped.length > 0 || queue.recounted) ctx.logger.warn('slot queue repaired', { ...queue });
  ctx.logger.info('reconcile finished', { ...summary });
  recordBacklog(backlog, ctx.config.routes.routes.map((route) => route.name));
  // Every run reports its count, 0 included, so an alarm on it sees data (runtime/metric-names.ts).
  recordReconcileErrors(summary.errors.length + summary.livenessErrors.length);
  return summary;
}

function noteLivenessError(ctx: BridgeContext, summary: ReconcileSummary, executionArn: string, error: unknown): undefined {
  ctx.logger.error('could not learn whether an execution runs; its slots stay held until a later run can tell', { executionArn, error });
  summary.livenessErrors.push({ executionArn, message: (error as Error)?.message ?? String(error) });
  return undefined;
}

/** The oldest unfinished job per route, and the longest wait in QUEUED (since the job entered it). */
function noteBacklog(backlog: { oldestInFlightSecondsByRoute: Record<string, number>; oldestQueuedSeconds: number }, row: LedgerRow, now: Date): void {
  const age = (now.getTime() - Date.parse(row.createdAt)) / 1000;
  if (Number.isFinite(age)) backlog.oldestInFlightSecondsByRoute[row.routeName] = Math.max(backlog.oldestInFlightSecondsByRoute[row.routeName] ?? 0, age);
  if (row.status === 'QUEUED') {
    const queuedAt = [...row.statusHistory].reverse().find((h) => h.status === 'QUEUED')?.at ?? row.updatedAt;
    const waited = (now.getTime() - Date.parse(queuedAt)) / 1000;
    if (Number.isFinite(waited)) backlog.oldestQueuedSeconds = Math.max(backlog.oldestQueuedSeconds, waited);
  }
}

/** Ends a lost job. Returns false when the row turned final meanwhile (nothing changed). */
async function finishLostJob(ctx: BridgeContext, row: LedgerRow, executionArn: string | undefined, at: Date): Promise<boolean> {
  return finishJobAsFailed(ctx, row, executionArn, at);
}

const RETRY_ADVICE = 'To retry, drop the file again under a new name (the same file under the same key counts as done).';

/**
 * Ends an unfinished job as FAILED outside its execution: report, ledger,
 * slots, event, tag. With no `given` error it is EXECUTION_LOST; local mode
 * gives its own (a job whose steps kept crashing the bridge).
 * Returns false when the row turned final meanwhile (nothing changed).
 */
export async function finishJobAsFailed(ctx: BridgeContext, row: LedgerRow, executionArn: string | undefined, at: Date, given?: JobError): Promise<boolean> {
  const error: JobError = given ?? {
    code: EXECUTION_LOST,
    message: executionArn
      ? `The workflow execution stopped while the job was ${row.status} without recording an outcome. ${RETRY_ADVICE}`
      : `No workflow execution was found for this job after it stayed ${row.status}. ${RETRY_ADVICE}`,
  };
  // Report first: if anything below fails, the row is still unfinished and the next run retries.
  const key = reportKey(ctx.config.prefixes, row.input.key);
  await writeJson(ctx.s3, row.input.bucket, key, {
    jobId: row.jobId,
    status: 'FAILED',
    input: row.input,
    route: row.routeName,
    code: error.code,
    message: error.message,
    lastStatus: row.status,
    ...(executionArn ? { executionArn } : {}),
    ...(row.parts ? { parts: row.parts } : {}),
    at: at.toISOString(),
  });
  const { changed, row: final } = await ctx.ledger.transition(row.jobId, 'FAILED', { error, reportKey: key }, `${error.code}: reconciler`);
  if (!changed) return false;
  ctx.logger.warn('job finished as failed outside its execution', { jobId: row.jobId, code: error.code, lastStatus: row.status, executionArn });
  await ctx.slots.releaseJob(row.jobId);
  await ctx.events.publish(EVENT_DETAIL_TYPES.FAILED, eventDetailFromRow(final));
  recordJobOutcome(final);
  try {
    await tagObject(ctx.s3, row.input, { [TAG_JOB_ID]: row.jobId, [TAG_STATUS]: 'FAILED' });
  } catch (tagError) {
    ctx.logger.warn('could not tag the input object', { jobId: row.jobId, key: row.input.key, error: tagError });
  }
  // Last: until here the row says its final event is owed (finalize.ts; the local start publishes it after a kill).
  await ctx.ledger.finalEventPublished(row.jobId);
  return true;
}

/** The ARN of the execution named `jobId` (dispatch names executions after their job). */
export function executionArnFor(stateMachineArn: string | undefined, jobId: string): string | undefined {
  if (!stateMachineArn) return undefined;
  const parts = stateMachineArn.split(':');
  if (parts.length < 7 || parts[5] !== 'stateMachine') return undefined;
  return [...parts.slice(0, 5), 'execution', parts[6], jobId].join(':');
}

/**
 * On AWS: an execution is alive while RUNNING (or waiting to be redriven).
 * With the state machine's ARN, the running executions are listed a page of
 * 1,000 at a time (ListExecutions, eventually consistent: an execution it
 * misses is asked about with DescribeExecution, one it still shows running is
 * looked at again in the next run).
 */
export function stepFunctionsLiveness(ctx: Pick<BridgeContext, 'sfn'>, stateMachineArn?: string): ExecutionLiveness {
  const isAlive: IsExecutionAlive = async (executionArn) => {
    try {
      const { status } = await ctx.sfn().send(new DescribeExecutionCommand({ executionArn }));
      return status === 'RUNNING' || status === 'PENDING_REDRIVE';
    } catch (error) {
      if (error instanceof ExecutionDoesNotExist || (error as Error)?.name === 'ExecutionDoesNotExist') return false;
      throw error;
    }
  };
  if (!stateMachineArn) return { isAlive };
  const listRunning = async (): Promise<ReadonlySet<string>> => {
    const running = new Set<string>();
    let nextToken: string | undefined;
    do {
      const page = await ctx.sfn().send(new ListExecutionsCommand({ stateMachineArn, statusFilter: 'RUNNING', maxResults: LIST_PAGE_SIZE, nextToken }));
      for (const execution of page.executions ?? []) if (execution.executionArn) running.add(execution.executionArn);
      nextToken = page.nextToken;
    } while (nextToken);
    return running;
  };
  return { isAlive, listRunning };
}

function memoise<T>(fn: (executionArn: string) => Promise<T>): (executionArn: string) => Promise<T> {
  const seen = new Map<string, Promise<T>>();
  return (arn) => {
    let result = seen.get(arn);
    if (!result) {
      result = fn(arn);
      seen.set(arn, result);
    }
    return result;
  };
}

/**
 * How old an inbox object without a ledger row must be before the sweep
 * dispatches it: its own notification (EventBridge -> SQS -> dispatch) has had
 * its chance by then. Either way the job id makes them one job.
 */
export const INBOX_SWEEP_MIN_AGE_SECONDS = 5 * 60;

export interface ScheduledReconcileSummary extends ReconcileSummary {
  /**
   * The inbox sweep (INBOX_BUCKET set): objects looked at, dispatched, and whether the run reached the end of the inbox;
   * `endedUnregistered`: jobs ended FAILED (EXECUTION_ENDED_UNREGISTERED) because their execution had closed without a row.
   */
  inboxSweep?: { listed: number; dispatched: string[]; processedWithoutRow: number; tooYoung: number; complete: boolean; endedUnregistered: string[]; error?: string };
}

export const handler = async (): Promise<ScheduledReconcileSummary> => {
  const ctx = bridgeContext();
  const summary: ScheduledReconcileSummary = await reconcile(ctx, stepFunctionsLiveness(ctx, ctx.config.stateMachineArn));
  const bucket = process.env.INBOX_BUCKET;
  if (bucket) summary.inboxSweep = await sweepInboxOnSchedule(ctx, bucket);
  return summary;
};

/** Dispatches inbox objects that have no ledger row (a lost or never-delivered notification), bounded per run. */
export async function sweepInboxOnSchedule(
  ctx: BridgeContext,
  bucket: string,
  /** Tests only: objects younger than this are left to their notification (default INBOX_SWEEP_MIN_AGE_SECONDS). */
  options: { minAgeSeconds?: number } = {},
): Promise<NonNullable<ScheduledReconcileSummary['inboxSweep']>> {
  try {
    const start = stepFunctionsStarter(ctx);
    const endedUnregistered: string[] = [];
    const sweep = await sweepInbox(
      ctx,
      bucket,
      async (objects) => {
        const { duplicates } = await dispatchObjectCreated(ctx, objects, start);
        // An execution of that name exists and the object still has no row: if it closed, it never will.
        for (const object of objects.filter((o) => duplicates.includes(jobIdFor(o)))) {
          if (await endIfClosedUnregistered(ctx, object)) endedUnregistered.push(jobIdFor(object));
        }
      },
      { minAgeSeconds: options.minAgeSeconds ?? INBOX_SWEEP_MIN_AGE_SECONDS },
    );
    const dispatched = sweep.dispatched.map((object) => object.key);
    if (dispatched.length > 0) ctx.logger.warn('inbox objects without a job dispatched (their notification never came)', { dispatched });
    return { listed: sweep.listed, dispatched, processedWithoutRow: sweep.processedWithoutRow, tooYoung: sweep.tooYoung, complete: sweep.complete, endedUnregistered };
  } catch (error) {
    // The settling above is done; the sweep is tried again on the next run.
    ctx.logger.error('inbox sweep failed; will retry on the next run', { error });
    return { listed: 0, dispatched: [], processedWithoutRow: 0, tooYoung: 0, complete: false, endedUnregistered: [], error: (error as Error)?.message ?? String(error) };
  }
}

/**
 * An inbox object without a ledger row whose StartExecution answered
 * ExecutionAlreadyExists: its execution closed before Register Job wrote the
 * row (stopped, timed out, failed) or still runs. A closed one never writes
 * the row, and its name stays taken for 90 days, so the sweep would pick the
 * object on every run: the job is registered and ended FAILED
 * (EXECUTION_ENDED_UNREGISTERED) with its report, final event and tags, as
 * the reconciler ends a lost job. A running one is left alone (it may still
 * register). Returns true when it ended the job.
 */
async function endIfClosedUnregistered(ctx: BridgeContext, object: InputObject): Promise<boolean> {
  const jobId = jobIdFor(object);
  const executionArn = executionArnFor(ctx.config.stateMachineArn, jobId);
  if (!executionArn) return false;
  let status: string | undefined;
  try {
    ({ status } = await ctx.sfn().send(new DescribeExecutionCommand({ executionArn })));
  } catch (error) {
    // Not visible yet (eventually consistent) or not describable now: the next run looks again.
    ctx.logger.warn('could not describe the execution of an inbox object without a row; looked at again on the next run', { jobId, executionArn, error });
    return false;
  }
  if (status === undefined || status === 'RUNNING' || status === 'PENDING_REDRIVE') return false;
  // Registered meanwhile (a late Register Job): the reconciler's own pass settles it.
  if (await ctx.ledger.get(jobId)) return false;
  const input: InputObject = { bucket: object.bucket, key: object.key, ...(object.versionId ? { versionId: object.versionId } : {}), etag: normaliseEtag(object.etag), size: object.size };
  const { row, created } = await ctx.ledger.register({ jobId, input, kind: recordedKind(object.key), routeName: '-', executionArn });
  if (!created && isFinalStatus(row.status)) return false;
  return finishJobAsFailed(ctx, row, executionArn, new Date(), {
    code: EXECUTION_ENDED_UNREGISTERED,
    message:
      `The workflow execution of job ${jobId} ended ${status} before Register Job recorded the job, so it never ran; ` +
      `its name stays taken for 90 days, so the same file under the same key cannot start it again: ${HOW_TO_RETRY.replace('<jobId>', jobId)}.`,
  });
}

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'reconcile';
