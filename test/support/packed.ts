/**
 * The construct's npm tarball, packed once per state of its sources and shared by the files that install it
 * (test/package/pack-install-synth.test.ts, test/e2e/consumer-assembly.test.ts). `npm pack` runs prepack,
 * which deletes and rebuilds dist/: two files packing side by side deleted each other's build, and each
 * paid for a build (about 20 s of CPU). The first caller packs into
 * `node_modules/.cache/mapflow-bridge/pack-<key>/` under a lock; the others wait for it and take the same file.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, watch } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** What the tarball is made from (package.json "files", the build's settings and script). */
const SOURCES = ['package.json', 'README.md', 'LICENSE', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build-handlers.ts', 'lib', 'functions', 'schemas'];

export interface PackedTarball {
  tarball: string;
  /** Whether this call packed it (false: an earlier file of the run, or an earlier run, did). */
  packed: boolean;
}

/** The tarball of the construct as the sources stand; packs it when no file of this key exists yet. */
export async function packedTarball(): Promise<PackedTarball> {
  const dir = path.join(ROOT, 'node_modules', '.cache', 'mapflow-bridge', `pack-${await sourcesKey()}`);
  const lock = `${dir}.lock`;
  await mkdir(path.dirname(dir), { recursive: true });
  for (;;) {
    const ready = await tarballIn(dir);
    if (ready) return { tarball: ready, packed: false };
    try {
      await mkdir(lock);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (await lockIsStale(lock)) await rm(lock, { recursive: true, force: true });
      else await appears(path.join(dir, '.complete'), lock);
      continue;
    }
    try {
      await writeFile(path.join(lock, 'pid'), String(process.pid));
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      await run(NPM, ['pack', '--pack-destination', dir], {
        cwd: ROOT,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, npm_config_loglevel: 'error', npm_config_update_notifier: 'false' },
      });
      await writeFile(path.join(dir, '.complete'), '');
      const tarball = await tarballIn(dir);
      if (!tarball) throw new Error(`npm pack left no tarball in ${dir}`);
      await pruneOlderPacks(dir);
      return { tarball, packed: true };
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }
}

/** Tarballs of earlier states of the sources: all but the newest two go (the cache is not a history). */
async function pruneOlderPacks(current: string): Promise<void> {
  const parent = path.dirname(current);
  const packs = await Promise.all(
    (await readdir(parent)).filter((name) => /^pack-[0-9a-f]+$/.test(name)).map(async (name) => ({ name, mtimeMs: (await stat(path.join(parent, name))).mtimeMs })),
  );
  const older = packs.filter((pack) => path.join(parent, pack.name) !== current).sort((a, b) => b.mtimeMs - a.mtimeMs).slice(1);
  await Promise.all(older.map((pack) => rm(path.join(parent, pack.name), { recursive: true, force: true })));
}

async function tarballIn(dir: string): Promise<string | undefined> {
  if (!existsSync(path.join(dir, '.complete'))) return undefined;
  const name = (await readdir(dir)).find((file) => file.endsWith('.tgz'));
  return name ? path.join(dir, name) : undefined;
}

/** A lock whose packing process is gone (a run killed mid-pack). */
async function lockIsStale(lock: string): Promise<boolean> {
  const pid = Number(await readFile(path.join(lock, 'pid'), 'utf8').catch(() => ''));
  if (!pid) {
    // Just made, its pid not yet written: stale only if it is old.
    const made = await stat(lock).then((s) => s.mtimeMs).catch(() => 0);
    return made > 0 && Date.now() - made > 60_000;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

/** Resolves when `file` exists or the lock goes away (the packer finished or failed). */
function appears(file: string, lock: string): Promise<void> {
  return new Promise((resolve) => {
    const parent = path.dirname(lock);
    const done = () => {
      watcher.close();
      clearInterval(stale);
      resolve();
    };
    const watcher = watch(parent, { recursive: false }, () => {
      if (existsSync(file) || !existsSync(lock)) done();
    });
    // A packer killed without removing its lock sends no event: look at its pid now and then.
    const stale = setInterval(() => void lockIsStale(lock).then((gone) => gone && done()), 2_000);
    if (existsSync(file) || !existsSync(lock)) done();
  });
}

/** A hash of the files the tarball is made from. */
async function sourcesKey(): Promise<string> {
  const hash = createHash('sha256');
  const visit = async (relative: string): Promise<void> => {
    const full = path.join(ROOT, relative);
    const info = await stat(full).catch(() => undefined);
    if (!info) return;
    if (info.isDirectory()) {
      for (const name of (await readdir(full)).sort()) await visit(path.join(relative, name));
      return;
    }
    hash.update(`${relative}\n`).update(await readFile(full));
  };
  for (const source of SOURCES) await visit(source);
  return hash.digest('hex').slice(0, 24);
}
