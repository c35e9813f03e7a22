/** Task "finish-part": see docs/workflow.md. The logic lives in functions/jobs/steps/finish-part.ts. */
import type { PartOutcome, PartState } from '../jobs/workflow.ts';
import { finishPart } from '../jobs/steps/finish-part.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-sfn.ts';

export const handler = async (event: PartState): Promise<PartOutcome> => finishPart(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'finish-part';
