import { BridgeError } from '../errors.ts';
import type { RegisterResult, WorkflowState } from '../workflow.ts';

export async function registerJob(state: WorkflowState): Promise<RegisterResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `register-job is being written (job ${JSON.stringify(Object.keys(state))})`);
}
