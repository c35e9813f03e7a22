/**
 * A job's progress, one definition for the ledger, the CLI and the console:
 * the mean of every planned part's percent, parts not started yet counting
 * 0 % (averaging only the parts started made a split job jump from 98 % to
 * 57 % as more parts started). The ledger only ever raises it
 * (Ledger.raisePercent), so what an operator sees never goes backwards.
 */
import type { JobPart, LedgerRow } from './model.ts';

/** The job's percent from its parts; `partCount` (the plan's) covers the parts not started yet. */
export function jobPercent(parts: readonly Pick<JobPart, 'percentCompleted' | 'status' | 'resultKey'>[], partCount?: number): number {
  const planned = Math.max(partCount ?? 0, parts.length);
  if (planned === 0) return 0;
  const sum = parts.reduce((total, p) => total + (p.resultKey || p.status === 'OK' ? 100 : clamp(p.percentCompleted ?? 0)), 0);
  // Whole percents, rounded down: 100 only when every part is done.
  return Math.floor(sum / planned + 1e-9);
}

/** Parts finished (OK) and planned, for the "9 of 97 parts done" that goes with a split job's percent. */
export function partsDone(row: Pick<LedgerRow, 'parts' | 'partCount'>): { done: number; planned: number } {
  const parts = row.parts ?? [];
  return { done: parts.filter((p) => p.status === 'OK' || p.resultKey).length, planned: Math.max(row.partCount ?? 0, parts.length) };
}

function clamp(n: number): number {
  return Number.isFinite(n) ? Math.max(0, Math.min(100, n)) : 0;
}
