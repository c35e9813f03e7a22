/**
 * Slot hand-over to a waiting execution: SendTaskSuccess of the task token a
 * waiter parked (functions/ledger/slots.ts). The output is what the waiting
 * state writes at its result path (a SlotResult).
 *
 * A token that no longer exists (its execution was stopped, failed or timed
 * out) is 'gone', not an error: the slot goes to the next waiter.
 */
import { SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import type { SlotWaiter, WakeWaiter } from '../ledger/slots.ts';

/** SendTaskSuccess errors that mean "nobody waits on this token any more". */
export const GONE_TOKEN_ERRORS = new Set(['TaskDoesNotExist', 'TaskTimedOut', 'InvalidToken']);

export function taskTokenWaker(client: () => SFNClient, clock: () => Date = () => new Date()): WakeWaiter {
  return async (waiter: SlotWaiter) => {
    const now = clock();
    const output = {
      acquired: true,
      waitSeconds: 0,
      attempts: 1,
      firstAttemptAt: waiter.since,
      waitedSeconds: Math.max(0, Math.round((now.getTime() - Date.parse(waiter.since)) / 100) / 10),
    };
    try {
      await client().send(new SendTaskSuccessCommand({ taskToken: waiter.taskToken, output: JSON.stringify(output) }));
      return 'sent';
    } catch (error) {
      if (GONE_TOKEN_ERRORS.has((error as { name?: string }).name ?? '')) return 'gone';
      throw error;
    }
  };
}
