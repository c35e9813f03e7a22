/**
 * Memory by process through local mode (issue 38, point 2): the round-3
 * hostile corpus (packages/bench/fixtures/hostile-round3.ts, with a
 * 99,999-vertex circle) through `mapflow-bridge local run --json`, against a
 * baseline of the same run: the README's one-file sample, run twice (the
 * first run of a build also synthesizes the cloud assembly, in a child
 * process of the bridge (synth-child.mjs), cached for the next: it is shown,
 * the second is the baseline). For each run: the
 * bridge's own process's peak (its VmHWM, the kernel's high-water mark), the
 * whole process tree's peak (the sum of every descendant's resident memory,
 * sampled every 50 ms: a sample, so a lower bound), and the largest other
 * process of the tree (by its own VmHWM: a function's process, the
 * simulator's decoder, s3rver, DynamoDB Local's JVM).
 *
 *   npx tsx packages/bench/memory.ts      # the three runs, a table; exit 1 if the bridge's process reaches 512 MB on the corpus
 *
 * Linux only (it reads /proc); elsewhere it says so and skips.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HOSTILE_ROUND3_ENTRIES, writeRound3Corpus } from './fixtures/hostile-round3.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');
const BASELINE = join(ROOT, 'packages/local/samples/bern-three-quarters.geojson');
const MB = 1024 * 1024;
/** The bound the issue sets on the bridge's own process. */
export const BRIDGE_PROCESS_LIMIT_BYTES = 512 * MB;
const SAMPLE_MS = 50;

export interface MemoryRun {
  files: number;
  wallMs: number;
  /** The bridge's own process: VmHWM. */
  bridgePeakBytes: number;
  /** Sum of the tree's VmRSS, largest sample. */
  treePeakBytes: number;
  /** Largest VmHWM of another process of the tree, and what it is. */
  largestOther: { bytes: number; what: string };
  /** Largest VmHWM of the simulator's decoding processes (0: none ran). */
  decoderPeakBytes: number;
  /** Processes seen in the tree (the bridge's included). */
  processes: number;
  outcomes: string[];
}

function status(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
}

const field = (text: string | undefined, name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(text ?? '')?.[1] ?? 0) * 1024;

/** Every descendant of `root` (not root itself), from /proc's parent links. */
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const pid = frontier.pop()!;
    for (const [child, parent] of parents) {
      if (parent === pid) {
        out.push(child);
        frontier.push(child);
      }
    }
  }
  return out;
}

function describeProcess(pid: number): string {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const script = args.find((a) => /\.(m?js|ts|jar)$/.test(a)) ?? args[0] ?? '?';
    return script.split('/').slice(-2).join('/');
  } catch {
    return '?';
  }
}

/** One `local run --json` over `files`, its tree watched until it exits. */
export async function measureRun(files: string[], workDir: string): Promise<MemoryRun> {
  const out = mkdtempSync(join(workDir, 'out-'));
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'local', 'run', '--json', '--processing-seconds', '1', '--credit-budget', '100000', '--out', out, ...files], {
    cwd: workDir,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const pid = child.pid!;
  let bridgePeakBytes = 0;
  let treePeakBytes = 0;
  const others = new Map<number, { bytes: number; what: string }>();
  const sample = () => {
    const own = status(pid);
    if (own) bridgePeakBytes = Math.max(bridgePeakBytes, field(own, 'VmHWM'));
    let tree = field(own, 'VmRSS');
    for (const p of descendants(pid)) {
      const text = status(p);
      if (!text) continue;
      tree += field(text, 'VmRSS');
      const seen = others.get(p) ?? { bytes: 0, what: describeProcess(p) };
      seen.bytes = Math.max(seen.bytes, field(text, 'VmHWM'));
      others.set(p, seen);
    }
    treePeakBytes = Math.max(treePeakBytes, tree);
  };
  const timer = setInterval(sample, SAMPLE_MS);
  const code = await new Promise<number>((resolve) => child.once('exit', (exitCode) => resolve(exitCode ?? 1)));
  clearInterval(timer);
  let outcomes: string[] = [];
  try {
    const document = JSON.parse(stdout) as { jobs: { file: string; status: string; error: { code: string } | null }[] };
    outcomes = document.jobs.map((job) => `${job.file.split('/').pop()}: ${job.status}${job.error ? ` ${job.error.code}` : ''}`);
  } catch {
    outcomes = [`exit ${code}, no JSON document`];
  }
  const largestOther = [...others.values()].reduce((a, b) => (b.bytes > a.bytes ? b : a), { bytes: 0, what: '-' });
  const decoderPeakBytes = Math.max(0, ...[...others.values()].filter((p) => p.what.includes('decoder-child')).map((p) => p.bytes));
  return { files: files.length, wallMs: performance.now() - started, bridgePeakBytes, treePeakBytes, largestOther, decoderPeakBytes, processes: others.size + 1, outcomes };
}

/** A closed ring of `n` vertices on a circle of `radius` degrees around Bern, as a Polygon GeoJSON. */
export function circleGeoJson(n: number, radius = 0.01): string {
  const ring = Array.from({ length: n }, (_, i) => [+(7.44 + radius * Math.cos((2 * Math.PI * i) / n)).toFixed(8), +(46.94 + radius * Math.sin((2 * Math.PI * i) / n)).toFixed(8)]);
  return JSON.stringify({ type: 'Polygon', coordinates: [[...ring, ring[0]]] });
}

/** Both runs and the table; 1 when the bridge's own process reached BRIDGE_PROCESS_LIMIT_BYTES. */
export async function runMemoryBench(log: (line: string) => void = console.log): Promise<number> {
  if (!existsSync('/proc/self/status')) {
    log('\nmemory by process: skipped (no /proc on this system)');
    return 0;
  }
  const work = mkdtempSync(join(tmpdir(), 'mfb-bench-memory-'));
  try {
    const corpus = join(work, 'corpus');
    writeRound3Corpus(corpus);
    const circle = join(corpus, 'circle-99999.geojson');
    writeFileSync(circle, circleGeoJson(99_999));
    const hostile = [...HOSTILE_ROUND3_ENTRIES.map((entry) => join(corpus, entry.file)), circle];
    log(`\nmemory by process: local run --json, the baseline (${BASELINE.split('/').pop()}) and the round-3 corpus (${hostile.length} files), one after the other`);
    // The first run of a build synthesizes the cloud assembly in the bridge's process (cached for the next runs):
    // shown, but the baseline is the second, warm run.
    const first = await measureRun([BASELINE], work);
    const baseline = await measureRun([BASELINE], work);
    const corpusRun = await measureRun(hostile, work);
    const row = (name: string, r: MemoryRun) =>
      `  ${name.padEnd(9)} ${String(r.files).padStart(5)} ${(r.bridgePeakBytes / MB).toFixed(0).padStart(12)} ${(r.treePeakBytes / MB).toFixed(0).padStart(10)} ${`${(r.largestOther.bytes / MB).toFixed(0)} (${r.largestOther.what})`.padStart(44)} ${(r.decoderPeakBytes / MB).toFixed(0).padStart(10)} ${String(r.processes).padStart(9)} ${(r.wallMs / 1000).toFixed(1).padStart(7)}`;
    log(`  ${'run'.padEnd(9)} ${'files'.padStart(5)} ${'bridge MB'.padStart(12)} ${'tree MB'.padStart(10)} ${'largest other process MB'.padStart(44)} ${'decoder MB'.padStart(10)} ${'processes'.padStart(9)} ${'wall s'.padStart(7)}`);
    log(row('first', first));
    log(row('baseline', baseline));
    log(row('corpus', corpusRun));
    log(
      `  corpus / baseline: bridge ${(corpusRun.bridgePeakBytes / baseline.bridgePeakBytes).toFixed(2)}x, tree ${(corpusRun.treePeakBytes / baseline.treePeakBytes).toFixed(2)}x; ` +
        `the bridge's own process ${corpusRun.bridgePeakBytes < BRIDGE_PROCESS_LIMIT_BYTES ? 'stays under' : 'REACHES'} ${BRIDGE_PROCESS_LIMIT_BYTES / MB} MB`,
    );
    for (const outcome of corpusRun.outcomes) log(`    ${outcome}`);
    if (first.bridgePeakBytes >= BRIDGE_PROCESS_LIMIT_BYTES) log(`  the first run's bridge process reached ${(first.bridgePeakBytes / MB).toFixed(0)} MB: a synthesis of the assembly (not the input's decoding)`);
    return corpusRun.bridgePeakBytes < BRIDGE_PROCESS_LIMIT_BYTES ? 0 : 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = await runMemoryBench();
}
