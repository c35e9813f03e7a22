/** Task "plan-processing": see docs/workflow.md. The logic lives in functions/jobs/steps/plan-processing.ts. */
import type { PlanResult, WorkflowState } from '../jobs/workflow.ts';
import { planProcessing } from '../jobs/steps/plan-processing.ts';
import { defaultStepContext } from '../jobs/steps/runtime.ts';

export const handler = async (event: WorkflowState): Promise<PlanResult> => planProcessing(event, defaultStepContext());
