/** Provides the Step Functions client and the slot hand-over (SendTaskSuccess) to the handler context. */
import { sfnClient } from './aws.ts';
import { provideStepFunctions } from './providers.ts';
import { taskTokenWaker } from './task-tokens.ts';

provideStepFunctions(sfnClient, taskTokenWaker);
