/**
 * `jobs list` says when it shows fewer jobs than the ledger holds, instead of
 * letting the newest 50 pass for all of them.
 */
import { CredentialStore } from '../../local/src/auth/credentials.ts';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Ledger } from '../../../functions/ledger/ledger.ts';
import { runJobsCommand } from '../src/jobs.ts';
import { moreJobsLine } from '../src/list-count.ts';
import { ENDPOINTS_FILE } from '../src/start.ts';
import { useDynamoDbLocal } from '../../../test/support/dynamodb.ts';
import { testTmp } from '../../../test/support/temp.ts';

const dynamodb = useDynamoDbLocal();

describe('jobs list on a ledger of 55 jobs', () => {
  let stateDir: string;

  beforeAll(async () => {
    // Prepare: 55 jobs, and an endpoints.json as a running `start` writes it
    const table = await dynamodb.createLedgerTable();
    const ledger = new Ledger(dynamodb.doc, table);
    for (let i = 0; i < 55; i++) {
      const jobId = `job-${String(i).padStart(2, '0')}`;
      await ledger.register({ jobId, input: { bucket: 'b', key: `inbox/${jobId}.geojson`, etag: 'e', size: 1 }, kind: 'geojson', routeName: 'default' });
    }
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-jobs-'));
    await writeFile(path.join(stateDir, ENDPOINTS_FILE), JSON.stringify({ dynamodb: dynamodb.endpoint, ledgerTable: table }));
    await CredentialStore.open(stateDir); // the credentials.json a running `start` issued
  }, 120_000);
  afterAll(async () => {
    vi.restoreAllMocks();
    await rm(stateDir, { recursive: true, force: true });
  });

  async function list(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...parts: unknown[]) => void out.push(parts.join(' ')));
    const error = vi.spyOn(console, 'error').mockImplementation((...parts: unknown[]) => void err.push(parts.join(' ')));
    try {
      const code = await runJobsCommand(['list', '--state-dir', stateDir, ...args]);
      return { code, out: out.join('\n'), err: err.join('\n') };
    } finally {
      log.mockRestore();
      error.mockRestore();
    }
  }

  it('says it shows the newest 50 of 55 by default', { timeout: 60_000 }, async () => {
    // Act
    const result = await list();
    // Assess
    expect(result.code, result.err).toBe(0);
    expect(result.out.split('\n').filter((line) => line.startsWith('job-'))).toHaveLength(50);
    expect(result.out).toContain('showing the newest 50 of 55 jobs; --limit to see more');
  });

  it('says nothing more when every job is shown, and keeps stdout one JSON document with --json', { timeout: 60_000 }, async () => {
    // Act
    const all = await list('--limit', '60');
    const json = await list('--json', '--limit', '10');
    // Assess
    expect(all.out).not.toContain('showing the newest');
    expect(all.out.split('\n').filter((line) => line.startsWith('job-'))).toHaveLength(55);
    expect((JSON.parse(json.out) as { jobs: unknown[] }).jobs).toHaveLength(10);
    expect(json.err).toContain('showing the newest 10 of 55 jobs');
  });

  it('shows the creation time it sorts by, and the code of a rejected job', { timeout: 60_000 }, async () => {
    // Prepare: the oldest job is updated last (rejected), so updated and created orders differ
    const table = JSON.parse(await readFile(path.join(stateDir, ENDPOINTS_FILE), 'utf8')) as { ledgerTable: string };
    await new Ledger(dynamodb.doc, table.ledgerTable).transition('job-00', 'REJECTED', { error: { code: 'BUDGET_EXCEEDED', message: 'over the budget' } });
    // Act
    const result = await list('--limit', '60');
    // Assess: the header names CREATED and CODE, the times shown are newest first, job-00 says its code
    const [header, ...lines] = result.out.split('\n');
    const columns = header!.split(/\s{2,}/);
    expect(columns).toEqual(expect.arrayContaining(['CREATED', 'CODE']));
    expect(columns).not.toContain('UPDATED');
    const shown = lines.filter((line) => line.startsWith('job-')).map((line) => line.split(/\s+/).at(-1)!);
    expect(shown).toEqual([...shown].sort().reverse());
    expect(lines.find((line) => line.startsWith('job-00'))).toMatch(/REJECTED\s+BUDGET_EXCEEDED/);
  });

  it('names the status when the list is filtered', () => {
    expect(moreJobsLine(50, 55, 'FAILED')).toBe('showing the newest 50 of 55 FAILED jobs; --limit to see more');
    expect(moreJobsLine(55, 55)).toBeUndefined();
  });
});
