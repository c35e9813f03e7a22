/**
 * A consumer's own cloud assembly on the local runtime: the construct packed
 * (`npm pack`, which prebuilds the handler bundles; the tarball
 * test/support/packed.ts shares with pack-install-synth.test.ts) and installed into a fresh
 * ES module CDK app offline (as test/package/pack-install-synth.test.ts does),
 * the app synthesized, and `mapflow-bridge local run --assembly cdk.out` (the
 * local package, through this repository's command line) takes a GeoJSON
 * through it: each function's asset is its own handler, each runs from its
 * prebuilt bundle in that cdk.out, none from the sources. Local mode's test,
 * apart from the construct's own.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bridgeFunctionsOf, handlerNameOfBundle } from '../support/assembly.ts';
import { packedTarball } from '../support/packed.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const NODE = process.execPath;
const CLI = path.join(ROOT, 'packages', 'cli', 'bin', 'mapflow-bridge.mjs');

async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run(NPM, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_loglevel: 'error', npm_config_update_notifier: 'false' } });
  return stdout;
}

describe("a consumer app's assembly on the local runtime", () => {
  const folder: { dir?: string } = {};
  const apps = { esm: '' };

  beforeAll(async () => {
    // Prepare: pack, install offline beside the runtime dependencies and required peers, synthesize
    folder.dir = await mkdtemp(path.join(testTmp(), 'mfb-consumer-'));
    const { tarball } = await packedTarball();
    apps.esm = path.join(folder.dir, 'esm');
    await (await import('node:fs/promises')).mkdir(apps.esm);
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; peerDependencies: Record<string, string>; peerDependenciesMeta?: Record<string, { optional?: boolean }> };
    const needed = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies).filter((name) => !pkg.peerDependenciesMeta?.[name]?.optional)];
    await writeFile(path.join(apps.esm, 'package.json'), JSON.stringify({ name: 'consumer-esm', version: '1.0.0', private: true, type: 'module', dependencies: Object.fromEntries(needed.map((dep) => [dep, `file:${path.join(ROOT, 'node_modules', dep)}`])) }));
    await npm(['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--engine-strict=false', tarball], apps.esm);
    await copyFile(path.join(ROOT, 'test', 'package', 'esm-app.ts.txt'), path.join(apps.esm, 'app.ts'));
    await run(NODE, ['app.ts'], { cwd: apps.esm, env: { ...process.env, CDK_OUTDIR: 'cdk.out' } });
  }, 300_000);
  afterAll(async () => {
    if (folder.dir) await rm(folder.dir, { recursive: true, force: true });
  });

  it("the ES module app's assembly gives each function its own handler, and `local run --assembly` runs it from those bundles", async () => {
    // Prepare: the app's assembly (beforeAll)
    const outDir = path.join(apps.esm, 'cdk.out');
    const functions = await bridgeFunctionsOf(outDir, 'GeoStack.template.json');
    const work = await mkdtemp(path.join(folder.dir!, 'run-'));
    const aoi = path.join(work, 'package-square.geojson');
    const ring = [[7.45, 46.95], [7.455, 46.95], [7.455, 46.955], [7.45, 46.955], [7.45, 46.95]];
    await writeFile(aoi, JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: { from: 'package test' }, geometry: { type: 'Polygon', coordinates: [ring] } }] }));
    const modules = path.join(work, 'modules.txt');
    const recorder = `${pathToFileURL(path.join(ROOT, 'test', 'support', 'record-modules.mjs')).href}?file=${encodeURIComponent(modules)}`;

    // Act
    const names = await Promise.all(functions.map((fn) => handlerNameOfBundle(fn.assetDir)));
    const { stdout } = await run(
      NODE,
      ['--import', recorder, CLI, 'local', 'run', '--assembly', 'cdk.out', ...(await sharedLedgerArgs('package')), '--json', '--out', path.join(work, 'out'), aoi],
      { cwd: apps.esm, maxBuffer: 16 * 1024 * 1024, timeout: 300_000 },
    ).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`local run of the app's assembly failed:\n${error.stdout ?? ''}\n${error.stderr ?? String(error)}`);
    });

    // Assess: every function's asset is its own handler
    expect(functions.length).toBeGreaterThanOrEqual(18);
    expect(names).toEqual(functions.map((fn) => fn.bridgeFunction));
    // Assess: the job went through the app's own functions, each a bundle of its cdk.out
    const { jobs } = JSON.parse(stdout) as { jobs: { status: string }[] };
    expect(jobs.map((job) => job.status)).toEqual(['SUCCEEDED']);
    const loaded = (await readFile(modules, 'utf8')).trim().split('\n').map((line) => line.split(' ') as [string, string]);
    const bundles = new Set(loaded.filter(([thread, url]) => thread !== '0' && url.endsWith('/index.mjs')).map(([, url]) => fileURLToPath(url)));
    const assetDirs = new Set(functions.map((fn) => fn.assetDir));
    // Worker-thread functions (the four that decode the input run in child processes the recorder does not reach).
    expect(bundles.size).toBeGreaterThanOrEqual(6);
    for (const bundle of bundles) expect(assetDirs.has(path.dirname(bundle)), bundle).toBe(true);
    expect(loaded.filter(([thread, url]) => thread === '0' && url.includes('/functions/handlers/'))).toEqual([]);
  }, 400_000);
});
