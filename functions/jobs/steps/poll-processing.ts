import { BridgeError } from '../errors.ts';
import type { PartState, PollResult } from '../workflow.ts';

export async function pollProcessing(state: PartState): Promise<PollResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `poll-processing is being written (job ${JSON.stringify(Object.keys(state))})`);
}
