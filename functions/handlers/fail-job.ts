/** Task "fail-job": see docs/workflow.md. The logic lives in functions/jobs/steps/fail-job.ts. */
import type { FinishResult, WorkflowState } from '../jobs/workflow.ts';
import { failJob } from '../jobs/steps/fail-job.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-s3.ts';

export const handler = async (event: WorkflowState): Promise<FinishResult> => failJob(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'fail-job';
