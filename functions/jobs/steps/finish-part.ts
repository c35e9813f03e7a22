/**
 * Finish Part: the end of every path of a part (success, failure, timeout or
 * a caught error). Releases the part's concurrency slot (idempotent), records
 * the part's outcome (a JobPart) in the ledger, and returns it in brief (a
 * PartOutcome: the Map gathers these, and Finish Job reads the ledger).
 */
import type { JobPart } from '../../core/model.ts';
import type { PartOutcome, PartState } from '../workflow.ts';
import { jobContextOf, releaseSlot } from '../common.ts';
import type { StepContext } from '../context.ts';
import { slotHolder } from '../../ledger/slots.ts';
import { HOW_TO_RETRY, jobErrorFromMapflow, jobErrorFromTaskError } from '../outcome.ts';

export async function finishPart(state: PartState, ctx: StepContext): Promise<PartOutcome> {
  const job = jobContextOf(state.job);
  const { part, poll } = state;
  await releaseSlot(ctx, slotHolder(job.jobId, part.index));

  const row = await ctx.ledger.get(job.jobId);
  const previous = row?.parts?.find((p) => p.index === part.index);
  const processingId = state.processing?.processingId ?? previous?.processingId;
  const cost = poll?.cost ?? previous?.cost;
  const attempts = (poll?.restarts ?? state.restart?.restarts ?? 0) + 1;

  const outcome: JobPart = {
    index: part.index,
    name: part.name,
    ...(processingId && { processingId }),
    ...(poll?.percentCompleted !== undefined && { percentCompleted: poll.percentCompleted }),
    ...(typeof cost === 'number' && { cost }),
    attempts: Math.max(attempts, previous?.attempts ?? 1),
    status: 'FAILED',
  };
  if (state.error) {
    outcome.error = jobErrorFromTaskError(state.error).error;
  } else if (poll?.outcome === 'OK' && state.results?.resultKey) {
    outcome.status = 'OK';
    outcome.resultKey = state.results.resultKey;
    if (state.results.rasterResult) outcome.rasterResult = state.results.rasterResult;
  } else if (poll?.outcome === 'FAILED' || poll?.outcome === 'TIMEOUT') {
    outcome.error = jobErrorFromMapflow(poll.status, poll.messages, poll.outcome, { image: job.kind === 'geotiff' });
    // What the processing made before it failed (store-results.ts storePartialResults).
    if (state.results?.partial && state.results.resultKey) outcome.partialResult = { key: state.results.resultKey, features: state.results.partial.features };
  } else {
    outcome.error = { code: 'INTERNAL_ERROR', message: `part '${part.name}' ended without an outcome (poll ${poll?.outcome ?? 'none'}); ${HOW_TO_RETRY}.` };
  }

  await ctx.ledger.upsertPart(job.jobId, outcome);
  return partOutcomeOf(outcome);
}

/** The part's outcome in brief, for the Process Parts Map (its full outcome is in the ledger). */
export function partOutcomeOf(part: JobPart): PartOutcome {
  return { index: part.index, status: part.status === 'OK' ? 'OK' : 'FAILED' };
}
