import { BridgeError } from '../errors.ts';
import type { PartState, StoreResult } from '../workflow.ts';

export async function storeResults(state: PartState): Promise<StoreResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `store-results is being written (job ${JSON.stringify(Object.keys(state))})`);
}
