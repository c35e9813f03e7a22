/** Task "fail-job": see docs/workflow.md. The logic lives in functions/jobs/steps/fail-job.ts. */
import type { FinishResult, WorkflowState } from '../jobs/workflow.ts';
import { failJob } from '../jobs/steps/fail-job.ts';
import { defaultStepContext } from '../jobs/steps/runtime.ts';

export const handler = async (event: WorkflowState): Promise<FinishResult> => failJob(event, defaultStepContext());
