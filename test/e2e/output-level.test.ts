/**
 * Point 4 of issue 24: the output folder is brought level with the ledger on
 * start, so a job that ended just before a kill -9 (its final event written,
 * its copy not yet made) still gets its results copied; idempotently.
 */
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { levelOutputFolder } from '../../packages/cli/src/output-level.ts';
import { outputPath } from '../../packages/cli/src/outputs.ts';
import { listKeys, readText, squareAoi, startTestBridge } from './helpers.ts';
import { testTmp } from '../support/temp.ts';

let bridge: LocalBridge | undefined;
const dirs: string[] = [];
afterAll(async () => {
  await bridge?.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('output folder level with the ledger', () => {
  it('copies every final job\'s outputs the folder lacks or holds cut short, and nothing on a second run', { timeout: 180_000 }, async () => {
    // Prepare: a SUCCEEDED and a REJECTED job, never copied (no bridge followed their events)
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-level-'));
    dirs.push(dir);
    const outDir = path.join(dir, 'out');
    bridge = await startTestBridge();
    await writeFile(path.join(dir, 'area.geojson'), squareAoi());
    await writeFile(path.join(dir, 'notes.txt'), 'not an input');
    const good = await bridge.putInbox(path.join(dir, 'area.geojson'), 'area.geojson');
    const bad = await bridge.putInbox(path.join(dir, 'notes.txt'), 'notes.txt');
    const succeeded = await bridge.waitForJob(good.jobId);
    const rejected = await bridge.waitForJob(bad.jobId);
    expect([succeeded?.status, rejected?.status]).toEqual(['SUCCEEDED', 'REJECTED']);
    const resultKeys = await listKeys(bridge.s3, bridge.bucket, succeeded!.resultPrefix!);
    const resultFiles = resultKeys.map((key) => outputPath(outDir, succeeded!.jobId, key));
    const reportFile = outputPath(outDir, rejected!.jobId, rejected!.reportKey!);

    // Act 1: the first start after the kill
    const first = await levelOutputFolder(bridge, outDir);
    // Act 2: one copy cut short, another deleted; then a start again, and once more
    await truncate(resultFiles[0]!, 3);
    await rm(reportFile);
    const second = await levelOutputFolder(bridge, outDir);
    const third = await levelOutputFolder(bridge, outDir);

    // Assess
    expect(resultKeys.length).toBeGreaterThanOrEqual(2); // result.geojson, job.json, ...
    expect(first.copied.map((c) => c.row.jobId).sort()).toEqual([good.jobId, bad.jobId].sort());
    expect(first.failed).toEqual([]);
    for (const [i, key] of resultKeys.entries()) expect(await readFile(resultFiles[i]!, 'utf8')).toBe(await readText(bridge.s3, bridge.bucket, key));
    expect(second.copied.flatMap((c) => c.files).sort()).toEqual([resultFiles[0]!, reportFile].sort());
    expect((await stat(reportFile)).size).toBeGreaterThan(0);
    expect(third.copied).toEqual([]);
    expect(third.checked).toBeGreaterThanOrEqual(2);
  });
});
