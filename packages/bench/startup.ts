/**
 * Fast start, measured side by side: the local bridge started in a fresh
 * process with the assembly cache off (CDK synthesis with bundling, aws-cdk-lib
 * import) and warm (packages/local/src/assembly/cache.ts), and, with `before`, the bridge of
 * an older commit (default STARTUP_BEFORE_REF, the tree the issue's "today's
 * times" were measured on), checked out beside the project with its
 * node_modules and started by the same probe, in turns with the warm start.
 * Figures: time to ready (what `npm start` waits for) and time until a
 * one-file job's first poll, both from process start; median of `runs`.
 *
 * Run it:  npx tsx packages/bench/startup.ts [--runs 3] [--before [<git ref>]]
 */
import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The commit before the fast-start work of issue 12 (goal 3): "today's times" of the issue. */
export const STARTUP_BEFORE_REF = '560f652';

/** As LocalBridge.startup (packages/local/src/bridge.ts) prints it: ms since the probe's process started. */
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

/** One start of the whole bridge, from process start (packages/bench/startup-probe.ts). */
export interface ProbeResult {
  readyMs: number;
  firstPollMs: number;
  startup: StartupTimeline & { cdkLoaded: boolean };
}

export interface StartupFigures {
  /** Loading the cloud assembly alone (process start to assembly in hand): synthesis and bundling vs the disk cache. */
  definition: { coldMs: number; warmMs: number };
  /** The whole bridge (undefined with --definition-only). */
  cold?: ProbeResult;
  warm?: ProbeResult;
  /** The older commit's bridge (with `before`), started in turns with the warm one. */
  before?: ProbeResult & { ref: string };
}

function definitionProbe(cache: 'off' | 'on'): Promise<number> {
  return new Promise((resolve, reject) => {
    // The cloud assembly (template and bundles) the bridge runs: what a cold start synthesizes.
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'packages/bench/assembly-probe.ts')], {
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

function probe(cache: 'off' | 'on', root = PROJECT_ROOT, env: NodeJS.ProcessEnv = {}): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'packages/bench/startup-probe.ts')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env, ...(cache === 'off' ? { MAPFLOW_BRIDGE_DEFINITION_CACHE: 'off' } : {}) },
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

/**
 * The bridge of `ref` (git archive of the whole tree) in a temporary folder,
 * with this project's node_modules (the dependencies did not change since
 * STARTUP_BEFORE_REF) and today's probe. Its own temporary files (older code
 * left some behind) go to a folder inside, removed with it.
 */
async function checkoutBefore(ref: string): Promise<{ root: string; env: NodeJS.ProcessEnv; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mfb-startup-before-'));
  const root = path.join(dir, 'tree');
  const tmp = path.join(dir, 'tmp');
  await mkdir(root, { recursive: true });
  await mkdir(tmp, { recursive: true });
  const archive = path.join(dir, 'tree.tar');
  await promisify(execFile)('git', ['archive', '--output', archive, ref], { cwd: PROJECT_ROOT });
  await promisify(execFile)('tar', ['-xf', archive, '-C', root]);
  await rm(archive);
  await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(root, 'node_modules'), 'dir');
  await mkdir(path.join(root, 'packages', 'bench'), { recursive: true });
  await copyFile(path.join(PROJECT_ROOT, 'packages', 'bench', 'startup-probe.ts'), path.join(root, 'packages', 'bench', 'startup-probe.ts'));
  return {
    root,
    env: { TMPDIR: tmp, JAVA_TOOL_OPTIONS: `-Djava.io.tmpdir=${tmp}` },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

export async function measureStartup(runs = 3, options: { definitionOnly?: boolean; before?: string } = {}): Promise<StartupFigures> {
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
  const before: ProbeResult[] = [];
  const older = options.before ? await checkoutBefore(options.before) : undefined;
  try {
    // Interleaved, so machine load drifts hit every side alike.
    for (let i = 0; i < runs; i++) {
      cold.push(await probe('off'));
      // Warm means the cache holds this tree's key: fill it right before (sources edited meanwhile make a new key).
      await definitionProbe('on');
      warm.push(await probe('on'));
      if (older) before.push(await probe('on', older.root, older.env));
    }
  } finally {
    await older?.remove();
  }
  // The run of median time to first poll, with its own timeline.
  const summary = (xs: ProbeResult[]) => [...xs].sort((a, b) => a.firstPollMs - b.firstPollMs)[Math.floor(xs.length / 2)] as ProbeResult;
  return {
    definition,
    cold: summary(cold),
    warm: summary(warm),
    ...(options.before && before.length > 0 ? { before: { ...summary(before), ref: options.before } } : {}),
  };
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
  const beforeAt = process.argv.indexOf('--before');
  const beforeArg = beforeAt > 0 ? process.argv[beforeAt + 1] : undefined;
  const before = beforeAt > 0 ? (beforeArg && !beforeArg.startsWith('--') ? beforeArg : STARTUP_BEFORE_REF) : undefined;
  const figures = await measureStartup(runs, { definitionOnly: process.argv.includes('--definition-only'), before });
  if (figures.cold && figures.warm) process.stdout.write(`${formatTimelines(figures.cold, figures.warm).join('\n')}\n\n`);
  if (figures.before && figures.warm) {
    const b = figures.before;
    process.stdout.write(
      `before (${b.ref}): ready ${(b.readyMs / 1000).toFixed(1)} s, first poll ${(b.firstPollMs / 1000).toFixed(1)} s; ` +
        `warm today: ${(figures.warm.readyMs / b.readyMs).toFixed(2)}x and ${(figures.warm.firstPollMs / b.firstPollMs).toFixed(2)}x\n\n`,
    );
  }
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
