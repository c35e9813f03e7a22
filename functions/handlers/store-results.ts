/** Task "store-results": see docs/workflow.md. The logic lives in functions/jobs/steps/store-results.ts. */
import type { PartState, StoreResult } from '../jobs/workflow.ts';
import { storeResults } from '../jobs/steps/store-results.ts';
import { defaultStepContext } from '../jobs/runtime.ts';
// What this function calls besides DynamoDB (lean bundles: nothing else is bundled).
import '../runtime/with-s3.ts';
import '../runtime/with-mapflow.ts';

export const handler = async (event: PartState): Promise<StoreResult> => storeResults(event, defaultStepContext());

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'store-results';
