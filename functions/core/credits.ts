/**
 * Credits, one definition for every figure an operator sees (jobs list/show,
 * costs, the console, the cancel outcome): what Mapflow charged is counted
 * whenever it is known, whatever the job's end; an estimate stands only where
 * no charge is known yet.
 *
 * Mapflow charges a processing when it starts (the simulator does the same) and
 * gives the credits back only by moving it to REFUNDED, so a part's cost counts
 * as charged unless its processing was refunded.
 */
import { isFinalStatus, type JobPart, type LedgerRow } from './model.ts';

/** Mapflow statuses whose credits were given back. */
const REFUNDED_STATUSES = new Set(['REFUNDED']);

/** Credits charged for one part, or undefined when its cost is not known. */
export function partCharge(part: Pick<JobPart, 'cost' | 'status'>): number | undefined {
  if (typeof part.cost !== 'number' || !Number.isFinite(part.cost)) return undefined;
  return REFUNDED_STATUSES.has(String(part.status ?? '')) ? 0 : part.cost;
}

/** Credits charged for the parts, or undefined when no part's cost is known. */
export function partsCharge(parts: readonly Pick<JobPart, 'cost' | 'status'>[] | undefined): number | undefined {
  const charges = (parts ?? []).map(partCharge).filter((c): c is number => c !== undefined);
  return charges.length > 0 ? round2(charges.reduce((a, b) => a + b, 0)) : undefined;
}

/** What a job cost: charged (a fact) or estimated (before any charge is known). */
export interface CostFigure {
  credits: number;
  kind: 'charged' | 'estimate';
}

/**
 * The cost to show for a job. The charge is the job's `actualCost`, else the
 * sum of its parts' costs (a job cancelled or failed part-way keeps what its
 * finished parts cost); a job that never reached Mapflow (REJECTED, or ended
 * before any processing was created) cost 0; only a job with no charge known
 * shows its estimate.
 */
export function jobCost(row: Pick<LedgerRow, 'status' | 'actualCost' | 'estimatedCost' | 'parts' | 'processingId'>): CostFigure | undefined {
  if (typeof row.actualCost === 'number' && Number.isFinite(row.actualCost)) return { credits: row.actualCost, kind: 'charged' };
  const parts = partsCharge(row.parts);
  if (parts !== undefined) return { credits: parts, kind: 'charged' };
  const reachedMapflow = Boolean(row.processingId) || (row.parts ?? []).some((p) => p.processingId);
  if (row.status === 'REJECTED' || (isFinalStatus(row.status) && !reachedMapflow)) return { credits: 0, kind: 'charged' };
  return typeof row.estimatedCost === 'number' ? { credits: row.estimatedCost, kind: 'estimate' } : undefined;
}

export function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
