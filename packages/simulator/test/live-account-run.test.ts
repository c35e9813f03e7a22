/**
 * The done-when check of the live-shapes work (docs/simulator.md): a
 * simulator started from the command line as the live service with a
 * credit-billed account whose remainingArea is 0, no storage limit and slow
 * result downloads, and `local run --mapflow-url` against it taking a GeoJSON
 * and a GeoTIFF processed on its uploaded image to SUCCEEDED. The docs use a
 * 45 s result delay; this test uses 3 s (the client waits up to 300 s).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { testTmp } from '../../../test/support/temp.ts';
import { sharedLedgerArgs } from '../../../test/support/shared-dynamodb.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');
const TOKEN = 'live-run-token-4c1d';
const EMAIL = 'live@example.com';
const run = promisify(execFile);

describe('local run against a simulator started with --real-shapes (credit-billed, remainingArea 0, no storage limit, slow results)', () => {
  let sim: ChildProcess | undefined;
  afterAll(async () => {
    if (sim && sim.exitCode === null) {
      sim.kill('SIGTERM');
      await once(sim, 'exit');
    }
  });

  it('runs a GeoJSON and a GeoTIFF processed on its uploaded image to SUCCEEDED', { timeout: 240_000 }, async () => {
    // Prepare: the simulator as a user starts it
    sim = spawn(process.execPath, [
      CLI, 'sim', '--port', '0', '--token', TOKEN, '--email', EMAIL,
      '--real-shapes', '--billing-type', 'CREDITS', '--storage-limit', 'none', '--result-delay-seconds', '3',
      '--processing-seconds', '2', '--preprocessing-seconds', '2',
    ], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    sim.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [line] = (await once(sim.stdout!, 'data')) as [Buffer];
    const url = line.toString().trim().split('\n')[0]!;
    expect(url, stderr).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rest$/);
    const headers = { authorization: `Bearer ${TOKEN}` };
    const status = (await (await fetch(`${url}/user/status`, { headers })).json()) as Record<string, unknown>;
    const memory = (await (await fetch(`${url}/rasters/memory`, { headers })).json()) as Record<string, unknown>;
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-live-run-'));
    const routes = path.join(dir, 'routes.json');
    await writeFile(routes, JSON.stringify({ routes: [{ name: 'default', prefix: '', model: '🏠 Buildings', processImages: true, creditBudget: 1000 }] }));

    // Act
    let stdout = '';
    let runErr = '';
    let code = 0;
    try {
      ({ stdout, stderr: runErr } = await run(process.execPath, [
        CLI, 'local', 'run', '--json', ...(await sharedLedgerArgs('live-run')), '--out', path.join(dir, 'out'), '--routes', routes,
        '--mapflow-url', url, '--token', TOKEN, '--email', EMAIL,
        // A simulator given by URL is polled at the production pace (15 s first) unless told otherwise.
        '--poll-policy', '{"initialSeconds":1,"maxSeconds":3,"nearEndSeconds":1,"maxJobSeconds":3600}',
        path.join(ROOT, 'samples/aoi/bern-quarters.geojson'), path.join(ROOT, 'samples/rasters/cogeo.tif'),
      ], { cwd: ROOT, timeout: 200_000, maxBuffer: 20 * 1024 * 1024 }));
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      if (typeof failed.code !== 'number') throw error;
      ({ code, stdout = '', stderr: runErr = '' } = failed as { code: number; stdout?: string; stderr?: string });
    }

    // Assess: the account is the one the issue describes
    expect(status).toMatchObject({ billingType: 'CREDITS', remainingArea: 0 });
    expect(status.remainingCredits).toBeGreaterThan(0);
    expect(memory).toMatchObject({ memoryLimit: null, memoryFree: null });
    // Assess: both jobs SUCCEEDED, the GeoTIFF processed on its own image
    expect(code, `${runErr.slice(-3000)}\n${stdout.slice(-3000)}`).toBe(0);
    const jobs = (JSON.parse(stdout) as { jobs: Record<string, unknown>[] }).jobs;
    const byKind = Object.fromEntries(jobs.map((job) => [job.kind as string, job]));
    expect(byKind.geojson).toMatchObject({ status: 'SUCCEEDED' });
    expect(byKind.geotiff).toMatchObject({ status: 'SUCCEEDED' });
    expect(byKind.geotiff?.imageId).toBeTruthy();
    expect(byKind.geotiff?.processingId).toBeTruthy();
    expect((byKind.geotiff?.results as string[]).some((file) => file.endsWith('result.geojson'))).toBe(true);
  });
});
