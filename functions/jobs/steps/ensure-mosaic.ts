import { BridgeError } from '../errors.ts';
import type { MosaicResult, WorkflowState } from '../workflow.ts';

export async function ensureMosaic(state: WorkflowState): Promise<MosaicResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `ensure-mosaic is being written (job ${JSON.stringify(Object.keys(state))})`);
}
