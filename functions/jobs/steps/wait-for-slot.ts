/**
 * Admit Job and Wait For Slot: the two `.waitForTaskToken` states of
 * admission (docs/architecture.md, "Admission"). The execution sleeps on its
 * task token, at no cost, until a slot is handed to it (SendTaskSuccess from
 * whoever releases a slot, oldest waiter first).
 *
 * - Admit Job (top level, before the Process Parts Map opens): takes the slot
 *   of the job's first part, so a job waiting for capacity never holds an open
 *   Map Run (quota: 1,000 per account). Part 0's Acquire Slot then finds the
 *   slot already its own.
 * - Wait For Slot (inside the Map, after Acquire Slot found none): further
 *   parts of an admitted job. They queue in arrival order of their job, so an
 *   earlier job's parts go before any later job is admitted.
 *
 * The Lambda's own return value is ignored by Step Functions (the token's
 * output is the state's result); it is returned for logs and tests.
 */
import { EVENT_DETAIL_TYPES } from '../../core/model.ts';
import type { PartJobContext } from '../workflow.ts';
import { slotHolder, waiterOrder } from '../../ledger/slots.ts';
import { jobContextOf, publishRow, queuedNote } from '../common.ts';
import type { StepContext } from '../context.ts';

export interface SlotWaitInput {
  job: PartJobContext;
  /** The part that needs the slot (Admit Job: the first part, index 0). */
  part: { index: number };
  /** `$$.Task.Token` of the waiting state. */
  taskToken: string;
  /**
   * `$$.Execution.Id` of the waiting state. At the top level (Admit Job) the
   * job's execution; inside the Distributed Map (Wait For Slot) the part's
   * child execution, `execution:<machine>/<map run label>:<id>`.
   */
  executionArn?: string;
}

export interface SlotWaitOutcome {
  holder: string;
  outcome: 'acquired' | 'waiting';
}

export async function waitForSlot(input: SlotWaitInput, ctx: StepContext): Promise<SlotWaitOutcome> {
  const job = jobContextOf(input.job);
  const holder = slotHolder(job.jobId, input.part.index);
  // The job's own (top-level) execution owns the slot, as Acquire Slot and Register Job record it:
  // the reconciler finds it in one ListExecutions page (a Map Run's children are listed only by
  // their mapRunArn), and it ends exactly when the job's slots can leak (an ended child fails the
  // Map Run, whose Catch releases them). The child's ARN only when the job's is not known.
  // docs/architecture.md, "Whose execution holds a slot".
  const executionArn = job.executionArn ?? input.executionArn ?? job.jobId;
  const since = ctx.now().toISOString();

  // Fast path: a free slot and nobody waiting. The state still waits for its
  // token, so we send it ourselves.
  const { acquired, inUse } = await ctx.slots.acquire(holder, executionArn);
  if (acquired) {
    await ctx.slots.wakeOwn({ holder, order: '', executionArn, taskToken: input.taskToken, since });
    return { holder, outcome: 'acquired' };
  }
  const outcome = await ctx.slots.enqueue({
    holder,
    // Arrival: a GeoJSON job's registration (Register Job reserved this place then, and the
    // first join's key stays); a GeoTIFF job arrives here, once its image is ready to process.
    order: waiterOrder((job.kind === 'geotiff' && input.part.index === 0 ? since : job.createdAt) ?? since, job.jobId, input.part.index),
    executionArn,
    taskToken: input.taskToken,
  });
  if (outcome === 'waiting') {
    const { changed, row } = await ctx.ledger.transition(job.jobId, 'QUEUED', {}, queuedNote(inUse, ctx.config.maxConcurrentProcessings));
    if (changed) await publishRow(ctx, EVENT_DETAIL_TYPES.QUEUED, row);
  }
  return { holder, outcome };
}
