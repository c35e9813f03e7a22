/**
 * Create Processing: creates the part's Mapflow processing, safely.
 *
 * A create whose answer was lost may still have happened, so before creating
 * (and again after a MapflowOutcomeUnknown) the step looks for what an
 * earlier attempt made: the processing id in the ledger, else a processing of
 * the project with the part's deterministic name or its bridge meta. Only
 * when nothing is found is a processing created; when the outcome is still
 * unknown, the error is rethrown so the state machine's Retry comes back here.
 */
import { InputRejected } from '../../core/errors.ts';
import { EVENT_DETAIL_TYPES, type JobPart } from '../../core/model.ts';
import type { PartState, PlanPart, ProcessingRequest, ProcessingResult, RegisterResult } from '../workflow.ts';
import type { CreateProcessingV2, MapflowClient, Processing } from '../../mapflow/index.ts';
import { isNotFound, isOutcomeUnknown, jobContextOf, publishRow, readWorkJson } from '../common.ts';
import { rejectionForRequestError } from '../refusals.ts';
import type { StepContext } from '../context.ts';

export async function createProcessing(state: PartState, ctx: StepContext): Promise<ProcessingResult> {
  const job = jobContextOf(state.job);
  const { part } = state;
  const client = await ctx.mapflow();
  const startedAt = ctx.now().toISOString();

  const earlier = await findEarlierProcessing(ctx, client, job, part);
  if (earlier) {
    ctx.logger.info('reusing the processing an earlier attempt created', { jobId: job.jobId, part: part.index, processingId: earlier.id });
    await recordStarted(ctx, job, part, earlier, false);
    return { processingId: earlier.id, reused: true, startedAt };
  }

  const request = await readWorkJson<ProcessingRequest>(ctx, job.input.bucket, part.requestKey);
  const geometry = await readWorkJson<Record<string, unknown>>(ctx, job.input.bucket, part.geometryKey);
  const submitted = await ctx.ledger.transition(job.jobId, 'SUBMITTED', {}, `creating processing '${part.processingName}'`);
  if (submitted.changed) await publishRow(ctx, EVENT_DETAIL_TYPES.SUBMITTED, submitted.row);

  let processing: Processing;
  try {
    processing = await client.createProcessing({ ...request, geometry } as CreateProcessingV2 & { geometry: never });
  } catch (err) {
    if (isOutcomeUnknown(err)) {
      const made = await findInProject(client, job, part);
      if (!made) throw err; // not created: the Retry creates it
      processing = made;
    } else {
      throw rejectionForCreateError(err, part) ?? err;
    }
  }

  await recordStarted(ctx, job, part, processing, true);
  return { processingId: processing.id, reused: false, startedAt };
}

async function findEarlierProcessing(ctx: StepContext, client: MapflowClient, job: RegisterResult, part: PlanPart): Promise<Processing | undefined> {
  const row = await ctx.ledger.get(job.jobId);
  const known = row?.parts?.find((p) => p.index === part.index)?.processingId;
  if (known) {
    try {
      return await client.getProcessing(known);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      ctx.logger.warn('the processing recorded for this part no longer exists; creating it again', { jobId: job.jobId, processingId: known });
      return undefined;
    }
  }
  return (await processingOfRetriedJob(ctx, client, row?.retryOf, part)) ?? findInProject(client, job, part);
}

/**
 * A retry (`jobs retry`) of a job whose part already has a processing that did
 * not fail (it finished, or still runs: the job failed after it, in Store
 * Results or a kill) takes that processing over instead of paying for a
 * second one; a FAILED, CANCELLED or REFUNDED one is the reason for the retry, and a new
 * processing is created.
 */
async function processingOfRetriedJob(ctx: StepContext, client: MapflowClient, retryOf: string | undefined, part: PlanPart): Promise<Processing | undefined> {
  if (!retryOf) return undefined;
  const earlierId = (await ctx.ledger.get(retryOf))?.parts?.find((p) => p.index === part.index)?.processingId;
  if (!earlierId) return undefined;
  try {
    const earlier = await client.getProcessing(earlierId);
    if (['FAILED', 'CANCELLED', 'REFUNDED'].includes(earlier.status)) return undefined;
    ctx.logger.info('a retried job takes over the processing of the job it retries', { retryOf, part: part.index, processingId: earlier.id });
    return earlier;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** A processing of the part's project with the part's deterministic name, or the bridge's meta. */
async function findInProject(client: MapflowClient, job: RegisterResult, part: PlanPart): Promise<Processing | undefined> {
  const list = await client.listProjectProcessings(part.projectId);
  return list.find(
    (p) => p.name === part.processingName || (p.meta?.bridgeJobId === job.jobId && p.meta?.bridgePart === String(part.index)),
  );
}

async function recordStarted(ctx: StepContext, job: RegisterResult, part: PlanPart, processing: Processing, isNew: boolean): Promise<void> {
  const row = await ctx.ledger.get(job.jobId);
  const previous = row?.parts?.find((p) => p.index === part.index);
  const jobPart: JobPart = {
    ...previous,
    index: part.index,
    name: part.name,
    processingId: processing.id,
    status: processing.status,
    percentCompleted: processing.percentCompleted ?? 0,
    attempts: previous?.attempts ?? 1,
    ...(typeof processing.cost === 'number' && { cost: processing.cost }),
  };
  await ctx.ledger.upsertPart(job.jobId, jobPart);
  // upsertPart also puts the first processing id on the row (GSI byProcessingId).
  const { row: updated } = await ctx.ledger.transition(job.jobId, 'IN_PROGRESS', {}, `processing ${processing.id} (${part.name})`);
  if (isNew || previous?.processingId !== processing.id) {
    await publishRow(ctx, EVENT_DETAIL_TYPES.IN_PROGRESS, updated, { messages: [`processing ${processing.id} started for part '${part.name}'`] });
  }
}

/** Mapflow's refusals of the request itself (too large, too small, not allowed), as rejections that say what to fix. */
export function rejectionForCreateError(err: unknown, part: PlanPart): InputRejected | undefined {
  return rejectionForRequestError(err, `part '${part.name}'`);
}
