/**
 * `npm run bench`: speed and memory of the bridge's data paths, each printed as
 * a ratio against a naive baseline measured in the same run on the same file.
 *
 *   upload:   streamed multipart upload vs reading the whole file first
 *   inspect:  GeoTIFF header through ranged reads vs downloading the whole file
 * and then the fault suite (bench/fault-suite.ts): jobs through the local
 * bridge against a faulty simulator, with duplicates and lost jobs counted.
 *
 * Options: --size-mb <n> (synthetic GeoTIFF size, default 256), --keep (keep temp files),
 *          --fault-jobs <n> (default 40; 0 skips the fault suite), --seed <n> (default 42).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MapflowClient } from '../functions/mapflow/index.ts';
import { runFaultSuite } from './fault-suite.ts';
import { runGoalsBench } from './goals.ts';
import { runHostileBench } from './hostile.ts';
import { writeSyntheticGeoTiff } from './synthetic-geotiff.ts';

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

const BENCH_USAGE = `Usage: mapflow-bridge bench [options]     (npm run bench -- [options])

Speed and memory of the data paths against a naive baseline measured in the same run,
then the fault suite (duplicates and lost jobs under injected faults).

Options:
  --size-mb <n>      size of the synthetic GeoTIFF (default 256)
  --fault-jobs <n>   jobs in the fault suite (default 40; 0 skips it)
  --seed <n>         seed of the fault suite (default 42)
  --jobs <n>         jobs of the admission run (default 100; issue 12: 200, and 2000)
  --processing-seconds <n>  simulated processing time of those jobs (default 2; issue 12: 5)
  --slots <n>        concurrency slots of the admission run (default 5)
  --full-start       also start the whole bridge cold and warm (slow), not only the definition
  --goals-only       only the goals table of issue 12 (admission, bundles, start, polling, capacity)
  --skip-goals       the data paths and the fault suite only
  --keep             keep the temporary files`;
const MB = 1024 * 1024;

interface ScenarioResult {
  ms: number;
  cpuMs?: number;
  /** The OS's high-water mark of the scenario process (VmHWM). */
  osPeakRssBytes?: number;
  peakRssBytes: number;
  startRssBytes: number;
  bytes?: number;
  bytesRead?: number;
  fileBytes?: number;
}

function runScenario(name: string, args: Record<string, unknown>): Promise<ScenarioResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'bench/scenario.ts'), name, JSON.stringify(args)], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`scenario ${name} exited with ${code}`));
      const last = out.trim().split('\n').pop() ?? '';
      resolve(JSON.parse(last) as ScenarioResult);
    });
  });
}

const mb = (bytes: number) => (bytes / MB).toFixed(1);
const growth = (r: ScenarioResult) => Math.max(r.peakRssBytes - r.startRssBytes, 1);

export async function runBenchCommand(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'size-mb': { type: 'string', default: '256' },
        keep: { type: 'boolean', default: false },
        'fault-jobs': { type: 'string', default: '40' },
        seed: { type: 'string', default: '42' },
        // Issue 12's goals (bench/goals.ts).
        jobs: { type: 'string', default: '100' },
        'processing-seconds': { type: 'string', default: '2' },
        slots: { type: 'string', default: '5' },
        'full-start': { type: 'boolean', default: false },
        'goals-only': { type: 'boolean', default: false },
        'skip-goals': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (error) {
    console.error(`bench: ${(error as Error).message}\n\n${BENCH_USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(BENCH_USAGE);
    return 0;
  }
  const sizeMb = Number(values['size-mb']);
  const faultJobs = Number(values['fault-jobs']);
  const seed = Number(values.seed);
  if (!Number.isFinite(sizeMb) || sizeMb < 1) {
    console.error('bench: --size-mb takes a number of MiB >= 1');
    return 2;
  }
  if (!Number.isInteger(faultJobs) || faultJobs < 0 || !Number.isInteger(seed)) {
    console.error('bench: --fault-jobs and --seed take whole numbers (--fault-jobs 0 skips the fault suite)');
    return 2;
  }
  const goals = {
    jobs: Number(values.jobs),
    processingSeconds: Number(values['processing-seconds']),
    slots: Number(values.slots),
    fullStart: values['full-start'] ?? false,
    log: (line: string) => console.log(line),
  };
  if (!Number.isInteger(goals.jobs) || goals.jobs < 1 || !(goals.processingSeconds > 0) || !Number.isInteger(goals.slots) || goals.slots < 1) {
    console.error('bench: --jobs and --slots take whole numbers >= 1, --processing-seconds a positive number');
    return 2;
  }
  if (values['goals-only']) return runGoalsBench(goals);
  const dataPaths = await benchDataPaths(sizeMb, values.keep);
  if (dataPaths !== 0) return dataPaths;
  // Issue 11: the input checks' largest accepted inputs and worst hostile ones within their Lambdas' budgets.
  const inputChecks = await runHostileBench();
  if (inputChecks !== 0) return inputChecks;
  const faults = faultJobs === 0 ? 0 : await benchFaultSuite(faultJobs, seed);
  const goalsOutcome = values['skip-goals'] ? 0 : await runGoalsBench(goals);
  return faults !== 0 ? faults : goalsOutcome;
}

/** Jobs through the local bridge with 20 % of requests failing and 10 % of create answers lost. */
async function benchFaultSuite(jobs: number, seed: number): Promise<number> {
  console.log(`\nfault suite: ${jobs} jobs, 20 % of requests failing (5xx, 429, resets), 10 % of create answers lost, seed ${seed}`);
  const f = await runFaultSuite({ jobs, faultRate: 0.2, dropAfterCommit: 0.1, seed });
  const states = Object.entries(f.finalStates).map(([status, n]) => `${n} ${status}`).join(', ');
  console.log(`  final states           ${states}`);
  console.log(`  processings created    ${f.processingsCreated} (listed in Mapflow: ${f.processingsListed})`);
  console.log(`  duplicate processings  ${f.duplicateProcessings} (must be 0); duplicate images ${f.duplicateImages}, projects ${f.duplicateProjects}`);
  console.log(`  lost jobs              ${f.lostJobs} (must be 0); final events missing ${f.eventsMissing}`);
  console.log(`  orphaned empty mosaics ${f.orphanedEmptyMosaics} (a lost mosaic create; the API cannot list mosaics)`);
  console.log(`  requests ${f.requests}, faults injected ${f.faultsInjected}, responses dropped ${f.responsesDropped}, ${(f.elapsedMs / 1000).toFixed(0)} s`);
  return f.duplicateProcessings === 0 && f.lostJobs === 0 ? 0 : 1;
}

async function benchDataPaths(sizeMb: number, keep: boolean | undefined): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'mapflow-bench-'));
  const token = 'bench-token';
  const email = 'bench@example.com';
  // The receiver (the simulator) runs in a process of its own: its work never counts in the measured client.
  const sim = await startReceiver(join(dir, 'sim'), token, email);
  try {
    // A square-ish RGB image of the requested size.
    const side = Math.floor(Math.sqrt((sizeMb * MB) / 3));
    const file = join(dir, 'synthetic.tif');
    const bytes = await writeSyntheticGeoTiff(file, { width: side, height: side });
    console.log(`synthetic GeoTIFF: ${side}x${side} RGB uint8, ${mb(bytes)} MiB (node ${process.version})\n`);

    const mosaic = await new MapflowClient({ baseUrl: sim.url, token, email }).createMosaic({ name: 'bench' });
    const common = { file, url: sim.url, token, email, mosaicId: mosaic.id };

    const uploadBase = await runScenario('upload-buffered', common);
    const uploadRaw = await runScenario('upload-raw-pipe', common);
    const uploadStream = await runScenario('upload-streamed', common);
    const inspectBase = await runScenario('inspect-whole', common);
    const inspectRanged = await runScenario('inspect-ranged', common);

    const rows = [
      ['upload, raw node:http pipe (physical limit)', uploadRaw, bytes],
      ['upload, whole file in memory (baseline)', uploadBase, bytes],
      ['upload, streamed (bridge)', uploadStream, bytes],
      ['inspect, whole file read (baseline)', inspectBase, inspectBase.bytesRead ?? bytes],
      ['inspect, ranged reads (bridge)', inspectRanged, inspectRanged.bytesRead ?? 0],
    ] as const;
    console.log('scenario'.padEnd(46) + 'time ms'.padStart(9) + 'CPU ms'.padStart(9) + 'OS peak RSS MiB'.padStart(17) + 'RSS growth MiB'.padStart(16) + 'bytes read MiB'.padStart(16));
    for (const [label, r, read] of rows) {
      console.log(
        label.padEnd(46) + r.ms.toFixed(0).padStart(9) + (r.cpuMs?.toFixed(0) ?? '-').padStart(9) + (r.osPeakRssBytes ? mb(r.osPeakRssBytes) : '-').padStart(17) + mb(growth(r)).padStart(16) + mb(read).padStart(16),
      );
    }
    console.log('\nupload against the physical limit (same bytes, same receiver, raw node:http pipe):');
    console.log(`  wall time  ${(uploadStream.ms / uploadRaw.ms).toFixed(2)}x   (goal <= 1.1)`);
    console.log(`  CPU time   ${((uploadStream.cpuMs ?? 0) / Math.max(1, uploadRaw.cpuMs ?? 0)).toFixed(2)}x   (goal <= 3)`);
    console.log(`  OS peak RSS ${uploadStream.osPeakRssBytes ? mb(uploadStream.osPeakRssBytes) : '-'} MiB   (goal <= 256 MiB at 1 GiB: npm run bench -- --size-mb 1024 --fault-jobs 0)`);
    console.log('  (the bridge streams from a local file here, not from the local S3 as on AWS: see README, Benchmarks)');
    console.log('\nratios (bridge / baseline, lower is better):');
    console.log(`  upload memory growth  ${(growth(uploadStream) / growth(uploadBase)).toFixed(3)}`);
    console.log(`  upload time           ${(uploadStream.ms / uploadBase.ms).toFixed(3)}`);
    console.log(`  inspect bytes read    ${((inspectRanged.bytesRead ?? 0) / (inspectBase.bytesRead ?? bytes)).toExponential(2)}`);
    console.log(`  inspect time          ${(inspectRanged.ms / inspectBase.ms).toFixed(3)}`);
    console.log(`  inspect memory growth ${(growth(inspectRanged) / growth(inspectBase)).toFixed(3)}`);
    return 0;
  } finally {
    await sim.close();
    if (!keep) await rm(dir, { recursive: true, force: true });
  }
}

/** bench/receiver.ts in its own process; `close` ends it. */
async function startReceiver(dataDir: string, token: string, email: string): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'bench/receiver.ts'), dataDir, token, email], {
    cwd: PROJECT_ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the bench receiver exited with ${code}`)));
  });
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.stdin.end();
        setTimeout(() => child.kill(), 5_000).unref();
      }),
  };
}
