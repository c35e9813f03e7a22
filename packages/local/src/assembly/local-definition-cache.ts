/**
 * The local state machine definition, cached on disk.
 *
 * Synthesizing the CDK app costs seconds on every `npm start` / `local run`
 * (importing aws-cdk-lib alone is about 3 s here). The definition only
 * changes when what it is built from changes, so it is kept in
 * `node_modules/.cache/mapflow-bridge/` under a key that hashes:
 *   - every source file the synthesis can read (lib/, functions/, *.ts),
 *   - the installed aws-cdk-lib version,
 *   - the options (poll policy, slots).
 * A warm start reads one JSON file and never imports aws-cdk-lib; any edit to
 * the construct, the catalogue or a default makes a new key (a cold start).
 *
 * MAPFLOW_BRIDGE_DEFINITION_CACHE=off bypasses the cache (the bench measures
 * both); MAPFLOW_BRIDGE_CACHE_DIR moves it.
 */
import { createHash, type Hash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { LocalDefinition, LocalDefinitionOptions } from './local-definition.ts';

/** The construct package's folder, whose lib/ and functions/ make the definition. */
const PROJECT_ROOT = path.dirname(createRequire(import.meta.url).resolve('mapflow-bridge/package.json'));
/** Folders whose .ts files the synthesis may read (the construct imports from functions/ for validation). */
const SOURCE_DIRS = ['lib', 'functions'];

export interface CachedDefinition extends LocalDefinition {
  /** 'hit': read from disk; 'miss': synthesized now (and stored). */
  cache: 'hit' | 'miss' | 'off';
  key: string;
}

export function definitionCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.MAPFLOW_BRIDGE_CACHE_DIR ?? path.join(PROJECT_ROOT, 'node_modules', '.cache', 'mapflow-bridge');
}

/** The definition for these options: from the disk cache when its sources are unchanged, else synthesized and stored. */
export async function loadLocalDefinition(
  options: LocalDefinitionOptions = {},
  env: NodeJS.ProcessEnv = process.env,
  /** How the key is made (tests pin it: the sources may change under a running test). */
  keyOf: (options: LocalDefinitionOptions) => Promise<string> = definitionKey,
  /**
   * Checks a freshly synthesized definition before it is cached or returned
   * (the local bridge: the engine's ASL check); a hit was checked when stored,
   * so a warm start skips it. Throwing stores nothing.
   */
  check?: (definition: Record<string, unknown>) => void,
): Promise<CachedDefinition> {
  const key = await keyOf(options);
  const off = env.MAPFLOW_BRIDGE_DEFINITION_CACHE === 'off';
  const file = path.join(definitionCacheDir(env), `definition-${key}.json`);
  if (!off) {
    const cached = await readFile(file, 'utf8').then(
      (text) => JSON.parse(text) as LocalDefinition,
      () => undefined,
    );
    if (cached && typeof cached.definition === 'object' && Array.isArray(cached.taskStates)) return { ...cached, cache: 'hit', key };
  }
  // Only a miss pays for aws-cdk-lib.
  const { synthLocalDefinition } = await import('./local-definition.ts');
  const synthesized = synthLocalDefinition(options);
  check?.(synthesized.definition);
  if (!off) await store(file, synthesized).catch(() => undefined); // a read-only tree still runs, uncached
  return { ...synthesized, cache: off ? 'off' : 'miss', key };
}

/** SHA-256 of the sources, the aws-cdk-lib version and the options (hex, 32 chars). */
export async function definitionKey(options: LocalDefinitionOptions): Promise<string> {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([options.pollPolicy ?? null, options.maxConcurrentProcessings ?? null]));
  await hashSources(hash, ['aws-cdk-lib'], SOURCE_DIRS, (name) => name.endsWith('.ts'));
  return hash.digest('hex').slice(0, 32);
}

/**
 * Feeds `hash` the version of each package of `tools` (node_modules), then
 * each file below the project folders `dirs` whose name `keep` takes (its
 * path from the project root, then its bytes), in name order. Shared with
 * packages/local/src/assembly/cache.ts.
 */
export async function hashSources(hash: Hash, tools: string[], dirs: string[], keep: (name: string) => boolean): Promise<void> {
  for (const tool of tools) {
    const text = await readFile(path.join(PROJECT_ROOT, 'node_modules', tool, 'package.json'), 'utf8').catch(() => '');
    hash.update(`${tool} ${(JSON.parse(text || '{}') as { version?: string }).version ?? 'unknown'}\n`);
  }
  for (const dir of dirs) {
    for (const file of await sourceFiles(path.join(PROJECT_ROOT, dir), keep)) {
      hash.update(`${path.relative(PROJECT_ROOT, file)}\n`);
      hash.update(await readFile(file));
    }
  }
}

async function sourceFiles(dir: string, keep: (name: string) => boolean): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await sourceFiles(full, keep)));
    else if (keep(entry.name)) files.push(full);
  }
  return files;
}

/** Written to a temporary name first: a reader never sees half a file. */
async function store(file: string, definition: LocalDefinition): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify(definition));
  await rename(temporary, file);
}
