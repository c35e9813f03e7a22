/** Task "create-processing": see docs/workflow.md. The logic lives in functions/jobs/steps/create-processing.ts. */
import type { PartState, ProcessingResult } from '../jobs/workflow.ts';
import { createProcessing } from '../jobs/steps/create-processing.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-s3.ts';
import '../runtime/with-mapflow.ts';

export const handler = async (event: PartState): Promise<ProcessingResult> => createProcessing(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'create-processing';
