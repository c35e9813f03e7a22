/**
 * Which job an operator means: `jobs show|retry|cancel` take the whole job id,
 * a unique prefix of it, or the file's name (or a unique prefix of it), as
 * `jobs list` shows them. Several matches, or none, is an error that lists
 * what was meant most likely ("did you mean").
 */
import type { LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import type { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
import { inputName } from './format.ts';

/** Rows looked through for a prefix (the most recent first). */
const SEARCHED = 1_000;

export class JobNotResolved extends Error {
  constructor(
    message: string,
    readonly candidates: string[],
  ) {
    super(message);
    this.name = 'JobNotResolved';
  }
}

/** The job id `given` stands for, or JobNotResolved saying why. */
export async function resolveJobId(ledger: Pick<Ledger, 'get' | 'listRecent'>, given: string): Promise<string> {
  if (await ledger.get(given)) return given;
  const rows = await ledger.listRecent({ limit: SEARCHED });
  const lower = given.toLowerCase();
  const file = (row: LedgerRow) => inputName(row).toLowerCase();
  const base = (row: LedgerRow) => file(row).split('/').at(-1) ?? '';
  // The exact file name wins over prefixes (a.geojson and a.geojson.bak).
  for (const exact of [(r: LedgerRow) => file(r) === lower || base(r) === lower, (r: LedgerRow) => r.jobId.startsWith(given) || file(r).startsWith(lower) || base(r).startsWith(lower)]) {
    const matches = rows.filter(exact);
    // A retried file has several jobs: the newest attempt is the one that matters, unless ids were given.
    const latest = matches.filter((r) => !r.retriedBy || !matches.some((m) => m.jobId === r.retriedBy));
    if (latest.length === 1) return (latest[0] as LedgerRow).jobId;
    if (latest.length > 1) {
      const listed = latest.slice(0, 5).map((r) => `${r.jobId} (${inputName(r)}, ${r.status})`);
      throw new JobNotResolved(`'${given}' matches ${latest.length} jobs; did you mean ${listed.join(', or ')}${latest.length > 5 ? ', ...' : ''}? Give more of the id.`, latest.map((r) => r.jobId));
    }
  }
  const near = rows.filter((r) => r.jobId.toLowerCase().includes(lower) || file(r).includes(lower)).slice(0, 3);
  throw new JobNotResolved(
    `no job '${given}'${near.length ? `; did you mean ${near.map((r) => `${r.jobId} (${inputName(r)})`).join(', or ')}?` : ' (jobs list shows the ids and file names).'}`,
    near.map((r) => r.jobId),
  );
}
