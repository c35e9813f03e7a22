import { BridgeError } from '../errors.ts';
import type { PlanResult, WorkflowState } from '../workflow.ts';

export async function planProcessing(state: WorkflowState): Promise<PlanResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `plan-processing is being written (job ${JSON.stringify(Object.keys(state))})`);
}
