/** Task "poll-processing": see docs/workflow.md. The logic lives in functions/jobs/steps/poll-processing.ts. */
import type { PartState, PollResult } from '../jobs/workflow.ts';
import { pollProcessing } from '../jobs/steps/poll-processing.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-mapflow.ts';
// Releasing the slot at detection hands it to the next waiter (SendTaskSuccess).
import '../runtime/with-sfn.ts';

export const handler = async (event: PartState): Promise<PollResult> => pollProcessing(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'poll-processing';
