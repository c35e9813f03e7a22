/** Task "wait-for-slot" (.waitForTaskToken): see docs/architecture.md, "Admission". The logic lives in functions/jobs/steps/wait-for-slot.ts. */
import { waitForSlot, type SlotWaitInput, type SlotWaitOutcome } from '../jobs/steps/wait-for-slot.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-sfn.ts';

export const handler = async (event: SlotWaitInput): Promise<SlotWaitOutcome> => waitForSlot(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'wait-for-slot';
