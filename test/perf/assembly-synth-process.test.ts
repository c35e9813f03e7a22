/**
 * The cloud assembly is synthesized in a process of its own (packages/local/src/assembly/synth-child.mjs):
 * a start that has to synthesize (the first run after a change of lib/ or the settings) never loads
 * aws-cdk-lib into the bridge's process, which then keeps its memory for the whole run (issue 38:
 * 690 MB on such a first run, against 283 MB on the next).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { definitionCacheDir } from '../../packages/local/src/assembly/local-definition-cache.ts';
import { testTmp } from '../support/temp.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface ProbeResult {
  cache: string;
  cdkLoaded: boolean;
  peakRssMb: number;
}

/** packages/bench/assembly-probe.ts in a fresh process, as `npm start` loads the assembly. */
function probe(cacheDir: string): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'packages/bench/assembly-probe.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MAPFLOW_BRIDGE_CACHE_DIR: cacheDir, MAPFLOW_BRIDGE_DEFINITION_CACHE: '' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err = (err + chunk.toString()).slice(-2000)));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}')) : reject(new Error(`assembly probe exited with ${code}: ${err}`))));
  });
}

describe('synthesis of the local cloud assembly', () => {
  it('runs in a child process: a start that synthesizes never loads aws-cdk-lib itself', async () => {
    // Prepare: an empty cache, so this start must synthesize (a miss); the handler bundles
    // the suite's setup built are lent to it, so it does not bundle them again.
    const cacheDir = await mkdtemp(path.join(testTmp(), 'assembly-synth-'));
    const shared = definitionCacheDir(process.env);
    const bundles = (await readdir(shared).catch(() => [] as string[])).filter((name) => name.startsWith('bundles-') && !name.startsWith('bundles-tmp-'));
    for (const name of bundles) await symlink(path.join(shared, name), path.join(cacheDir, name));
    // Act
    const result = await probe(cacheDir);
    // Assess
    expect(result.cache).toBe('miss');
    expect(result.cdkLoaded).toBe(false);
    // Printed, not asserted (memory is measured, not timed): the bridge's process high-water mark.
    console.log(`assembly synthesized in a child process; the loading process peaked at ${result.peakRssMb} MB`);
  }, 300_000);
});
