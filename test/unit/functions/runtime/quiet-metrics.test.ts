/**
 * `npm test` prints no raw metrics JSON: a handler that records a job outcome
 * under test writes no CloudWatch EMF document (`{"_aws":...}`) to stdout,
 * because the test setup (test/support/setup.ts) turns Powertools metrics off.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { recordJobOutcome } from '../../../../functions/runtime/metrics.ts';
import { ledgerRow } from '../../../support/ledger-row.ts';

describe('metrics in tests', () => {
  afterEach(() => vi.restoreAllMocks());

  it('prints no {"_aws":...} line when a job outcome is recorded', () => {
    // Prepare
    const written: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const row = ledgerRow({ status: 'SUCCEEDED' });
    // Act
    recordJobOutcome(row);
    // Assess
    expect(process.env.POWERTOOLS_METRICS_DISABLED).toBe('true');
    expect(written.join('')).not.toContain('"_aws"');
  });
});
