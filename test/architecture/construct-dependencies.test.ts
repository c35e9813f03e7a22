/**
 * The construct package is lean (issue 35): a CDK app that installs it gets
 * only what a `cdk synth` of the construct loads, under permissive licences.
 *
 * What the construct loads is read from its import graph (esbuild's metafile
 * over lib/index.ts, packages left external), so a new import in lib/, or in
 * a functions/ module that lib/ reaches, that is not a declared runtime
 * dependency fails here before a user's synth fails. What installing them
 * costs is read from package-lock.json: the packages a user's npm adds beside
 * the peers, and each one's licence.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

interface PackageJson {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
interface LockEntry {
  license?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as PackageJson;
const lock = (JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }).packages;
const PEERS = new Set(Object.keys(pkg.peerDependencies ?? {}));
const REQUIRED_PEERS = new Set([...PEERS].filter((name) => !pkg.peerDependenciesMeta?.[name]?.optional));
const RUNTIME = new Set(Object.keys(pkg.dependencies ?? {}));

/** Imported only where the package's prebuilt bundles are missing (in this repository): the published package ships them. */
const BUILD_ONLY_DYNAMIC = new Set(['esbuild']);
/** SPDX identifiers of permissive licences; anything else (AGPL, GPL, LGPL, SSPL, UNLICENSED, none) fails. */
const PERMISSIVE = new Set(['MIT', 'Apache-2.0', 'ISC', 'BSD-2-Clause', 'BSD-3-Clause', '0BSD', 'BlueOak-1.0.0', 'Unlicense', 'CC0-1.0']);
/** At most this many packages beside the peers (issue 35: "at most a dozen"). */
const MAX_ADDED_PACKAGES = 12;

const packageName = (specifier: string) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

/** The bare imports of lib/index.ts's graph, static and dynamic apart. */
async function constructImports(): Promise<{ static: Set<string>; dynamic: Set<string> }> {
  const { metafile } = await build({
    entryPoints: [path.join(ROOT, 'lib', 'index.ts')],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    metafile: true,
    logLevel: 'silent',
  });
  const found = { static: new Set<string>(), dynamic: new Set<string>() };
  for (const input of Object.values(metafile.inputs)) {
    for (const imported of input.imports) {
      if (!imported.external || imported.path.startsWith('node:')) continue;
      (imported.kind === 'dynamic-import' ? found.dynamic : found.static).add(packageName(imported.path));
    }
  }
  return found;
}

/** npm's lookup: the nearest node_modules/<name> from `from` upwards. */
function resolveInLock(name: string, from: string): string | undefined {
  for (let base = from; ; ) {
    const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
    if (lock[candidate]) return candidate;
    if (!base) return undefined;
    const parent = base.lastIndexOf('/node_modules/');
    base = parent >= 0 ? base.slice(0, parent) : '';
  }
}

/** Every package installing the construct adds beside its peers: its dependencies and theirs. */
function installedWithConstruct(): Map<string, string | undefined> {
  const installed = new Map<string, string | undefined>();
  const visit = (entry: string) => {
    if (installed.has(entry)) return;
    const info = lock[entry]!;
    installed.set(entry, info.license);
    for (const name of Object.keys({ ...info.dependencies, ...info.optionalDependencies, ...info.peerDependencies })) {
      if (PEERS.has(name)) continue;
      const next = resolveInLock(name, entry);
      if (next) visit(next);
      else if (!info.peerDependencies?.[name]) throw new Error(`${name} (a dependency of ${entry}) is not in package-lock.json`);
    }
  };
  for (const name of RUNTIME) {
    const entry = resolveInLock(name, '');
    if (!entry) throw new Error(`${name} is not in package-lock.json: run npm install`);
    visit(entry);
  }
  return installed;
}

describe('the construct package', () => {
  it('declares every package a synth of the construct loads, as a dependency or a required peer', async () => {
    // Act
    const imports = await constructImports();

    // Assess
    const undeclared = [...imports.static].filter((name) => !RUNTIME.has(name) && !REQUIRED_PEERS.has(name));
    expect(undeclared, 'imported by lib/ (or a functions/ module it reaches) but not a runtime dependency: move the import out of the synth path, or declare it').toEqual([]);
    expect([...imports.dynamic].filter((name) => !BUILD_ONLY_DYNAMIC.has(name) && !RUNTIME.has(name) && !REQUIRED_PEERS.has(name))).toEqual([]);
  });

  it('declares no runtime dependency that a synth does not load', async () => {
    // Act
    const imports = await constructImports();

    // Assess: only what the construct needs is installed with it (the Lambdas' libraries are bundled, so devDependencies)
    expect([...RUNTIME].filter((name) => !imports.static.has(name))).toEqual([]);
  });

  it(`adds at most ${MAX_ADDED_PACKAGES} packages beside its peers, each under a permissive licence`, () => {
    // Act
    const installed = installedWithConstruct();

    // Assess
    expect(installed.size).toBeLessThanOrEqual(MAX_ADDED_PACKAGES);
    const notPermissive = [...installed].filter(([, license]) => !license || !PERMISSIVE.has(license));
    expect(notPermissive, 'copyleft or unlicensed packages installed with the construct').toEqual([]);
  });
});
