/** Task "ensure-mosaic": see docs/workflow.md. The logic lives in functions/jobs/steps/ensure-mosaic.ts. */
import type { MosaicResult, WorkflowState } from '../jobs/workflow.ts';
import { ensureMosaic } from '../jobs/steps/ensure-mosaic.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-mapflow.ts';

export const handler = async (event: WorkflowState): Promise<MosaicResult> => ensureMosaic(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'ensure-mosaic';
