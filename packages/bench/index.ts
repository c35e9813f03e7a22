/**
 * `npm run bench`: speed and memory of the bridge's data paths, each printed as
 * a ratio against a naive baseline measured in the same run on the same file.
 *
 *   upload:   the Upload Image step streaming the GeoTIFF from the local S3
 *             (s3rver, own process) into the receiver (own process), against
 *             the physical limit (a raw node:http GET piped into a POST of the
 *             same bytes to the same receiver) and against reading it whole first
 *   inspect:  GeoTIFF header through ranged reads vs downloading the whole file
 *   memory:   the round-3 hostile corpus through `local run`, the bridge's own
 *             process and the whole tree against a one-file run (memory.ts)
 * and then the fault suite (packages/bench/fault-suite.ts): jobs through the local
 * bridge against a faulty simulator, with duplicates and lost jobs counted.
 *
 * Options: see BENCH_USAGE below.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Upload } from '@aws-sdk/lib-storage';
import { MapflowClient } from 'mapflow-bridge/functions/mapflow/index.ts';
import { localS3Client } from '@mapflow-bridge/local/s3/client';
import { startLocalS3 } from '@mapflow-bridge/local/s3/server';
import { runFaultSuite } from './fault-suite.ts';
import { runChaos } from './chaos.ts';
import { runGoalsBench, type UploadGoal } from './goals.ts';
import { runHostileBench } from './hostile.ts';
import { runMemoryBench } from './memory.ts';
import { pairedRatio, type PairedRatio } from './paired.ts';
import { benchWarmJobs } from './warm-jobs.ts';
import { benchTreeMemory } from './tree-memory.ts';
import { syntheticGeoTiffStream, writeSyntheticGeoTiff } from './fixtures/synthetic-geotiff.ts';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

const BENCH_USAGE = `Usage: npm run bench -- [options]     (from the repository root)

Speed and memory of the data paths against a naive baseline measured in the same run,
then the fault suite (duplicates and lost jobs under injected faults).

Options:
  --size-mb <n>      size of the synthetic GeoTIFF (default 256)
  --upload-runs <n>  runs of the raw pipe and of the bridge's upload, alternating; the median
                     of each is shown (default 3, 1 from 512 MiB up)
  --fault-jobs <n>   jobs in the fault suite (default 40; 0 skips it)
  --chaos-jobs <n>   jobs of the chaos run, killed -9 7 times, and of the same run without kills (default 24; 0 skips it)
  --warm-jobs <n>    small jobs through one bridge, its function environments bounded as before (four of
                     any kind) and as today (weighted units), side by side (default 4; 0 skips it)
  --tree-jobs <n>    jobs at once (every third a GeoTIFF) through one bridge on the default memory budget:
                     the tree's measured peak against what the budget accounted (default 6; 0 skips it)
  --seed <n>         seed of the fault suite (default 42)
  --jobs <n>         jobs of the admission run (default 200; with 2000, a run of 200 goes
                     first and the throughput ratio is printed)
  --processing-seconds <n>  simulated processing time of those jobs (default 5)
  --slots <n>        concurrency slots of the admission run (default 5)
  --quick-start      the start-up time on the definition alone (synthesized vs cached), not whole bridge starts
  --full-start       whole bridge starts, cold and warm, side by side (the default; kept for old scripts)
  --goals-only       only the goals table (admission, bundles, start, polling, capacity)
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
    const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'packages/bench/scenario.ts'), name, JSON.stringify(args)], {
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
        'upload-runs': { type: 'string' },
        keep: { type: 'boolean', default: false },
        'fault-jobs': { type: 'string', default: '40' },
        'chaos-jobs': { type: 'string', default: '24' },
        'warm-jobs': { type: 'string', default: '4' },
        'tree-jobs': { type: 'string', default: '6' },
        seed: { type: 'string', default: '42' },
        // Issue 12's goals (packages/bench/goals.ts).
        jobs: { type: 'string', default: '200' },
        'processing-seconds': { type: 'string', default: '5' },
        slots: { type: 'string', default: '5' },
        'full-start': { type: 'boolean', default: false },
        'quick-start': { type: 'boolean', default: false },
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
  const uploadRuns = values['upload-runs'] === undefined ? (sizeMb >= 512 ? 1 : 3) : Number(values['upload-runs']);
  if (!Number.isInteger(uploadRuns) || uploadRuns < 1) {
    console.error('bench: --upload-runs takes a whole number >= 1');
    return 2;
  }
  const warmJobs = Number(values['warm-jobs']);
  if (!Number.isInteger(warmJobs) || warmJobs < 0 || warmJobs === 1) {
    console.error('bench: --warm-jobs takes a whole number >= 2 (0 skips it)');
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
    fullStart: !values['quick-start'],
    log: (line: string) => console.log(line),
  };
  if (!Number.isInteger(goals.jobs) || goals.jobs < 1 || !(goals.processingSeconds > 0) || !Number.isInteger(goals.slots) || goals.slots < 1) {
    console.error('bench: --jobs and --slots take whole numbers >= 1, --processing-seconds a positive number');
    return 2;
  }
  if (values['goals-only']) return runGoalsBench(goals);
  const dataPaths = await benchDataPaths(sizeMb, values.keep, uploadRuns);
  if (dataPaths !== 0) return dataPaths;
  // Issue 11: the input checks' largest accepted inputs and worst hostile ones within their Lambdas' budgets.
  const inputChecks = await runHostileBench();
  if (inputChecks !== 0) return inputChecks;
  // Issue 38: the round-3 corpus through local mode, memory by process against a one-file run.
  const memory = await runMemoryBench((line) => console.log(line));
  if (memory !== 0) return memory;
  // Warm function environments from job to job: today's weighted budget against the old one.
  const warm = warmJobs === 0 ? 0 : await benchWarmJobs(warmJobs);
  if (warm !== 0) return warm;
  // Issue 38: the tree's memory against the sum the budget computes.
  const treeJobs = Number(values['tree-jobs']);
  const tree = !Number.isInteger(treeJobs) || treeJobs <= 0 ? 0 : await benchTreeMemory(treeJobs);
  if (tree !== 0) return tree;
  const faults = faultJobs === 0 ? 0 : await benchFaultSuite(faultJobs, seed);
  // Issue 24: the same jobs with the bridge killed -9 at seeded instants, against the same run without kills.
  const chaos = values['chaos-jobs'] === '0' ? 0 : await benchChaos(Number(values['chaos-jobs']), seed);
  const goalsOutcome = values['skip-goals'] ? 0 : await runGoalsBench({ ...goals, ...(lastUpload ? { upload: lastUpload } : {}) });
  return faults !== 0 ? faults : chaos !== 0 ? chaos : goalsOutcome;
}

/** `npm start` killed -9 (process group) 7 times at seeded instants vs. the same run without kills: outcome and wall time. */
async function benchChaos(jobs: number, seed: number): Promise<number> {
  console.log(`\nchaos: ${jobs} jobs through npm start, 20 % faults, 10 % lost creates, every 4th processing failing once; killed -9 7 times vs. not at all, seed ${seed}`);
  const calm = await runChaos({ jobs, kills: 0, seed });
  const chaos = await runChaos({ jobs, kills: 7, seed, log: (line) => console.log(`  ${line}`) });
  const broken = (f: typeof chaos) =>
    f.inputsWithoutExactlyOneJob.length + f.unfinishedJobs.length + f.duplicateProcessings + f.missingInS3.length + f.missingInOutputFolder.length + f.finalEventProblems.length;
  for (const [name, f] of [['without kills', calm], ['with kills', chaos]] as const) {
    const states = Object.entries(f.finalStates).map(([status, n]) => `${n} ${status}`).join(', ');
    console.log(
      `  ${name.padEnd(14)} ${states}; ${f.starts} starts, ${f.kills} kills; processings ${f.processings}, duplicates ${f.duplicateProcessings}; ` +
        `restarted once ${f.restartedJobs}; problems ${broken(f)}; wall ${(f.wallMs / 1000).toFixed(1)} s`,
    );
  }
  console.log(`  wall time with kills / without: ${(chaos.wallMs / calm.wallMs).toFixed(2)}x`);
  return broken(calm) + broken(chaos) === 0 ? 0 : 1;
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

/**
 * Disk the data paths fill, bytes: the synthetic file, its copy in the local
 * S3, and every upload kept by the receiver (two per run, the buffered one
 * and a margin for the multipart framing).
 */
export function dataPathDiskBytes(sizeMb: number, uploadRuns: number): number {
  return sizeMb * MB * (2 * uploadRuns + 4);
}

export async function benchDataPaths(sizeMb: number, keep: boolean | undefined, uploadRuns: number): Promise<number> {
  // Refuse up front rather than fail after minutes: the receiver keeps every upload.
  const needed = dataPathDiskBytes(sizeMb, uploadRuns);
  const disk = await statfs(tmpdir());
  const free = disk.bavail * disk.bsize;
  if (needed > free) {
    console.error(
      `bench: ${uploadRuns} upload runs of ${sizeMb} MiB need about ${(needed / 1024 ** 3).toFixed(1)} GiB under ${tmpdir()}, ` +
        `which has ${(free / 1024 ** 3).toFixed(1)} GiB free: use fewer --upload-runs, a smaller --size-mb, or TMPDIR on a larger disk.`,
    );
    return 2;
  }
  const dir = await mkdtemp(join(tmpdir(), 'mapflow-bench-'));
  const token = 'bench-token';
  const email = 'bench@example.com';
  // The receiver (the simulator) and the local S3 (s3rver) run in processes of their own:
  // their work never counts in the measured client. Its storage limit fits every upload of the run.
  const sim = await startReceiver(join(dir, 'sim'), token, email, needed);
  const s3rver = await startLocalS3({ directory: join(dir, 's3'), buckets: [BENCH_BUCKET] }).catch(async (error: unknown) => {
    await sim.close();
    throw error;
  });
  try {
    // A square-ish RGB image of the requested size.
    const side = Math.floor(Math.sqrt((sizeMb * MB) / 3));
    const spec = { width: side, height: side };
    const file = join(dir, 'synthetic.tif');
    const bytes = await writeSyntheticGeoTiff(file, spec);
    // The upload reads the image from the local S3, as on AWS: put it there first (streamed, never whole in memory).
    const key = 'inbox/bench/synthetic.tif';
    await new Upload({ client: localS3Client(s3rver.endpoint, s3rver.credentials), params: { Bucket: BENCH_BUCKET, Key: key, Body: syntheticGeoTiffStream(spec) } }).done();
    console.log(`synthetic GeoTIFF: ${side}x${side} RGB uint8, ${mb(bytes)} MiB, in the local S3 at s3://${BENCH_BUCKET}/${key} (node ${process.version})\n`);

    const mapflow = new MapflowClient({ baseUrl: sim.url, token, email });
    const s3 = { endpoint: s3rver.endpoint, credentials: s3rver.credentials, bucket: BENCH_BUCKET, key, size: bytes };
    // A fresh mosaic per upload: the step reuses an image of the same name and size already in its mosaic.
    const withMosaic = async () => ({ file, url: sim.url, token, email, s3, mosaicId: (await mapflow.createMosaic({ name: 'bench' })).id });
    const common = await withMosaic();

    // The raw pipe and the bridge alternate, so a change of machine load hits both; the median of each is kept.
    const raws: ScenarioResult[] = [];
    const steps: ScenarioResult[] = [];
    for (let i = 0; i < uploadRuns; i++) {
      raws.push(await runScenario('upload-s3-raw-pipe', await withMosaic()));
      steps.push(await runScenario('upload-s3-step', await withMosaic()));
    }
    const uploadRaw = medianBy(raws, (r) => r.ms);
    const uploadStream = medianBy(steps, (r) => r.ms);
    const uploadBase = await runScenario('upload-s3-buffered', await withMosaic());
    const inspectBase = await runScenario('inspect-whole', common);
    const inspectRanged = await runScenario('inspect-ranged', common);

    const rows = [
      ['upload from S3, raw node:http pipe (limit)', uploadRaw, bytes],
      ['upload from S3, whole object in memory', uploadBase, bytes],
      ['upload from S3, Upload Image step (bridge)', uploadStream, bytes],
      ['inspect, whole file read (baseline)', inspectBase, inspectBase.bytesRead ?? bytes],
      ['inspect, ranged reads (bridge)', inspectRanged, inspectRanged.bytesRead ?? 0],
    ] as const;
    console.log('scenario'.padEnd(46) + 'time ms'.padStart(9) + 'CPU ms'.padStart(9) + 'OS peak RSS MiB'.padStart(17) + 'RSS growth MiB'.padStart(16) + 'bytes read MiB'.padStart(16));
    for (const [label, r, read] of rows) {
      console.log(
        label.padEnd(46) + r.ms.toFixed(0).padStart(9) + (r.cpuMs?.toFixed(0) ?? '-').padStart(9) + (r.osPeakRssBytes ? mb(r.osPeakRssBytes) : '-').padStart(17) + mb(growth(r)).padStart(16) + mb(read).padStart(16),
      );
    }
    if (uploadRuns > 1) {
      const list = (xs: ScenarioResult[]) => xs.map((r) => `${r.ms.toFixed(0)} ms / ${r.cpuMs?.toFixed(0) ?? '-'} ms CPU`).join(', ');
      console.log(`  (median of ${uploadRuns} alternating runs; raw pipe ${list(raws)}; bridge ${list(steps)})`);
      // Each bridge run against the raw run just before it: how far the receiver's own spread reaches.
      const pairs = steps.map((step, i) => step.ms / (raws[i]?.ms ?? Number.NaN)).sort((a, b) => a - b);
      console.log(`  (wall time per alternating pair, bridge / raw: median ${(pairs[Math.floor(pairs.length / 2)] ?? Number.NaN).toFixed(2)}, range ${pairs[0]?.toFixed(2)}-${pairs.at(-1)?.toFixed(2)})`);
    }
    const gib = bytes / (1024 * MB);
    const wallPairs = pairedRatio(steps.map((step, i) => step.ms / (raws[i]?.ms ?? Number.NaN)), UPLOAD_WALL_LIMIT);
    const upload = uploadFigures(uploadStream, uploadRaw, bytes, wallPairs);
    console.log('\nupload from the local S3 against the physical limit (same object, same receiver, raw node:http GET piped into a POST):');
    console.log(`  wall time  ${upload.wallRatio.toFixed(2)}x   (goal <= ${UPLOAD_WALL_LIMIT}; ratio of the medians)`);
    if (wallPairs.pairs >= 2) {
      console.log(
        `  wall time over ${wallPairs.pairs} pairs: geometric mean ${wallPairs.ratio.toFixed(3)}x, 95 % interval ${wallPairs.low.toFixed(3)}-${wallPairs.high.toFixed(3)}: ` +
          (wallPairs.verdict === 'undecided' ? `within the noise of ${wallPairs.pairs} pairs (more --upload-runs narrow it)` : `goal ${wallPairs.verdict}`),
      );
    }
    console.log(`  CPU time   ${upload.cpuRatio.toFixed(2)}x   (goal <= 3); ${((uploadStream.cpuMs ?? 0) / 1000 / gib).toFixed(2)} s/GiB against ${((uploadRaw.cpuMs ?? 0) / 1000 / gib).toFixed(2)} s/GiB`);
    console.log(`  OS peak RSS ${uploadStream.osPeakRssBytes ? mb(uploadStream.osPeakRssBytes) : '-'} MiB   (goal <= 256 MiB at 1 GiB: npm run bench -- --size-mb 1024 --fault-jobs 0)`);
    lastUpload = upload;
    console.log('\nratios (bridge / baseline, lower is better):');
    console.log(`  upload memory growth  ${(growth(uploadStream) / growth(uploadBase)).toFixed(3)}`);
    console.log(`  upload time           ${(uploadStream.ms / uploadBase.ms).toFixed(3)}`);
    console.log(`  inspect bytes read    ${((inspectRanged.bytesRead ?? 0) / (inspectBase.bytesRead ?? bytes)).toExponential(2)}`);
    console.log(`  inspect time          ${(inspectRanged.ms / inspectBase.ms).toFixed(3)}`);
    console.log(`  inspect memory growth ${(growth(inspectRanged) / growth(inspectBase)).toFixed(3)}`);
    return 0;
  } finally {
    await s3rver.close();
    await sim.close();
    if (!keep) await rm(dir, { recursive: true, force: true });
  }
}

const BENCH_BUCKET = 'mapflow-bench';

function medianBy<T>(values: T[], by: (value: T) => number): T {
  return [...values].sort((a, b) => by(a) - by(b))[Math.floor(values.length / 2)] as T;
}

/** Goal 4 of issue 12, from the last data-path run (for the goals table). */
let lastUpload: UploadGoal | undefined;

/** Goal 4: the bridge's wall time at most this times the raw pipe's. */
const UPLOAD_WALL_LIMIT = 1.1;

function uploadFigures(bridge: ScenarioResult, raw: ScenarioResult, bytes: number, wallPairs: PairedRatio): UploadGoal {
  return {
    bytes,
    wallPairs,
    bridgeMs: bridge.ms,
    rawMs: raw.ms,
    bridgeCpuMs: bridge.cpuMs ?? 0,
    rawCpuMs: raw.cpuMs ?? 0,
    wallRatio: bridge.ms / raw.ms,
    cpuRatio: (bridge.cpuMs ?? 0) / Math.max(1, raw.cpuMs ?? 0),
    ...(bridge.osPeakRssBytes !== undefined ? { osPeakRssBytes: bridge.osPeakRssBytes } : {}),
  };
}

/** packages/bench/receiver.ts in its own process; `close` ends it. */
async function startReceiver(dataDir: string, token: string, email: string, storageBytes: number): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'packages/bench/receiver.ts'), dataDir, token, email, String(storageBytes)], {
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
