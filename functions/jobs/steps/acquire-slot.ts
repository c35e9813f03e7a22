/**
 * Acquire Slot: takes one of the account's concurrency slots for this part
 * (holder `<jobId>#<part index>`; idempotent for the same holder). When none
 * is free the machine waits `waitSeconds` and comes back; the first time the
 * job is marked QUEUED. The waiting is bounded: after too long the part
 * fails with QueueTimeout.
 */
import { BridgeError } from '../../core/errors.ts';
import { EVENT_DETAIL_TYPES } from '../../core/model.ts';
import type { PartState, SlotResult } from '../workflow.ts';
import { nextPollSeconds } from '../../polling/poll-policy.ts';
import { slotHolder } from '../../ledger/slots.ts';
import { jobContextOf, publishRow, queuedNote } from '../common.ts';
import type { StepContext } from '../context.ts';

/** Most attempts to get a slot before the part gives up. */
export const MAX_SLOT_ATTEMPTS = 2_000;

export class QueueTimeout extends BridgeError {
  constructor(message: string) {
    super('QUEUE_TIMEOUT', message);
    this.name = 'QueueTimeout';
  }
}

export async function acquireSlot(state: PartState, ctx: StepContext): Promise<SlotResult> {
  const job = jobContextOf(state.job);
  const attempts = (state.slot?.attempts ?? 0) + 1;
  const now = ctx.now();
  const firstAttemptAt = state.slot?.firstAttemptAt ?? now.toISOString();
  const policy = ctx.config.pollPolicy;

  const { acquired, inUse } = await ctx.slots.acquire(slotHolder(job.jobId, state.part.index), job.executionArn ?? job.jobId);
  if (acquired) return { acquired, waitSeconds: 0, attempts, inUse, firstAttemptAt };

  const waitedSeconds = (now.getTime() - Date.parse(firstAttemptAt)) / 1000;
  if (attempts >= MAX_SLOT_ATTEMPTS || waitedSeconds > policy.maxJobSeconds) {
    throw new QueueTimeout(
      `no Mapflow processing slot became free in ${Math.round(waitedSeconds)} s (${attempts} attempts, ${inUse} of ${ctx.config.maxConcurrentProcessings} in use)`,
    );
  }
  if (attempts === 1) {
    const { changed, row } = await ctx.ledger.transition(job.jobId, 'QUEUED', {}, queuedNote(inUse, ctx.config.maxConcurrentProcessings));
    if (changed) await publishRow(ctx, EVENT_DETAIL_TYPES.QUEUED, row);
  }
  // Slots free up at the pace processings finish: wait like a poll would.
  const waitSeconds = nextPollSeconds(policy, { polls: attempts }, ctx.random);
  return { acquired, waitSeconds, attempts, inUse, firstAttemptAt };
}
