import { BridgeError } from '../errors.ts';
import type { FinishResult, WorkflowState } from '../workflow.ts';

export async function finishJob(state: WorkflowState): Promise<FinishResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `finish-job is being written (job ${JSON.stringify(Object.keys(state))})`);
}
