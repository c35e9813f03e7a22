/** Task "release-job-slots": see docs/workflow.md. The logic lives in functions/jobs/steps/release-job-slots.ts. */
import type { WorkflowState } from '../jobs/workflow.ts';
import { releaseJobSlots, type ReleaseJobSlotsResult } from '../jobs/steps/release-job-slots.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-sfn.ts';

export const handler = async (event: WorkflowState): Promise<ReleaseJobSlotsResult> => releaseJobSlots(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'release-job-slots';
