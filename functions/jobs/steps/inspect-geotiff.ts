import { BridgeError } from '../errors.ts';
import type { InspectResult, WorkflowState } from '../workflow.ts';

export async function inspectGeotiff(state: WorkflowState): Promise<InspectResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `inspect-geotiff is being written (job ${JSON.stringify(Object.keys(state))})`);
}
