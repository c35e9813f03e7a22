/**
 * The local bridge's cloud assembly, cached on disk like the definition
 * before it (packages/local/src/assembly/local-definition-cache.ts): synthesizing costs seconds
 * (aws-cdk-lib alone), bundling the 18 handlers more. Two levels, in
 * `node_modules/.cache/mapflow-bridge/` (MAPFLOW_BRIDGE_CACHE_DIR moves it):
 *
 *   bundles-<sources key>/<name>/index.mjs   the handler bundles, built once per
 *       state of the sources with the construct's esbuild options (or the
 *       package's prebuilt bundles, which need no build);
 *   assembly-<key>/                          a `cdk.out` folder per settings
 *       (poll policy, slots, routes), its assets staged from those bundles.
 *
 * The bundles' key hashes what they are made from (functions/, the esbuild
 * options and build script, esbuild's version; or the package's prebuilt
 * bundles); the assembly's adds lib/, cdk.json, aws-cdk-lib's version and
 * the settings, so an edit of the construct synthesizes again without bundling. A warm start
 * reads the key's folder and never imports aws-cdk-lib.
 * MAPFLOW_BRIDGE_DEFINITION_CACHE=off synthesizes into a fresh folder every time.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fork } from 'node:child_process';
import type { Route } from 'mapflow-bridge/functions/routing/index.ts';
import type { PollPolicy } from 'mapflow-bridge/functions/polling/poll-policy.ts';
import { definitionCacheDir, hashSources } from './local-definition-cache.ts';

/** The construct package's folder: functions/, lib/, its build script or its prebuilt bundles. */
const PROJECT_ROOT = path.dirname(createRequire(import.meta.url).resolve('mapflow-bridge/package.json'));
const PREBUILT_DIRS = ['assets/handlers', 'dist/assets/handlers'];

export interface LocalAssemblySettings {
  pollPolicy?: Partial<PollPolicy>;
  maxConcurrentProcessings?: number;
  routes?: Route[];
}

export interface CachedAssembly {
  /** The `cdk.out`-style folder. */
  dir: string;
  templateFile: string;
  cache: 'hit' | 'miss' | 'off';
  key: string;
  /** Removes a folder made with the cache off (a no-op otherwise). */
  dispose(): Promise<void>;
}

export class AssemblySynthError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AssemblySynthError';
  }
}

/** The assembly for these settings: from the cache when its sources are unchanged, else synthesized (and stored). */
export async function loadLocalAssembly(
  settings: LocalAssemblySettings,
  options: {
    env?: NodeJS.ProcessEnv;
    /** Checks a fresh assembly before it is stored (the local bridge: the definition's ASL check). */
    check?: (dir: string, templateFile: string) => Promise<void>;
    log?: (message: string) => void;
  } = {},
): Promise<CachedAssembly> {
  const env = options.env ?? process.env;
  const [sources, bundles] = await Promise.all([sourcesKey(), bundlesKey()]);
  const key = hash([sources, settingsKey(settings)]);
  const cacheDir = definitionCacheDir(env);
  const off = env.MAPFLOW_BRIDGE_DEFINITION_CACHE === 'off';
  const dir = path.join(cacheDir, `assembly-${key}`);
  // packages/local/src/assembly/local-assembly.ts's LOCAL_STACK_NAME (that module imports aws-cdk-lib: only on a miss).
  const templateFile = 'MapflowBridgeLocal.template.json';
  if (!off && existsSync(path.join(dir, '.complete'))) {
    // Marks it used: pruning keeps the most recently used.
    const now = new Date();
    await utimes(dir, now, now).catch(() => undefined);
    return { dir, templateFile, cache: 'hit', key, dispose: async () => undefined };
  }

  await mkdir(cacheDir, { recursive: true });
  const bundlesDir = await handlerBundles(cacheDir, bundles, off, options.log);
  const temporary = await mkdtemp(path.join(cacheDir, 'assembly-tmp-'));
  try {
    // Only a miss pays for aws-cdk-lib, and in a process of its own.
    const file = await synthInChildProcess(settings, temporary, bundlesDir);
    if (file !== templateFile) throw new AssemblySynthError(`the local stack's template is ${file}, expected ${templateFile}`);
    await options.check?.(temporary, templateFile);
    await writeFile(path.join(temporary, '.complete'), key);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error instanceof AssemblySynthError ? error : new AssemblySynthError(`Cannot synthesize the local cloud assembly: ${(error as Error)?.message ?? String(error)}`, { cause: error });
  } finally {
    if (off && bundlesDir && !isPrebuilt(bundlesDir)) await rm(bundlesDir, { recursive: true, force: true });
  }
  if (off) return { dir: temporary, templateFile, cache: 'off', key, dispose: () => rm(temporary, { recursive: true, force: true }) };
  // Another process may have stored the same key meanwhile: theirs is as good.
  await rename(temporary, dir).catch(async () => rm(temporary, { recursive: true, force: true }));
  await prune(cacheDir).catch(() => undefined);
  return { dir, templateFile, cache: 'miss', key, dispose: async () => undefined };
}

/** Assemblies kept (each a few MB: 18 bundles and a template); the least recently used go first. */
const KEEP_ASSEMBLIES = 24;
const KEEP_BUNDLES = 4;
/** synth-child.mjs: the process that loads aws-cdk-lib, so the bridge's own process never holds it. */
const SYNTH_CHILD = new URL('./synth-child.mjs', import.meta.url);

/**
 * Synthesizes in a child process that exits when done: aws-cdk-lib and the
 * stack's construct tree took the bridge's process from 283 MB to 690 MB
 * for the whole of a run (docs/local.md). Returns the template file's name.
 */
function synthInChildProcess(settings: LocalAssemblySettings, outdir: string, bundlesDir: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = fork(SYNTH_CHILD, [], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'advanced' });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    let answer: { file?: string; error?: { message: string } } | undefined;
    child.once('message', (message) => {
      answer = message as typeof answer;
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (answer?.file) return resolve(answer.file);
      if (answer?.error) return reject(new AssemblySynthError(`Cannot synthesize the local cloud assembly: ${answer.error.message}`));
      reject(new AssemblySynthError(`Cannot synthesize the local cloud assembly: its process ended (${signal ?? `exit ${code}`}) without an answer${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-5).join(' | ')}` : ''}`));
    });
    child.send({ settings, outdir, bundlesDir });
  });
}

/** A temporary folder this old was left by a process that died while synthesizing. */
const ABANDONED_MS = 3_600_000;

/** Removes the least recently used assemblies and bundles beyond the limits, and abandoned temporary folders. */
async function prune(cacheDir: string): Promise<void> {
  const entries = await Promise.all(
    (await readdir(cacheDir)).map(async (name) => ({ name, mtimeMs: (await stat(path.join(cacheDir, name)).catch(() => undefined))?.mtimeMs ?? 0 })),
  );
  const newestFirst = entries.sort((a, b) => b.mtimeMs - a.mtimeMs);
  const doomed = [
    ...newestFirst.filter((e) => /^(assembly|bundles)-tmp-/.test(e.name) && Date.now() - e.mtimeMs > ABANDONED_MS),
    ...newestFirst.filter((e) => /^assembly-[0-9a-f]{32}$/.test(e.name)).slice(KEEP_ASSEMBLIES),
    ...newestFirst.filter((e) => /^bundles-[0-9a-f]{32}$/.test(e.name)).slice(KEEP_BUNDLES),
  ];
  await Promise.all(doomed.map((e) => rm(path.join(cacheDir, e.name), { recursive: true, force: true })));
}

/** The prebuilt bundles of the package, or this key's built bundles (built now when missing). */
export async function handlerBundles(cacheDir: string, key: string, fresh = false, log?: (message: string) => void): Promise<string> {
  const prebuilt = prebuiltDir();
  if (prebuilt) return prebuilt;
  const dir = path.join(cacheDir, `bundles-${key}`);
  if (!fresh && existsSync(path.join(dir, '.complete'))) {
    const now = new Date();
    await utimes(dir, now, now).catch(() => undefined);
    return dir;
  }
  log?.('local bridge: bundling the handlers (once per change of the sources)');
  await mkdir(cacheDir, { recursive: true });
  const temporary = await mkdtemp(path.join(cacheDir, 'bundles-tmp-'));
  try {
    const { buildHandlers } = (await import(path.join(PROJECT_ROOT, 'scripts', 'build-handlers.ts'))) as { buildHandlers(outDir: string): Promise<string[]> };
    await buildHandlers(temporary);
    await writeFile(path.join(temporary, '.complete'), key);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw new AssemblySynthError(`Cannot bundle the handlers: ${(error as Error)?.message ?? String(error)}`, { cause: error });
  }
  if (fresh) return temporary;
  await rename(temporary, dir).catch(async () => rm(temporary, { recursive: true, force: true }));
  return dir;
}

/** The package's prebuilt bundles: only where the handlers cannot be built (no build script, as in the installed package). */
function prebuiltDir(): string | undefined {
  // In the repository a dist/ left by `npm pack` may be older than functions/: build from source there.
  if (existsSync(path.join(PROJECT_ROOT, 'scripts', 'build-handlers.ts'))) return undefined;
  for (const relative of PREBUILT_DIRS) {
    const dir = path.join(PROJECT_ROOT, relative);
    if (existsSync(path.join(dir, 'dispatch', 'index.mjs'))) return dir;
  }
  return undefined;
}

function isPrebuilt(dir: string): boolean {
  return PREBUILT_DIRS.some((relative) => path.join(PROJECT_ROOT, relative) === dir);
}

function settingsKey(settings: LocalAssemblySettings): string {
  return JSON.stringify([settings.pollPolicy ?? null, settings.maxConcurrentProcessings ?? null, settings.routes ?? null]);
}

function hash(parts: string[]): string {
  const h = createHash('sha256');
  for (const part of parts) h.update(`${part}\n`);
  return h.digest('hex').slice(0, 32);
}

/** What the bundles are made from: functions/, the esbuild options and build script, esbuild's version (or the prebuilt bundles). */
export async function bundlesKey(): Promise<string> {
  const prebuilt = prebuiltDir();
  return hashFiles(
    prebuilt ? [path.relative(PROJECT_ROOT, prebuilt)] : ['functions'],
    prebuilt ? [] : ['lib/private/bundling.ts', 'scripts/build-handlers.ts'],
    prebuilt ? [] : ['esbuild'],
  );
}

/** What the assembly is made from besides the bundles: the construct (lib/), cdk.json, aws-cdk-lib's version. */
export async function sourcesKey(): Promise<string> {
  return hash([await bundlesKey(), await hashFiles(['lib'], ['cdk.json'], ['aws-cdk-lib'])]);
}

async function hashFiles(dirs: string[], files: string[], tools: string[]): Promise<string> {
  const h = createHash('sha256');
  await hashSources(h, tools, dirs, (name) => /\.(ts|js|mjs|json)$/.test(name) && !name.endsWith('.d.ts'));
  for (const relative of files) {
    const text = await readFile(path.join(PROJECT_ROOT, relative)).catch(() => undefined);
    if (text) h.update(`${relative}\n`).update(text);
  }
  return h.digest('hex').slice(0, 32);
}

