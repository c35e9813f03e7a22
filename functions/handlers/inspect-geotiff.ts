/** Task "inspect-geotiff": see docs/workflow.md. The logic lives in functions/jobs/steps/inspect-geotiff.ts. */
import type { InspectResult, WorkflowState } from '../jobs/workflow.ts';
import { inspectGeotiff } from '../jobs/steps/inspect-geotiff.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
import type { RemainingTime } from '../core/deadline.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-s3.ts';
import '../runtime/with-mapflow.ts';

// The Lambda context bounds the decode's time (functions/core/deadline.ts).
export const handler = async (event: WorkflowState, context?: RemainingTime): Promise<InspectResult> => inspectGeotiff(event, defaultStepContext(), context);

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'inspect-geotiff';
