import { BridgeError } from '../errors.ts';
import type { FinishResult, WorkflowState } from '../workflow.ts';

export async function failJob(state: WorkflowState): Promise<FinishResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `fail-job is being written (job ${JSON.stringify(Object.keys(state))})`);
}
