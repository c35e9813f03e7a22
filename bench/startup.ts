/**
 * Fast start, measured side by side: the local bridge started in a fresh
 * process with the definition cache off (what every start cost before: CDK
 * synthesis, aws-cdk-lib import) and warm (lib/local-definition-cache.ts).
 * Figures: time to ready (what `npm start` waits for) and time until a
 * one-file job's first poll, both from process start; median of `runs`.
 *
 * Run it:  npx tsx bench/startup.ts [--runs 3]
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** As LocalBridge.startup (local/bridge.ts) prints it: ms since the probe's process started. */
interface StartupPhase {
  name: string;
  startMs: number;
  endMs: number;
}
interface StartupTimeline {
  entryMs: number;
  readyMs: number;
  definitionCache: 'hit' | 'miss' | 'off';
  phases: StartupPhase[];
}

/** One start of the whole bridge, from process start (bench/startup-probe.ts). */
export interface ProbeResult {
  readyMs: number;
  firstPollMs: number;
  startup: StartupTimeline & { cdkLoaded: boolean };
}

export interface StartupFigures {
  /** Loading the definition alone (process start to definition in hand): synthesis vs the disk cache. */
  definition: { coldMs: number; warmMs: number };
  /** The whole bridge (undefined with --definition-only). */
  cold?: ProbeResult;
  warm?: ProbeResult;
}

function definitionProbe(cache: 'off' | 'on'): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'bench/definition-probe.ts')], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...(cache === 'off' ? { MAPFLOW_BRIDGE_DEFINITION_CACHE: 'off' } : {}) },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve((JSON.parse(out.trim().split('\n').pop() ?? '{}') as { ms: number }).ms) : reject(new Error(`definition probe exited with ${code}`))));
  });
}

function probe(cache: 'off' | 'on'): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'bench/startup-probe.ts')], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...(cache === 'off' ? { MAPFLOW_BRIDGE_DEFINITION_CACHE: 'off' } : {}) },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`startup probe exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as ProbeResult);
    });
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

export async function measureStartup(runs = 3, options: { definitionOnly?: boolean } = {}): Promise<StartupFigures> {
  await definitionProbe('on'); // fills the cache (and warms the OS file cache for both sides)
  const coldDefinition: number[] = [];
  const warmDefinition: number[] = [];
  for (let i = 0; i < runs; i++) {
    coldDefinition.push(await definitionProbe('off'));
    warmDefinition.push(await definitionProbe('on'));
  }
  const definition = { coldMs: median(coldDefinition), warmMs: median(warmDefinition) };
  if (options.definitionOnly) return { definition };
  const cold: ProbeResult[] = [];
  const warm: ProbeResult[] = [];
  // Interleaved, so machine load drifts hit both sides alike.
  for (let i = 0; i < runs; i++) {
    cold.push(await probe('off'));
    // Warm means the cache holds this tree's key: fill it right before (sources edited meanwhile make a new key).
    await definitionProbe('on');
    warm.push(await probe('on'));
  }
  // The run of median time to first poll, with its own timeline.
  const summary = (xs: ProbeResult[]) => [...xs].sort((a, b) => a.firstPollMs - b.firstPollMs)[Math.floor(xs.length / 2)] as ProbeResult;
  return { definition, cold: summary(cold), warm: summary(warm) };
}

/**
 * The two starts' phases side by side (ms from process start; phases that
 * overlap ran in parallel), for the bench output and docs/local.md.
 */
export function formatTimelines(cold: ProbeResult, warm: ProbeResult): string[] {
  const lines = [`${'phase'.padEnd(48)}${'cold (no cache)'.padStart(20)}${'warm (cache)'.padStart(20)}`];
  const span = (p?: StartupPhase) => (p ? `${(p.startMs / 1000).toFixed(1)}-${(p.endMs / 1000).toFixed(1)} s` : '-');
  const key = (name: string) => name.replace(/ \(cache \w+\)$/, '');
  const names = [...new Set([...cold.startup.phases, ...warm.startup.phases].sort((a, b) => a.startMs - b.startMs).map((p) => key(p.name)))];
  lines.push(`${'modules loaded (process start to startLocalBridge)'.padEnd(48)}${span({ name: '', startMs: 0, endMs: cold.startup.entryMs }).padStart(20)}${span({ name: '', startMs: 0, endMs: warm.startup.entryMs }).padStart(20)}`);
  for (const name of names) {
    const find = (r: ProbeResult) => r.startup.phases.find((p) => key(p.name) === name);
    lines.push(`${name.padEnd(48)}${span(find(cold)).padStart(20)}${span(find(warm)).padStart(20)}`);
  }
  lines.push(`${'ready (startLocalBridge returned)'.padEnd(48)}${`${(cold.readyMs / 1000).toFixed(1)} s`.padStart(20)}${`${(warm.readyMs / 1000).toFixed(1)} s`.padStart(20)}`);
  lines.push(`${'first poll of the one-file job'.padEnd(48)}${`${(cold.firstPollMs / 1000).toFixed(1)} s`.padStart(20)}${`${(warm.firstPollMs / 1000).toFixed(1)} s`.padStart(20)}`);
  lines.push(`${'definition cache / aws-cdk-lib loaded'.padEnd(48)}${`${cold.startup.definitionCache} / ${cold.startup.cdkLoaded ? 'yes' : 'no'}`.padStart(20)}${`${warm.startup.definitionCache} / ${warm.startup.cdkLoaded ? 'yes' : 'no'}`.padStart(20)}`);
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] ?? 3) || 3;
  const figures = await measureStartup(runs, { definitionOnly: process.argv.includes('--definition-only') });
  if (figures.cold && figures.warm) process.stdout.write(`${formatTimelines(figures.cold, figures.warm).join('\n')}\n\n`);
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
