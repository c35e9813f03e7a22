import { BridgeError } from '../errors.ts';
import type { PartState, SlotResult } from '../workflow.ts';

export async function acquireSlot(state: PartState): Promise<SlotResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `acquire-slot is being written (job ${JSON.stringify(Object.keys(state))})`);
}
