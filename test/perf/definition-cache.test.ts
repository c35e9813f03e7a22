/**
 * The local definition's disk cache: a second load with the same sources and
 * options is a hit and gives the very definition synthesis gives; other
 * options are another key; `off` bypasses it. A warm start (a fresh process,
 * as `npm start`) never loads aws-cdk-lib.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { definitionKey, loadLocalDefinition } from '../../packages/local/src/assembly/local-definition-cache.ts';
import { LOCAL_POLL_POLICY } from '../../packages/local/src/bridge.ts';
import { testTmp } from '../support/temp.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** packages/bench/definition-probe.ts in a fresh process: the definition as `npm start` loads it. */
function probe(cacheDir: string): Promise<{ cache: string; cdkLoaded: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'packages/bench/definition-probe.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, MAPFLOW_BRIDGE_CACHE_DIR: cacheDir, MAPFLOW_BRIDGE_DEFINITION_CACHE: '' },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}')) : reject(new Error(`definition probe exited with ${code}`))));
  });
}

describe('local definition cache', () => {
  it('synthesizes once, then reads the same definition from disk; other options make another key', async () => {
    // Prepare
    const dir = await mkdtemp(path.join(testTmp(), 'definition-cache-'));
    const env = { MAPFLOW_BRIDGE_CACHE_DIR: dir };
    const options = { maxConcurrentProcessings: 3 };
    // The key of these sources, pinned: others may edit lib/ or functions/ while the test runs.
    const key = await definitionKey(options);
    const pinned = async () => key;
    // The check of a synthesized definition runs before it is stored, never on a hit.
    const checked: { cachedAlready: boolean }[] = [];
    const check = () => {
      checked.push({ cachedAlready: existsSync(path.join(dir, `definition-${key}.json`)) });
    };
    // Act
    const first = await loadLocalDefinition(options, env, pinned, check);
    const second = await loadLocalDefinition(options, env, pinned, check);
    const bypassed = await loadLocalDefinition(options, { ...env, MAPFLOW_BRIDGE_DEFINITION_CACHE: 'off' }, pinned);
    const otherKey = await definitionKey({ maxConcurrentProcessings: 4 });
    // Assess
    expect(first.cache).toBe('miss');
    expect(second.cache).toBe('hit');
    expect(bypassed.cache).toBe('off');
    expect(second.definition).toEqual(first.definition);
    expect(bypassed.definition).toEqual(first.definition);
    expect(second.taskStates).toEqual(first.taskStates);
    expect(second.key).toBe(first.key);
    expect(otherKey).not.toBe(first.key);
    expect(await readdir(dir)).toEqual([`definition-${first.key}.json`]);
    expect(checked).toEqual([{ cachedAlready: false }]);
  }, 300_000);

  it('a warm start reads the cached definition in a fresh process without loading aws-cdk-lib', async () => {
    // Prepare: a cache entry under the key of this tree's sources (a stand-in definition:
    // what is checked is what the start imports). Sources edited meanwhile by someone
    // else make a new key, so a miss is tried again with the new key.
    const dir = await mkdtemp(path.join(testTmp(), 'definition-cache-warm-'));
    await mkdir(dir, { recursive: true });
    let result: { cache: string; cdkLoaded: boolean } | undefined;
    for (let attempt = 0; attempt < 3 && result?.cache !== 'hit'; attempt++) {
      const key = await definitionKey({ pollPolicy: LOCAL_POLL_POLICY });
      await writeFile(path.join(dir, `definition-${key}.json`), JSON.stringify({ definition: { StartAt: 'Done', States: { Done: { Type: 'Succeed' } } }, taskStates: [] }));
      // Act
      result = await probe(dir);
    }
    // Assess
    expect(result).toMatchObject({ cache: 'hit', cdkLoaded: false });
  }, 300_000);
});
