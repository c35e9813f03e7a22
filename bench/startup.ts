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

export interface StartupFigures {
  /** Loading the definition alone (process start to definition in hand): synthesis vs the disk cache. */
  definition: { coldMs: number; warmMs: number };
  /** The whole bridge (undefined with --definition-only). */
  cold?: { readyMs: number; firstPollMs: number };
  warm?: { readyMs: number; firstPollMs: number };
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

function probe(cache: 'off' | 'on'): Promise<{ readyMs: number; firstPollMs: number }> {
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
      resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as { readyMs: number; firstPollMs: number });
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
  const cold: { readyMs: number; firstPollMs: number }[] = [];
  const warm: { readyMs: number; firstPollMs: number }[] = [];
  // Interleaved, so machine load drifts hit both sides alike.
  for (let i = 0; i < runs; i++) {
    cold.push(await probe('off'));
    warm.push(await probe('on'));
  }
  const summary = (xs: typeof cold) => ({ readyMs: median(xs.map((x) => x.readyMs)), firstPollMs: median(xs.map((x) => x.firstPollMs)) });
  return { definition, cold: summary(cold), warm: summary(warm) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] ?? 3) || 3;
  process.stdout.write(`${JSON.stringify(await measureStartup(runs, { definitionOnly: process.argv.includes('--definition-only') }), null, 2)}\n`);
}
