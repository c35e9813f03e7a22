/** Task "store-results": see docs/workflow.md. The logic lives in functions/jobs/steps/store-results.ts. */
import type { PartState, StoreResult } from '../jobs/workflow.ts';
import { storeResults } from '../jobs/steps/store-results.ts';
import { defaultStepContext } from '../jobs/steps/runtime.ts';

export const handler = async (event: PartState): Promise<StoreResult> => storeResults(event, defaultStepContext());
