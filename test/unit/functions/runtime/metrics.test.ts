import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LedgerRow } from '../../../../functions/core/model.ts';
import { recordJobOutcome } from '../../../../functions/runtime/metrics.ts';
import { ledgerRow } from '../../../support/ledger-row.ts';

// The test setup silences metrics for every other test file (test/support/setup.ts); these tests read them.
process.env.POWERTOOLS_METRICS_DISABLED = 'false';

/** A job in `status`, finished two minutes after it was created. */
const row = (status: LedgerRow['status'], extra: Partial<LedgerRow> = {}): LedgerRow =>
  ledgerRow({ status, updatedAt: '2025-01-01T00:02:00.000Z', finishedAt: '2025-01-01T00:02:00.000Z', ...extra });

/** The embedded-metric-format documents Powertools prints to stdout. */
function captureEmf(): { documents: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  return { documents: () => lines.flatMap((l) => l.split('\n')).filter((l) => l.includes('_aws')).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('recordJobOutcome', () => {
  afterEach(() => vi.restoreAllMocks());

  it('emits the outcome, the credits spent and the duration of a finished job', () => {
    // Prepare
    const emf = captureEmf();

    // Act
    recordJobOutcome(row('SUCCEEDED', { actualCost: 7 }));

    // Assess
    const [doc] = emf.documents();
    expect(doc).toMatchObject({ JobsSucceeded: 1, CreditsSpent: 7, JobDuration: 120, kind: 'geojson' });
    const names = ((doc!._aws as { CloudWatchMetrics: { Metrics: { Name: string }[] }[] }).CloudWatchMetrics[0]!.Metrics).map((m) => m.Name);
    expect(names).toEqual(expect.arrayContaining(['JobsSucceeded', 'CreditsSpent', 'JobDuration']));
  });

  it('counts rejections under their own name and emits nothing for a job still running', () => {
    // Prepare
    const emf = captureEmf();

    // Act
    recordJobOutcome(row('REJECTED'));
    recordJobOutcome(row('IN_PROGRESS'));

    // Assess
    const docs = emf.documents();
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({ JobsRejected: 1 });
    expect(docs[0]).not.toHaveProperty('CreditsSpent');
  });
});
