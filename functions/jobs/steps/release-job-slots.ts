/**
 * Release Job Slots: after Fail Job (also when Fail Job itself failed), frees
 * every slot the job holds, gives up its places in the admission queue and
 * hands the freed slots to the oldest waiters (SendTaskSuccess of their
 * tokens). Idempotent. A step of its own so that Fail Job, which writes the
 * report, the ledger and the event, needs no Step Functions client (lean
 * bundles, least privilege); should it fail for good, the reconciler frees the
 * slots of the dead execution and hands them on.
 */
import type { WorkflowState } from '../workflow.ts';
import type { StepContext } from '../context.ts';

export interface ReleaseJobSlotsResult {
  /** The job whose slots and places were released; absent for a state without a job id. */
  jobId?: string;
}

export async function releaseJobSlots(state: WorkflowState, ctx: StepContext): Promise<ReleaseJobSlotsResult> {
  if (!state?.jobId) {
    ctx.logger.error('Release Job Slots got a state without jobId; nothing to release');
    return {};
  }
  await ctx.slots.releaseJob(state.jobId);
  return { jobId: state.jobId };
}
