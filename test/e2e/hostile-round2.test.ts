/**
 * Issue 23: the second-round hostile corpus (packages/bench/fixtures/hostile-round2.ts),
 * with a name the bridge refuses, a 240-byte name S3 takes, and one good file, end to end
 * through `mapflow-bridge local run --json`, as a user runs it: the JSON is
 * printed whatever the files, every hostile file REJECTED with its code, the
 * good files SUCCEEDED, and the peak RSS below 1 GiB: the bridge process's
 * (VmHWM), and the bridge's with its function processes' (sampled).
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadLocalAssembly } from '../../packages/local/src/assembly/cache.ts';
import { localAssemblySettings } from '../../packages/local/src/bridge.ts';
import type { RunJobSummary } from '../../packages/cli/src/run.ts';
import { writeRound2Corpus } from '../../packages/bench/fixtures/hostile-round2.ts';
import { ROOT, squareAoi } from './helpers.ts';
import { runLocalMeasured } from '../support/rss.ts';
import { testTmp } from '../support/temp.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';

const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');
const GiB = 1024 ** 3;

describe('the second-round hostile corpus through local run', () => {
  it('prints its JSON, rejects every hostile file with its code and finishes the good one, within 1 GiB', { timeout: 1_200_000 }, async () => {
    // Prepare: the corpus, a name with a newline, a 240-byte name, and a good file
    const base = await mkdtemp(path.join(testTmp(), 'mfb-hostile2-'));
    const corpus = path.join(base, 'corpus');
    const work = path.join(base, 'work');
    await mkdir(work);
    const entries = await writeRound2Corpus(corpus);
    const newline = 'two\nlines.geojson';
    const long = `${'n'.repeat(232)}.geojson`;
    await writeFile(path.join(corpus, newline), squareAoi());
    await writeFile(path.join(corpus, long), squareAoi());
    await writeFile(path.join(corpus, 'good.geojson'), squareAoi());
    // The assembly local run uses, on disk before the measured process starts (a synthesis would run inside it).
    await loadLocalAssembly(localAssemblySettings({}));
    const files = [...entries.map((e) => e.file), newline, long, 'good.geojson'].map((name) => path.join(corpus, name));

    // Act
    // The functions that decode the input run in child processes: their memory counts too.
    const { stdout, stderr, peakBytes, tree } = await runLocalMeasured([CLI, 'local', 'run', '--json', '--processing-seconds', '1', '--timeout', '1000', ...(await sharedLedgerArgs('hostile2')), '--out', path.join(work, 'out'), ...files], {
      cwd: work,
      base,
      timeoutMs: 1_150_000,
    });
    const result = { stdout, stderr };
    const jobs = (JSON.parse(result.stdout) as { jobs: RunJobSummary[] }).jobs;

    // Assess
    const outcomes = Object.fromEntries(jobs.map((job) => [path.basename(job.file), `${job.status} ${job.error?.code ?? ''}`]));
    const expected = {
      ...Object.fromEntries(entries.map((e) => [e.file, `REJECTED ${e.expectedCode}`])),
      [newline]: 'REJECTED INVALID_KEY',
      // S3 takes a 240-byte name, and so does the local S3 since issue 38 (s3rver-keys.cjs).
      [long]: 'SUCCEEDED ',
      'good.geojson': 'SUCCEEDED ',
    };
    expect(outcomes, result.stderr.slice(-4000)).toEqual(expected);
    for (const job of jobs.filter((j) => j.status !== 'SUCCEEDED')) expect(job.error?.message.length ?? 0, job.file).toBeGreaterThan(40);
    expect(result.stderr).not.toMatch(/RangeError|heap out of memory|Maximum call stack|unhandled|FATAL/i);
    expect(peakBytes).toBeGreaterThan(0);
    expect(peakBytes).toBeLessThan(GiB);
    expect(tree.peakBytes).toBeGreaterThanOrEqual(tree.bridgeBytes);
    expect(tree.peakBytes).toBeLessThan(GiB);
    const mib = (bytes: number) => (bytes / 1024 ** 2).toFixed(0);
    console.log(`hostile corpus, round 2: ${jobs.length} files, bridge peak RSS ${mib(peakBytes)} MiB; bridge + function environments ${mib(tree.peakBytes)} MiB (${tree.samples} samples)`);
  });
});
