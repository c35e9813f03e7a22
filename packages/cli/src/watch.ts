/**
 * `jobs watch`: the live view of `npm start` for any ledger (a deployed one
 * above all): polls the ledger and prints one line per new job or status
 * change, and a progress bar whenever a running job's percentage moves.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isFinalStatus, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import type { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
import { costOf, describeProgress, formatCost, formatJobCost, formatError, inputName, progressBar } from './format.ts';

export interface WatchOptions {
  intervalMs: number;
  /** Jobs read per poll (the most recent). */
  limit: number;
  json: boolean;
  /** Return once no job is in flight. */
  untilIdle: boolean;
  say(line: string): void;
  signal?: AbortSignal;
}

interface Seen {
  status: string;
  percent?: number;
}

/** Polls until aborted (or idle with untilIdle); returns the number of polls. */
export async function watchJobs(ledger: Pick<Ledger, 'listRecent'>, options: WatchOptions): Promise<number> {
  const seen = new Map<string, Seen>();
  let polls = 0;
  while (!options.signal?.aborted) {
    const rows = await ledger.listRecent({ limit: options.limit });
    polls++;
    // In time order (of the change each line reports), the opening backlog too: the lines carry that time.
    for (const row of [...rows].sort((a, b) => a.updatedAt.localeCompare(b.updatedAt) || a.createdAt.localeCompare(b.createdAt))) report(row, seen.get(row.jobId), options);
    for (const row of rows) seen.set(row.jobId, { status: row.status, ...(row.percentCompleted !== undefined ? { percent: row.percentCompleted } : {}) });
    if (options.untilIdle && rows.every((row) => isFinalStatus(row.status))) break;
    try {
      await sleep(options.intervalMs, undefined, options.signal ? { signal: options.signal } : {});
    } catch {
      break; // aborted
    }
  }
  return polls;
}

function report(row: LedgerRow, before: Seen | undefined, options: WatchOptions): void {
  const statusChanged = !before || before.status !== row.status;
  const progressed = !statusChanged && row.percentCompleted !== undefined && row.percentCompleted !== before?.percent && !isFinalStatus(row.status);
  if (!statusChanged && !progressed) return;
  if (options.json) {
    options.say(
      JSON.stringify({
        at: row.updatedAt,
        jobId: row.jobId,
        // JSON escapes by itself: the name as it is, not as printed.
        file: row.input.key.replace(/^inbox\//, ''),
        status: row.status,
        ...(row.percentCompleted !== undefined ? { percentCompleted: row.percentCompleted } : {}),
        ...(costOf(row) !== undefined ? { cost: costOf(row) } : {}),
        ...(row.error ? { error: row.error } : {}),
        change: statusChanged ? 'status' : 'progress',
      }),
    );
    return;
  }
  const time = new Date(row.updatedAt).toISOString().slice(11, 19);
  if (statusChanged) {
    const extras = [formatJobCost(row), formatError(row.error)].filter(Boolean);
    options.say(`${time}  ${inputName(row)}  ${row.status}${extras.length ? `  (${extras.join(', ')})` : ''}`);
  } else {
    options.say(`${time}  ${inputName(row)}  ${row.status.padEnd(11)} ${progressBar(row.percentCompleted ?? 0)}  ${[describeProgress(row).replace(/^\d+% /, ''), formatJobCost(row)].filter(Boolean).join(', ')}`);
  }
}
