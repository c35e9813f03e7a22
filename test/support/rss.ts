/**
 * Resident memory of a bridge and of its function environments (issue 23):
 * the functions that decode untrusted bytes run in child processes
 * (local/assembly/functions.ts), so the bridge's own peak (VmHWM) no longer
 * holds what they use. This samples, every `intervalMs`, the resident memory
 * of the bridge process plus that of each of its descendants running a
 * function environment (lambda-runtime.mjs), and keeps the largest sum. The
 * local services (DynamoDB Local's JVM, s3rver) are not counted, as they
 * never were. Linux only (/proc).
 */
import { readdirSync, readFileSync } from 'node:fs';

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
