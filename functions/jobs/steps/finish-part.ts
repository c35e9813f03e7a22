import { BridgeError } from '../errors.ts';
import type { JobPart } from '../model.ts';
import type { PartState } from '../workflow.ts';

export async function finishPart(state: PartState): Promise<JobPart> {
  throw new BridgeError('NOT_IMPLEMENTED', `finish-part is being written (job ${JSON.stringify(Object.keys(state))})`);
}
