/**
 * Issue 38, "Names": odd file names through `mapflow-bridge local run --json`,
 * as a user runs it. Every file is in the JSON and ends final: a name the
 * bridge refuses (control characters, NEL, U+2028, bytes that are not UTF-8)
 * is REJECTED INVALID_KEY with a report, a long name AWS takes (233 bytes)
 * SUCCEEDS, and no control character of a name reaches the terminal raw.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { RunJobSummary } from '../../packages/cli/src/run.ts';
import { ROOT, squareAoi } from './helpers.ts';
import { testTmp } from '../support/temp.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';

const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

describe('odd names through local run', () => {
  it('puts every file in the JSON, final: refused names REJECTED INVALID_KEY with a report, long names SUCCEEDED', { timeout: 600_000 }, async () => {
    // Prepare: the names, written as bytes; one is Latin-1 (0xE9), not UTF-8.
    const base = await mkdtemp(path.join(testTmp(), 'mfb-odd-names-'));
    const corpus = path.join(base, 'corpus');
    const work = path.join(base, 'work');
    await mkdir(corpus);
    await mkdir(work);
    const refused = ['esc-\x1b[2J\x1b]0;pwned\x07.geojson', 'forged\n12:00:00  x SUCCEEDED.geojson', 'nel-\u0085.geojson', 'ls-\u2028.geojson'];
    const accepted = ['good.geojson', `${'n'.repeat(233 - '.geojson'.length)}.geojson`];
    for (const name of [...refused, ...accepted]) await writeFile(path.join(corpus, name), squareAoi());
    await writeFile(Buffer.concat([Buffer.from(`${corpus}/latin1-`), Buffer.from([0xe9]), Buffer.from('.geojson')]), squareAoi());
    // A shell passes the non-UTF-8 name as bytes (Node's spawn would encode it as UTF-8).
    const args = ['local', 'run', '--json', '--processing-seconds', '1', '--timeout', '500', ...(await sharedLedgerArgs('oddnames')), '--out', path.join(work, 'out')];
    const script = `exec "$NODE" "$@" "$(printf '%s/latin1-\\351.geojson' "$CORPUS")"`;

    // Act
    const result = await promisify(execFile)('/bin/sh', ['-c', script, 'sh', CLI, ...args, ...[...refused, ...accepted].map((name) => path.join(corpus, name))], {
      cwd: work,
      env: { ...process.env, NODE: process.execPath, CORPUS: corpus },
      timeout: 550_000,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { code?: number; stdout?: string; stderr?: string }) => {
      if (typeof error.code !== 'number') throw error;
      return { stdout: error.stdout ?? '', stderr: error.stderr ?? '' };
    });

    // Assess
    const jobs = (JSON.parse(result.stdout) as { jobs: RunJobSummary[] }).jobs;
    const outcomes = Object.fromEntries(jobs.map((job) => [path.basename(job.file), `${job.status} ${job.error?.code ?? ''}`]));
    expect(outcomes, result.stderr.slice(-4000)).toEqual({
      ...Object.fromEntries(refused.map((name) => [name, 'REJECTED INVALID_KEY'])),
      'latin1-\ufffd.geojson': 'REJECTED INVALID_KEY',
      ...Object.fromEntries(accepted.map((name) => [name, 'SUCCEEDED '])),
    });
    for (const job of jobs.filter((j) => j.status === 'REJECTED')) {
      expect(job.jobId, job.file).not.toBeNull();
      expect(job.report, job.file).toMatch(/report\.json$/);
    }
    expect(jobs.find((j) => j.file.includes('latin1'))?.error?.message).toMatch(/not UTF-8/);
    // Nothing of a name drives the terminal: no ESC, BEL, C1 or separator on stderr, no forged line.
    expect(result.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/);
    expect(result.stderr).not.toMatch(/^12:00:00 {2}x SUCCEEDED/m);
    expect(result.stderr).toContain('esc-\\x1b[2J\\x1b]0;pwned\\x07.geojson');
  });
});
