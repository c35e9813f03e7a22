/**
 * The local definition's disk cache: a second load with the same sources and
 * options is a hit and gives the very definition synthesis gives; other
 * options are another key; `off` bypasses it.
 */
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { definitionKey, loadLocalDefinition } from '../../lib/local-definition-cache.ts';

describe('local definition cache', () => {
  it('synthesizes once, then reads the same definition from disk; other options make another key', async () => {
    // Prepare
    const dir = await mkdtemp(path.join(tmpdir(), 'definition-cache-'));
    const env = { MAPFLOW_BRIDGE_CACHE_DIR: dir };
    const options = { maxConcurrentProcessings: 3 };
    // The key of these sources, pinned: others may edit lib/ or functions/ while the test runs.
    const key = await definitionKey(options);
    const pinned = async () => key;
    // Act
    const first = await loadLocalDefinition(options, env, pinned);
    const second = await loadLocalDefinition(options, env, pinned);
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
  }, 300_000);
});
