/** Task "register-job": see docs/workflow.md. The logic lives in functions/jobs/steps/register-job.ts. */
import type { RegisterResult, WorkflowState } from '../jobs/workflow.ts';
import { registerJob } from '../jobs/steps/register-job.ts';
import { defaultStepContext } from '../jobs/runtime.ts';

export const handler = async (event: WorkflowState): Promise<RegisterResult> => registerJob(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'register-job';
