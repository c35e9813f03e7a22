/** Task "upload-image": see docs/workflow.md. The logic lives in functions/jobs/steps/upload-image.ts. */
import type { UploadResult, WorkflowState } from '../jobs/workflow.ts';
import { uploadImage } from '../jobs/steps/upload-image.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-s3.ts';
import '../runtime/with-mapflow.ts';

export const handler = async (event: WorkflowState): Promise<UploadResult> => uploadImage(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'upload-image';
