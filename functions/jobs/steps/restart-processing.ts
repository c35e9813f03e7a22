import { BridgeError } from '../errors.ts';
import type { PartState, RestartResult } from '../workflow.ts';

export async function restartProcessing(state: PartState): Promise<RestartResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `restart-processing is being written (job ${JSON.stringify(Object.keys(state))})`);
}
