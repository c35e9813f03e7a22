/** Task "inspect-geotiff": see docs/workflow.md. The logic lives in functions/jobs/steps/inspect-geotiff.ts. */
import type { InspectResult, WorkflowState } from '../jobs/workflow.ts';
import { inspectGeotiff } from '../jobs/steps/inspect-geotiff.ts';
import { defaultStepContext } from '../jobs/steps/runtime.ts';

export const handler = async (event: WorkflowState): Promise<InspectResult> => inspectGeotiff(event, defaultStepContext());
