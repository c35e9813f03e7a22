/**
 * Warm function environments: small GeoJSON jobs one after another through one
 * local bridge, with its environments bounded as before (four of any kind)
 * (a memory budget of 1,536 MiB: one decoding process of 1,024 MiB, or one
 * light step of 512 invoked beside the others warm) and as today (the default
 * budget, 4,096 MiB on a machine of 8 GB or more: functions.ts),
 * each run in a process of its own so that its CPU time is its own.
 * Prints the bridge process's CPU time per job after the first (threads
 * included; the decoding functions' child processes, the local S3 and
 * DynamoDB Local not), and the ratio of today's to the baseline.
 *
 *   npm run bench -- --warm-jobs 6          (default 4; 0 skips it)
 *   npx tsx packages/bench/warm-jobs.ts 6            (this section alone)
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultEnvironmentBudgetMb } from '@mapflow-bridge/local/assembly/functions';
import { startLocalBridge } from '@mapflow-bridge/local/bridge';
import { squareAoiText } from './fault-suite.ts';

const SELF = fileURLToPath(import.meta.url);
/** A tight memory budget, as the environments were bounded before they had weights: light steps evict each other. */
export const BASELINE_UNITS: Units = { totalMb: 1536, lightReserveMb: 512 };
const TODAY_UNITS: Units = { totalMb: defaultEnvironmentBudgetMb() };
type Units = { totalMb: number; lightReserveMb?: number };

interface WarmRun {
  units: Units;
  jobs: number;
  firstJobCpuMs: number;
  /** CPU per job after the first, ms. */
  cpuMsPerJob: number;
  wallMsPerJob: number;
  rssBytes: number;
}

/** One run, in this process: `jobs` jobs one after another through a fresh bridge. */
async function runInProcess(units: Units, jobs: number): Promise<WarmRun> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mfb-warm-jobs-'));
  const bridge = await startLocalBridge({
    simulator: { processingSeconds: 1, seed: 7 },
    dropFolder: false,
    reconcileIntervalMs: 0,
    log: () => undefined,
    environmentBudget: units,
  });
  try {
    let firstJobCpuMs = 0;
    let before = process.cpuUsage();
    let started = Date.now();
    for (let index = 0; index < jobs; index++) {
      const file = path.join(dir, `warm-${index}.geojson`);
      await writeFile(file, squareAoiText(`warm-${index}`, 7.44 + index * 0.01, 46.94, 0.005));
      const job = await bridge.putInbox(file, `warm-${index}.geojson`);
      await bridge.waitForJobs({ timeoutMs: 300_000 });
      const status = (await bridge.ledger.get(job.jobId))?.status;
      if (status !== 'SUCCEEDED') throw new Error(`warm-jobs: job ${index} ended ${status}`);
      if (index === 0) {
        const used = process.cpuUsage(before);
        firstJobCpuMs = (used.user + used.system) / 1000;
        before = process.cpuUsage();
        started = Date.now();
      }
    }
    const used = process.cpuUsage(before);
    const rest = Math.max(1, jobs - 1);
    return {
      units,
      jobs,
      firstJobCpuMs,
      cpuMsPerJob: (used.user + used.system) / 1000 / rest,
      wallMsPerJob: (Date.now() - started) / rest,
      rssBytes: process.memoryUsage.rss(),
    };
  } finally {
    await bridge.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** One run in a child process of its own. */
function runInChild(units: Units, jobs: number): Promise<WarmRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SELF, '--child', JSON.stringify(units), String(jobs)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code === 0 && line.startsWith('{')) resolve(JSON.parse(line) as WarmRun);
      else reject(new Error(`warm-jobs run (${JSON.stringify(units)}) exited ${code}: ${out.slice(-500)}`));
    });
  });
}

/** The section of npm run bench: baseline and today's budget, side by side. Returns an exit code. */
export async function benchWarmJobs(jobs: number): Promise<number> {
  console.log(`\nWarm function environments: ${jobs} small GeoJSON jobs one after another through one bridge`);
  const baseline = await runInChild(BASELINE_UNITS, jobs);
  const today = await runInChild(TODAY_UNITS, jobs);
  const mib = (bytes: number) => (bytes / 1024 ** 2).toFixed(0);
  for (const run of [baseline, today]) {
    console.log(
      `  ${String(run.units.totalMb).padStart(5)} MiB budget, light reserve ${run.units.lightReserveMb ?? run.units.totalMb / 2} MiB: first job ${(run.firstJobCpuMs / 1000).toFixed(2)} s CPU; ` +
        `then ${(run.cpuMsPerJob / 1000).toFixed(2)} s CPU and ${(run.wallMsPerJob / 1000).toFixed(1)} s wall per job; RSS ${mib(run.rssBytes)} MiB`,
    );
  }
  console.log(
    `  CPU per job ${(today.cpuMsPerJob / baseline.cpuMsPerJob).toFixed(2)}x the baseline's, wall ${(today.wallMsPerJob / baseline.wallMsPerJob).toFixed(2)}x, ` +
      `RSS ${(today.rssBytes / baseline.rssBytes).toFixed(2)}x`,
  );
  return 0;
}

if (process.argv[2] === '--child') {
  const run = await runInProcess(JSON.parse(process.argv[3]!) as Units, Number(process.argv[4]));
  process.stdout.write(`${JSON.stringify(run)}\n`);
  process.exit(0);
} else if (process.argv[1] === SELF) {
  process.exitCode = await benchWarmJobs(Number(process.argv[2] ?? 6));
}
