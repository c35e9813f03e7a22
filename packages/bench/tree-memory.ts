/**
 * The tree's memory against its computed bound (issue 38): GeoJSON and
 * GeoTIFF jobs at once through one local bridge on the default memory budget
 * (packages/local/src/assembly/functions.ts), the resident memory of the
 * bridge's process and of each of its function processes read from /proc
 * every 50 ms. Prints, for the functions' environments, what the budget
 * accounted at its highest (each its MemorySize while invoked, its idle bound
 * while warm) and what was measured, and the ratio of measured to accounted
 * (below 1: the bound held); the services (DynamoDB Local, s3rver) apart, as
 * the budget does not count them. Linux only (/proc).
 *
 *   npm run bench -- --tree-jobs 8          (default 6; 0 skips it)
 *   npx tsx packages/bench/tree-memory.ts 8          (this section alone)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLocalBridge } from '@mapflow-bridge/local/bridge';
import { squareAoiText } from './fault-suite.ts';

const SAMPLE_TIFF = fileURLToPath(import.meta.resolve('@mapflow-bridge/local/samples/cogeo.tif'));
const MiB = 1024 ** 2;

/** pid -> [parent pid, resident bytes, command line], for every process /proc shows. */
function processTable(): Map<number, { ppid: number; rss: number; command: string }> {
  const table = new Map<number, { ppid: number; rss: number; command: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const ppid = Number(/PPid:\s+(\d+)/.exec(status)?.[1]);
      const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      table.set(Number(entry), { ppid, rss, command });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

/** This process, its function processes (lambda-runtime.mjs) and every other descendant (the services), resident bytes each. */
function treeNow(): { bridge: number; functions: number; services: number } {
  const table = processTable();
  const descendants = new Set<number>([process.pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, info] of table) {
      if (!descendants.has(pid) && descendants.has(info.ppid)) {
        descendants.add(pid);
        grew = true;
      }
    }
  }
  const sums = { bridge: table.get(process.pid)?.rss ?? 0, functions: 0, services: 0 };
  for (const pid of descendants) {
    if (pid === process.pid) continue;
    const info = table.get(pid) as { rss: number; command: string };
    if (info.command.includes('lambda-runtime.mjs')) sums.functions += info.rss;
    else sums.services += info.rss;
  }
  return sums;
}

export interface TreeMemory {
  budgetMb: number;
  accountedPeakMb: number;
  accountedProcessesPeakMb: number;
  bridgeStartMb: number;
  bridgePeakMb: number;
  functionProcessesPeakMb: number;
  servicesPeakMb: number;
  treePeakMb: number;
}

/** `jobs` jobs (every third a GeoTIFF) dropped at once through a fresh bridge on the default budget. */
export async function measureTreeMemory(jobs: number): Promise<TreeMemory> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mfb-tree-memory-'));
  const bridge = await startLocalBridge({ simulator: { processingSeconds: 1, seed: 7 }, dropFolder: false, reconcileIntervalMs: 0, log: () => undefined });
  const peak = { bridge: 0, functions: 0, services: 0, tree: 0 };
  const sample = () => {
    const now = treeNow();
    peak.bridge = Math.max(peak.bridge, now.bridge);
    peak.functions = Math.max(peak.functions, now.functions);
    peak.services = Math.max(peak.services, now.services);
    peak.tree = Math.max(peak.tree, now.bridge + now.functions + now.services);
  };
  const bridgeStart = treeNow().bridge;
  const timer = setInterval(sample, 50);
  try {
    const files = [];
    for (let index = 0; index < jobs; index++) {
      if (index % 3 === 2) files.push({ file: SAMPLE_TIFF, key: `buildings/tree-${index}.tif` });
      else {
        const file = path.join(dir, `tree-${index}.geojson`);
        await writeFile(file, squareAoiText(`tree-${index}`, 7.44 + index * 0.01, 46.94, 0.005));
        files.push({ file, key: `tree-${index}.geojson` });
      }
    }
    const started = await Promise.all(files.map(({ file, key }) => bridge.putInbox(file, key)));
    await bridge.waitForJobs({ timeoutMs: 600_000 });
    for (const { jobId } of started) {
      const status = (await bridge.ledger.get(jobId))?.status;
      if (status !== 'SUCCEEDED') throw new Error(`tree-memory: job ${jobId} ended ${status}`);
    }
    sample();
    const budget = [...bridge.assembly.functions.values()][0]?.memoryBudget;
    return {
      budgetMb: budget?.max ?? 0,
      accountedPeakMb: budget?.peak ?? 0,
      accountedProcessesPeakMb: budget?.peakByProcesses ?? 0,
      bridgeStartMb: bridgeStart / MiB,
      bridgePeakMb: peak.bridge / MiB,
      functionProcessesPeakMb: peak.functions / MiB,
      servicesPeakMb: peak.services / MiB,
      treePeakMb: peak.tree / MiB,
    };
  } finally {
    clearInterval(timer);
    await bridge.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The bench's section: prints the figures and the ratio; 0, or 1 when the function processes passed what the budget accounted. */
export async function benchTreeMemory(jobs: number): Promise<number> {
  if (process.platform !== 'linux') {
    console.log('\ntree memory: skipped (it reads /proc)');
    return 0;
  }
  console.log(`\ntree memory (issue 38): ${jobs} jobs at once (every third a GeoTIFF) through one bridge on the default memory budget`);
  const m = await measureTreeMemory(jobs);
  const mb = (value: number) => `${value.toFixed(0)} MiB`;
  console.log(`  budget ${mb(m.budgetMb)}; accounted at most ${mb(m.accountedPeakMb)} (processes ${mb(m.accountedProcessesPeakMb)})`);
  console.log(`  measured: function processes ${mb(m.functionProcessesPeakMb)} (${(m.functionProcessesPeakMb / Math.max(1, m.accountedProcessesPeakMb)).toFixed(2)}x what the budget accounted for them)`);
  console.log(`  bridge process ${mb(m.bridgeStartMb)} at start, ${mb(m.bridgePeakMb)} at most (its threads' heaps inside); services ${mb(m.servicesPeakMb)}; whole tree ${mb(m.treePeakMb)}`);
  console.log(`  the computed bound: bridge at start + budget + services = ${mb(m.bridgeStartMb + m.budgetMb + m.servicesPeakMb)}; measured/bound ${(m.treePeakMb / (m.bridgeStartMb + m.budgetMb + m.servicesPeakMb)).toFixed(2)}x`);
  return m.functionProcessesPeakMb <= Math.max(m.accountedProcessesPeakMb, 1) ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  process.exitCode = await benchTreeMemory(Number(process.argv[2] ?? 6));
}
