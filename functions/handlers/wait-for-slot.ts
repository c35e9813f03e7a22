/** Task "wait-for-slot" (.waitForTaskToken): see docs/architecture.md, "Admission". The logic lives in functions/jobs/steps/wait-for-slot.ts. */
import { waitForSlot, type SlotWaitInput, type SlotWaitOutcome } from '../jobs/steps/wait-for-slot.ts';
import { defaultStepContext } from '../jobs/steps/runtime.ts';

export const handler = async (event: SlotWaitInput): Promise<SlotWaitOutcome> => waitForSlot(event, defaultStepContext());
