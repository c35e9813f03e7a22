/** Task "restart-processing": see docs/workflow.md. The logic lives in functions/jobs/steps/restart-processing.ts. */
import type { PartState, RestartResult } from '../jobs/workflow.ts';
import { restartProcessing } from '../jobs/steps/restart-processing.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-mapflow.ts';

export const handler = async (event: PartState): Promise<RestartResult> => restartProcessing(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'restart-processing';
