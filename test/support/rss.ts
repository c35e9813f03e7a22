/**
 * Resident memory of a bridge and of its function environments (issue 23):
 * the functions that decode untrusted bytes run in child processes
 * (packages/local/src/assembly/functions.ts), so the bridge's own peak (VmHWM) no longer
 * holds what they use. This samples, every `intervalMs`, the resident memory
 * of the bridge process plus that of each of its descendants running a
 * function environment (lambda-runtime.mjs), and keeps the largest sum. The
 * local services (DynamoDB Local's JVM, s3rver) are not counted, as they
 * never were. Linux only (/proc).
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

function residentKb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0; // it ended meanwhile
  }
}

/** Descendants of `root` whose command line runs a function environment. */
function environmentsOf(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // ended meanwhile
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, ppid] of parents) {
      if (ppid !== parent) continue;
      queue.push(child);
      try {
        if (readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('lambda-runtime.mjs')) found.push(child);
      } catch {
        // ended meanwhile
      }
    }
  }
  return found;
}

export interface TreeRssSampler {
  /** Stops sampling; the largest sum seen (bytes), its parts, and how many samples were taken. */
  stop(): { peakBytes: number; bridgeBytes: number; environmentBytes: number[]; samples: number };
}

export function sampleTreeRss(root: number, intervalMs = 50): TreeRssSampler {
  let peak = { peakBytes: 0, bridgeBytes: 0, environmentBytes: [] as number[] };
  let samples = 0;
  const sample = () => {
    const bridge = residentKb(root) * 1024;
    const environments = environmentsOf(root).map((pid) => residentKb(pid) * 1024);
    const total = bridge + environments.reduce((a, b) => a + b, 0);
    samples++;
    if (total > peak.peakBytes) peak = { peakBytes: total, bridgeBytes: bridge, environmentBytes: environments.sort((a, b) => b - a) };
  };
  const timer = setInterval(sample, intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      return { ...peak, samples };
    },
  };
}

export interface MeasuredRun {
  stdout: string;
  stderr: string;
  /** The bridge process's own peak (VmHWM, from the kernel as it exits), bytes. */
  peakBytes: number;
  /** The bridge with its function processes, sampled. */
  tree: ReturnType<TreeRssSampler['stop']>;
}

/**
 * Runs `node <args>` (a `mapflow-bridge local run`) as the hostile suites do:
 * its own peak RSS written by a probe as it exits, the tree of it and its
 * function processes sampled meanwhile; a non-zero exit still gives its output.
 */
export async function runLocalMeasured(args: string[], options: { cwd: string; base: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<MeasuredRun> {
  const probe = path.join(options.base, 'peak-rss.mjs');
  const peakFile = path.join(options.base, 'peak-rss.txt');
  await writeFile(
    probe,
    `import { readFileSync, writeFileSync } from 'node:fs';\n` +
      `process.on('exit', () => writeFileSync(${JSON.stringify(peakFile)}, /VmHWM:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))[1]));\n`,
  );
  const running = promisify(execFile)(process.execPath, ['--import', probe, ...args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    timeout: options.timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
  });
  const sampler = sampleTreeRss(running.child.pid!);
  const result = await running.catch((error: { code?: number; stdout?: string; stderr?: string }) => {
    if (typeof error.code !== 'number') throw error;
    return { stdout: error.stdout ?? '', stderr: error.stderr ?? '' };
  });
  const tree = sampler.stop();
  return { stdout: String(result.stdout), stderr: String(result.stderr), peakBytes: Number(readFileSync(peakFile, 'utf8')) * 1024, tree };
}
