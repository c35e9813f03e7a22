/**
 * `local run --timeout`: a job still running or waiting when the timeout runs
 * out is UNFINISHED with its last status and the real time waited, not FAILED
 * "Timed out after 0 s"; files are dropped side by side.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LedgerRow } from '../../../functions/core/model.ts';
import { runLocalCommand, summarise, type RunJobSummary } from '../src/run.ts';
import { testTmp } from '../../../test/support/temp.ts';
import { sharedLedgerArgs } from '../../../test/support/shared-dynamodb.ts';

const square = (x: number) =>
  JSON.stringify({
    type: 'FeatureCollection',
    features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[x, 46.9], [x + 0.01, 46.9], [x + 0.01, 46.91], [x, 46.91], [x, 46.9]]] } }],
  });

describe('local run --timeout', () => {
  it('summarises a job still waiting as UNFINISHED with its last status and the time waited', () => {
    // Prepare
    const row = { jobId: 'j-1', status: 'QUEUED', statusHistory: [], input: { bucket: 'b', key: 'inbox/a.geojson', etag: 'e', size: 1 } } as unknown as LedgerRow;
    // Act
    const waiting = summarise('/x/a.geojson', 'j-1', 'geojson', row, { results: [] }, undefined, { waitedSeconds: 41.6 });
    const notStarted = summarise('/x/b.geojson', 'j-2', 'geojson', undefined, { results: [] }, undefined, { waitedSeconds: 12 });
    // Assess
    expect(waiting).toMatchObject({ status: 'UNFINISHED', lastStatus: 'QUEUED', waitedSeconds: 42, error: { code: 'NOT_FINISHED' } });
    expect(waiting.error?.message).toContain('Still QUEUED after 42 s');
    expect(notStarted).toMatchObject({ status: 'UNFINISHED', lastStatus: null, waitedSeconds: 12 });
    expect(notStarted.error?.message).not.toContain('0 s');
  });

  it('reports jobs cut off by the timeout as UNFINISHED with the real time waited, every one of them', async () => {
    // Prepare: three files, processings of 60 s, a timeout of 8 s
    const dir = await mkdtemp(path.join(testTmp(), 'run-timeout-'));
    const files = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const file = path.join(dir, `t${i}.geojson`);
        await writeFile(file, square(7.4 + i * 0.001));
        return file;
      }),
    );
    const out: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string) => {
      out.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    let code: number;
    try {
      // Act
      code = await runLocalCommand(['run', '--json', '--timeout', '8', '--processing-seconds', '60', ...(await sharedLedgerArgs('run-timeout')), '--out', path.join(dir, 'out'), ...files]);
    } finally {
      process.stdout.write = write;
    }
    // Assess
    const { jobs } = JSON.parse(out.join('')) as { jobs: RunJobSummary[] };
    expect(code).toBe(1);
    expect(jobs).toHaveLength(3);
    for (const job of jobs) {
      expect(job.status).toBe('UNFINISHED');
      expect(job.waitedSeconds).toBeGreaterThanOrEqual(8);
      expect(job.error?.message).not.toMatch(/after 0 s/);
    }
    // Whether a job got as far as a ledger row within 8 s depends on the machine's speed: the first test holds lastStatus.
  }, 240_000);
});
