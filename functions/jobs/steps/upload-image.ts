import { BridgeError } from '../errors.ts';
import type { UploadResult, WorkflowState } from '../workflow.ts';

export async function uploadImage(state: WorkflowState): Promise<UploadResult> {
  throw new BridgeError('NOT_IMPLEMENTED', `upload-image is being written (job ${JSON.stringify(Object.keys(state))})`);
}
