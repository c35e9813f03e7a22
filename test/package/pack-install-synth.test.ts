/**
 * The package as a library: `npm pack` (which builds dist/ and the prebuilt
 * handler bundles), install of the tarball into fresh CDK apps in a temporary
 * folder, offline, then a type check and `cdk synth` of each app (one ES
 * module app, one CommonJS app) with cdk-nag's AwsSolutions checks as a
 * validation plugin: a finding fails the synth.
 *
 * The local runtime's run of such an app's assembly is local mode's test:
 * test/e2e/consumer-assembly.test.ts.
 *
 * The public API: the packed declarations of the main entry
 * (dist/lib/index.d.ts, what a user's compiler reads) are the ones
 * api/mapflow-bridge.api.md records. API Extractor (api-extractor.json) fails
 * on a changed public signature, or on a type a public signature names and
 * lib/index.ts does not export (ae-forgotten-export is an error there). An
 * intended change is accepted with `npm run api:update` (the same report from
 * the declarations of tsconfig.api.json), and the report's diff is reviewed
 * with the code. Reading the build's declarations here spares a second
 * compile of lib/ (its own test file took 24 s of CPU).
 *
 * Offline: the package's runtime dependencies and required peers (only
 * those: what a synth loads and is not declared fails here) are given to npm
 * as `file:` links to this repository's node_modules, so npm resolves nothing
 * on the network; the tarball itself is installed by npm as any registry
 * package is. What a real install adds, and under which licences, is checked
 * from package-lock.json in test/architecture/construct-dependencies.test.ts.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Extractor, ExtractorConfig, type ExtractorMessage } from '@microsoft/api-extractor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packedTarball } from '../support/packed.ts';
import { testTmp } from '../support/temp.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HERE = fileURLToPath(new URL('./', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
// The apps are checked as a consumer on TypeScript 5 checks them (most CDK apps); the project itself
// builds its declarations with TypeScript 7.
const TSC = path.join(ROOT, 'node_modules', 'typescript-5', 'bin', 'tsc');
// Node 24 (the project's own, which runs the tests) strips TypeScript types natively.
const NODE = process.execPath;

interface Folder {
  dir: string;
  tarball: string;
}

async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run(NPM, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_loglevel: 'error', npm_config_update_notifier: 'false' } });
  return stdout;
}

/**
 * A fresh app folder whose package.json links the package's runtime dependencies and required peers (nothing
 * else: a module the construct loads that is not declared fails the synth here, as it would in a user's app).
 */
async function appFolder(parent: string, name: string, type: 'module' | 'commonjs'): Promise<string> {
  const dir = path.join(parent, name);
  await mkdir(dir);
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  const requiredPeers = Object.keys(pkg.peerDependencies).filter((name) => !pkg.peerDependenciesMeta?.[name]?.optional);
  const links = Object.fromEntries([...Object.keys(pkg.dependencies), ...requiredPeers].map((dep) => [dep, `file:${path.join(ROOT, 'node_modules', dep)}`]));
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: `consumer-${name}`, version: '1.0.0', private: true, type, dependencies: links }, null, 2));
  return dir;
}

/** What to do about a failed API check, from API Extractor's messages. */
function apiAdvice(messages: string[]): string {
  const forgotten = messages.flatMap((text) => [...text.matchAll(/The symbol "([^"]+)"/g)].map((m) => m[1]));
  if (forgotten.length > 0) return `a public signature names ${forgotten.join(', ')}, which lib/index.ts does not export: export each from there, then run \`npm run api:update\``;
  return 'the public API changed: if that is intended, run `npm run api:update` and commit api/mapflow-bridge.api.md with the change';
}

/** The README's TypeScript app (its one ```ts block), which must run as written. */
function readmeApp(): string {
  const blocks = [...readFileSync(path.join(ROOT, 'README.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks, "the README's construct example").toHaveLength(1);
  return blocks[0]!;
}

describe('the npm package in a fresh CDK app', () => {
  const folder: Partial<Folder> = {};
  const apps: Record<'esm' | 'cjs' | 'readme', string> = { esm: '', cjs: '', readme: '' };

  beforeAll(async () => {
    folder.dir = await mkdtemp(path.join(testTmp(), 'mfb-pack-'));
    const started = Date.now();
    // Act (shared): pack (prepack builds; once per state of the sources, shared with the other file that
    // installs it: test/support/packed.ts), then install the tarball offline into an ES module app.
    const { tarball, packed } = await packedTarball();
    folder.tarball = tarball;
    // A tarball packed earlier (by the other file, or an earlier run of these sources): dist/ is put back as it
    // packed it, for the API check below (API Extractor reads declarations of the project, not of node_modules).
    if (!packed) {
      await rm(path.join(ROOT, 'dist'), { recursive: true, force: true });
      await run('tar', ['-xzf', tarball, '--strip-components=1', '-C', ROOT, 'package/dist']);
    }
    apps.esm = await appFolder(folder.dir, 'esm', 'module');
    await npm(['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--engine-strict=false', folder.tarball], apps.esm);
    await copyFile(path.join(HERE, 'esm-app.ts.txt'), path.join(apps.esm, 'app.ts'));
    // The CommonJS app shares the installed node_modules (same tarball, same install).
    apps.cjs = await appFolder(folder.dir, 'cjs', 'commonjs');
    await symlink(path.join(apps.esm, 'node_modules'), path.join(apps.cjs, 'node_modules'), 'dir');
    await copyFile(path.join(HERE, 'cjs-app.ts.txt'), path.join(apps.cjs, 'app.ts'));
    // The README's app, as a user copies it from "The construct in your CDK app".
    apps.readme = await appFolder(folder.dir, 'readme', 'module');
    await symlink(path.join(apps.esm, 'node_modules'), path.join(apps.readme, 'node_modules'), 'dir');
    await writeFile(path.join(apps.readme, 'app.ts'), readmeApp());
    // One type check for both apps: each file's module format follows its own folder's package.json.
    await writeFile(
      path.join(folder.dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true,
          erasableSyntaxOnly: true, types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')],
        },
        files: ['esm/app.ts', 'cjs/app.ts', 'readme/app.ts'],
      }),
    );
    console.log(`${packed ? 'pack (with build)' : 'the tarball packed earlier'} and offline install: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 240_000);
  afterAll(async () => {
    if (folder.dir) await rm(folder.dir, { recursive: true, force: true });
  });

  it('both apps type-check against the installed declarations (construct props, event types)', async () => {
    // Act + Assess
    await run(NODE, [TSC, '-p', path.join(folder.dir!, 'tsconfig.json')], { cwd: folder.dir }).catch((error: { stdout?: string }) => {
      throw new Error(`type check of the apps failed:\n${error.stdout ?? String(error)}`);
    });
  }, 180_000);

  it('the packed declarations of the main entry match the API report (api/mapflow-bridge.api.md)', () => {
    // Prepare: the project's API Extractor settings, on the tarball's declarations (dist/, as packed)
    const configFile = path.join(ROOT, 'api-extractor.json');
    const configObject = ExtractorConfig.loadFile(configFile);
    configObject.mainEntryPointFilePath = path.join(ROOT, 'dist', 'lib', 'index.d.ts');
    configObject.compiler = { tsconfigFilePath: path.join(ROOT, 'tsconfig.build.json') };
    const prepared = ExtractorConfig.prepare({ configObject, configObjectFullPath: configFile, packageJsonFullPath: path.join(ROOT, 'package.json') });
    const findings: string[] = [];

    // Act: as CI does (localBuild false: a changed report is a failure, the report file is not rewritten)
    const result = Extractor.invoke(prepared, {
      localBuild: false,
      messageCallback: (message: ExtractorMessage) => {
        if (message.logLevel === 'error' || message.logLevel === 'warning') findings.push(`${message.messageId}: ${message.text}`);
        message.handled = true;
      },
    });

    // Assess
    expect(result.succeeded && !result.apiReportChanged, `the API check failed: ${apiAdvice(findings)}.\n\n${findings.join('\n')}`).toBe(true);
  }, 120_000);

  it('installs from the tarball with the compiled construct, types, event schemas and prebuilt handlers, and no TypeScript entry', async () => {
    // Assess
    const installed = path.join(apps.esm, 'node_modules', 'mapflow-bridge');
    const pkg = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8')) as { private?: boolean; exports: Record<string, unknown> };
    expect(pkg.private).toBeUndefined();
    for (const file of ['dist/lib/index.js', 'dist/lib/index.d.ts', 'dist/functions/events/types.d.ts', 'dist/functions/mapflow/index.js', 'schemas/events/JobSucceeded.json']) {
      expect(existsSync(path.join(installed, file)), file).toBe(true);
    }
    expect((await readdir(path.join(installed, 'dist/assets/handlers'))).sort()).toContain('dispatch');
    // Nothing of local mode, the simulator, the benches or the tests: those are packages of their own (packages/).
    for (const folder of ['test', 'packages', 'local', 'bench', 'bin']) expect(existsSync(path.join(installed, folder)), folder).toBe(false);
    expect(existsSync(path.join(installed, 'lib', 'private', 'local-assembly.ts'))).toBe(false);
    expect(existsSync(path.join(apps.esm, 'node_modules', '.bin', 'mapflow-bridge'))).toBe(false);
    // The tarball itself: no file of local mode, the simulator, the benches or a test.
    const { stdout: listing } = await run('tar', ['-tzf', folder.tarball!], { maxBuffer: 16 * 1024 * 1024 });
    const files = listing.trim().split('\n').map((line) => line.replace(/^package\//, ''));
    expect(files.filter((file) => /^(packages|local|bench|bin|test)\/|\.test\.ts$|(^|\/)local-(assembly|account|definition)/.test(file))).toEqual([]);
  });

  for (const kind of ['esm', 'cjs'] as const) {
    it(`${kind === 'esm' ? 'an ES module' : 'a CommonJS'} app synthesizes the bridge with a route and its own bucket, cdk-nag clean, from the prebuilt bundles`, async () => {
      // Act
      const synth = await run(NODE, ['app.ts'], { cwd: apps[kind], env: { ...process.env, CDK_OUTDIR: 'cdk.out' } }).catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(`synth of the ${kind} app failed:\n${error.stdout ?? ''}\n${error.stderr ?? String(error)}`);
      });
      // Assess: the template has the bridge on the given bucket
      const template = JSON.parse(await readFile(path.join(apps[kind], 'cdk.out', 'GeoStack.template.json'), 'utf8')) as { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };
      const resources = Object.values(template.Resources);
      expect(resources.filter((r) => r.Type === 'AWS::S3::Bucket')).toHaveLength(2); // yours: data + access logs; the bridge creates none
      expect(resources.filter((r) => r.Type === 'AWS::StepFunctions::StateMachine')).toHaveLength(1);
      const functions = resources.filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Handler === 'index.handler');
      expect(functions.length).toBeGreaterThanOrEqual(10);
      expect(synth.stderr).not.toMatch(/AwsSolutions-/);
      // Assess: the function code is the package's prebuilt bundle, copied as it is (no bundling ran)
      const prebuilt = await readFile(path.join(apps.esm, 'node_modules', 'mapflow-bridge', 'dist', 'assets', 'handlers', 'dispatch', 'index.mjs'));
      const assetDirs = (await readdir(path.join(apps[kind], 'cdk.out'))).filter((name) => name.startsWith('asset.'));
      const hashes = await Promise.all(
        assetDirs.map(async (name) => {
          const file = path.join(apps[kind], 'cdk.out', name, 'index.mjs');
          return existsSync(file) ? createHash('sha256').update(await readFile(file)).digest('hex') : '';
        }),
      );
      expect(hashes).toContain(createHash('sha256').update(prebuilt).digest('hex'));
    }, 180_000);
  }

  it("the README's app synthesizes as written: the bridge, the analysts' grant and an alarm on a metric method", async () => {
    // Act
    await run(NODE, ['app.ts'], { cwd: apps.readme, env: { ...process.env, CDK_OUTDIR: 'cdk.out' } }).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`synth of the README's app failed:\n${error.stdout ?? ''}\n${error.stderr ?? String(error)}`);
    });

    // Assess
    const template = JSON.parse(await readFile(path.join(apps.readme, 'cdk.out', 'GeoStack.template.json'), 'utf8')) as { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };
    const resources = Object.entries(template.Resources);
    expect(resources.filter(([, r]) => r.Type === 'AWS::StepFunctions::StateMachine')).toHaveLength(1);
    const alarm = resources.find(([id, r]) => r.Type === 'AWS::CloudWatch::Alarm' && id.startsWith('GeoJsonJobsFailed'));
    expect(alarm?.[1].Properties).toMatchObject({ MetricName: 'JobsFailed', Threshold: 1 });
    expect(resources.filter(([id, r]) => r.Type === 'AWS::IAM::Policy' && id.startsWith('Analysts'))).toHaveLength(1);
  }, 180_000);
});
