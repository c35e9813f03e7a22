/**
 * Restart Processing: asks Mapflow to rerun the failed partitions of the
 * part's processing, once (the poll decides when). The ledger keeps both
 * attempts: the part's `attempts` becomes 2 and the status history notes why.
 */
import { BridgeError } from '../../core/errors.ts';
import { EVENT_DETAIL_TYPES } from '../../core/model.ts';
import type { PartState, RestartResult } from '../workflow.ts';
import type { MapflowClient } from '../../mapflow/index.ts';
import { errorName, jobContextOf, publishRow } from '../common.ts';
import type { StepContext } from '../context.ts';

export async function restartProcessing(state: PartState, ctx: StepContext): Promise<RestartResult> {
  const job = jobContextOf(state.job);
  const processingId = state.processing?.processingId;
  if (!processingId) throw new BridgeError('STATE_INCOMPLETE', `part '${state.part.name}' of job ${job.jobId} has no processing at $.processing`);
  const client = await ctx.mapflow();
  // A resent restart (see PollResult.resendRestart) is the one already recorded, not another.
  const recorded = Math.max(state.restart?.restarts ?? 0, state.poll?.restarts ?? 0);
  const restarts = state.poll?.resendRestart ? Math.max(1, recorded) : recorded + 1;
  const codes = (state.poll?.messages ?? []).map((m) => m.code).join(', ') || 'no reason given';
  // Recorded before Mapflow is asked: an execution resumed after a kill -9 at any instant then knows
  // the processing was (or was about to be) restarted, and never restarts it a second time.
  const row = await ctx.ledger.get(job.jobId);
  const part = row?.parts?.find((p) => p.index === state.part.index);
  await ctx.ledger.upsertPart(job.jobId, {
    ...part,
    index: state.part.index,
    name: state.part.name,
    processingId,
    status: 'IN_PROGRESS',
    attempts: restarts + 1,
    restartRequestedAt: ctx.now().toISOString(),
  });
  try {
    await client.restartProcessing(processingId);
  } catch (err) {
    if (!(await alreadyRestarted(client, processingId, err))) throw err;
    ctx.logger.info('the processing is no longer FAILED: an earlier restart whose answer was lost took effect', { jobId: job.jobId, processingId });
  }

  const { row: updated } = await ctx.ledger.transition(job.jobId, 'IN_PROGRESS', {}, `processing ${processingId} (${state.part.name}) failed with ${codes}; restarted (attempt ${restarts + 1})`);
  await publishRow(ctx, EVENT_DETAIL_TYPES.RESTARTED, updated, { messages: [`processing ${processingId} restarted after ${codes}`] });
  return { restarts, restartedAt: ctx.now().toISOString() };
}

/**
 * A restart whose answer was lost is retried (the client treats restart as
 * idempotent); Mapflow may then refuse it because the processing is no longer
 * FAILED. That refusal means the first restart took effect.
 */
async function alreadyRestarted(client: MapflowClient, processingId: string, err: unknown): Promise<boolean> {
  if (errorName(err) !== 'MapflowRequestError') return false;
  const processing = await client.getProcessing(processingId);
  return processing.status !== 'FAILED';
}
