import { BridgeError } from '../errors.ts';
import type { PartState, ProcessingResult } from '../workflow.ts';

export async function createProcessing(state: PartState): Promise<ProcessingResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `create-processing is being written (job ${JSON.stringify(Object.keys(state))})`);
}
