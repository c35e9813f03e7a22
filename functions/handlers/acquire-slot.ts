/** Task "acquire-slot": see docs/workflow.md. The logic lives in functions/jobs/steps/acquire-slot.ts. */
import type { PartState, SlotResult } from '../jobs/workflow.ts';
import { acquireSlot } from '../jobs/steps/acquire-slot.ts';
import { defaultStepContext } from '../jobs/runtime.ts';

export const handler = async (event: PartState): Promise<SlotResult> => acquireSlot(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'acquire-slot';
