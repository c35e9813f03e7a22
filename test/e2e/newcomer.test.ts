/**
 * Issue 40: what a newcomer meets in local mode tells the deployed truth.
 * - the default budget is the deployed one (100 credits), shown by `start`
 *   and `local run`; --credit-budget changes it visibly;
 * - `local run --prefix buildings/` runs a GeoTIFF as if dropped under
 *   buildings/ (a detection, not only an upload);
 * - outputs `local run` cannot copy (another run's folder) are in the JSON
 *   and the exit status, never skipped silently;
 * - `start` exits 130 after Ctrl-C, as its --help says, and its banner points
 *   at a samples README that exists.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { jobIdFor } from '../../functions/routing/index.ts';
import { LOCAL_BUCKET, localAssemblySettings } from '../../packages/local/src/bridge.ts';
import { OUTPUT_MARKER } from '../../packages/cli/src/outputs.ts';
import type { RunBudget, RunJobSummary } from '../../packages/cli/src/run.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';
import { ROOT, SAMPLES, SAMPLES_AOI, SAMPLES_RASTERS } from './helpers.ts';

const run = promisify(execFile);
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

async function localRun(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'local', 'run', ...args], { cwd: ROOT, timeout: 270_000, maxBuffer: 20 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('the local budget is the deployed one', () => {
  it('sets no budget of its own on the routes, unless given one', () => {
    // Act
    const plain = localAssemblySettings({});
    const given = localAssemblySettings({ creditBudget: 1000 });

    // Assess: no routes override (the routes' default of 100 applies); a given budget on every route
    expect(plain.routes).toBeUndefined();
    expect(given.routes?.map((route) => route.creditBudget)).toEqual(given.routes?.map(() => 1000));
  });
});

describe('local run --prefix, budgets and outputs', () => {
  it('runs a GeoTIFF under buildings/ with Buildings, and rejects the 32 Bern quarters over the default budget', { timeout: 300_000 }, async () => {
    // Prepare
    const out = await mkdtemp(path.join(testTmp(), 'mfb-prefix-'));

    // Act
    const result = await localRun([
      '--json',
      '--processing-seconds',
      '1',
      ...(await sharedLedgerArgs('prefix')),
      '--out',
      out,
      '--prefix',
      'buildings/',
      path.join(SAMPLES_RASTERS, 'cogeo.tif'),
      path.join(SAMPLES_AOI, 'bern-quarters.geojson'),
    ]);

    // Assess: the GeoTIFF was processed (a processing, a result), the big AOI refused as deployed
    expect(result.code, result.stderr.slice(-3000)).toBe(1);
    const { jobs, budgets } = JSON.parse(result.stdout) as { jobs: RunJobSummary[]; budgets: RunBudget[] };
    const [tif, bern] = jobs;
    expect(tif).toMatchObject({ key: 'inbox/buildings/cogeo.tif', kind: 'geotiff', status: 'SUCCEEDED', outputsNotCopied: null });
    expect(tif?.processingId).toBeTruthy();
    expect(tif?.results.some((file) => file.endsWith('/result.geojson'))).toBe(true);
    expect(bern).toMatchObject({ key: 'inbox/buildings/bern-quarters.geojson', status: 'REJECTED', error: { code: 'BUDGET_EXCEEDED' } });
    expect(bern?.error?.message).toContain('above the budget of 100 credits');
    expect(budgets.find((budget) => budget.route === 'buildings')).toMatchObject({ prefix: 'buildings/', creditBudget: 100, areaBudgetSqKm: 100 });
    expect(result.stderr).toMatch(/budgets: default \(inbox\/\) 100 credits or 100 km²; buildings \(inbox\/buildings\/\) 100 credits/);
  });

  it("says in the JSON and the exit status that a job's outputs were not copied over another run's", { timeout: 300_000 }, async () => {
    // Prepare: the job's folder under --out holds another run's outputs, as npm start leaves them
    const out = await mkdtemp(path.join(testTmp(), 'mfb-conflict-'));
    const file = path.join(SAMPLES, 'bern-three-quarters.geojson');
    const etag = createHash('md5').update(await readFile(file)).digest('hex');
    const jobId = jobIdFor({ bucket: LOCAL_BUCKET, key: 'inbox/bern-three-quarters.geojson', etag });
    const folder = path.join(out, jobId);
    await mkdir(folder, { recursive: true });
    await writeFile(path.join(folder, OUTPUT_MARKER), JSON.stringify({ jobId, createdAt: '2026-01-01T00:00:00.000Z', persistent: true }));

    // Act
    const result = await localRun(['--json', '--processing-seconds', '1', ...(await sharedLedgerArgs('conflict')), '--out', out, file]);

    // Assess: SUCCEEDED, yet exit 1 and the reason with the folder
    expect(result.code, result.stderr.slice(-3000)).toBe(1);
    const [job] = (JSON.parse(result.stdout) as { jobs: RunJobSummary[] }).jobs;
    expect(job).toMatchObject({ jobId, status: 'SUCCEEDED', results: [], outputsNotCopied: { folder } });
    expect(job?.outputsNotCopied?.reason).toContain('holds the outputs of another run');
  });
});

describe('start, stopped with Ctrl-C', () => {
  it('shows the budgets and an existing samples README, and exits 130 as its --help says', { timeout: 300_000 }, async () => {
    // Prepare
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-start-'));
    const child = spawn(
      process.execPath,
      [CLI, 'start', '--state-dir', stateDir, '--out', path.join(stateDir, 'out'), '--s3-port', '0', '--no-console', ...(await sharedLedgerArgs('start'))],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const check = () => (output.includes('Waiting for files') ? resolve() : undefined);
      child.stdout.on('data', check);
      void exited.then(() => reject(new Error(`start exited early:\n${output}`)));
    });

    // Act
    child.kill('SIGINT');
    const code = await exited;

    // Assess
    expect(code, output).toBe(130);
    const { stdout: help } = await run(process.execPath, [CLI, 'start', '--help'], { cwd: ROOT });
    expect(help).toMatch(/Exit status: 130 after Ctrl-C/);
    expect(output).toMatch(/budgets +default \(inbox\/\) 100 credits or 100 km²/);
    const readme = /dropped the bundled samples \(see ([^)]+)\)/.exec(output)?.[1];
    expect(readme && existsSync(path.resolve(ROOT, readme)), output).toBe(true);
  });
});
