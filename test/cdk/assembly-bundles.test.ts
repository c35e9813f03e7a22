/**
 * What `cdk deploy` uploads: the README's command (`npx cdk synth -o <dir>`,
 * bin/app.ts through cdk.json, bundling on) run with no AWS credentials, no
 * Docker and cdk-nag on, with one context setting. Every bridge function gets
 * a bundle of its own handler, made by the local esbuild
 * (lib/private/bundle-handler.ts with the SDK tree-shaking plugin): ESM with
 * the createRequire banner, no source maps, nothing left to resolve at run
 * time. Each bundle exports its catalogue name (BRIDGE_HANDLER); the test
 * imports each asset's index.mjs on the pinned Node 24 that runs the tests (a
 * cold start of it) and compares that name with the function's
 * BRIDGE_FUNCTION. Before the fix in lib/private/bridge-function.ts all
 * functions shared register-job's bundle (CDK's asset cache key could not
 * tell the handlers apart).
 *
 * One synthesis serves every check: the app entry, the bundling and the
 * bundles (it was two files, each bundling every handler, before issue 35's
 * "test:construct in under two minutes").
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../functions/core/catalog.ts';
import { ESM_REQUIRE_BANNER } from '../../lib/private/defaults.ts';
import { bridgeFunctionsOf, handlerNameOfBundle, type AssemblyFunction } from '../support/assembly.ts';
import { testTmp } from '../support/temp.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CDK = path.join(ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk');

/**
 * Modules a bundle may still name at run time: Node built-ins, and the SDK's
 * optional SigV4a signers (only for S3 multi-region access points, which the
 * bridge never uses; the SDK loads them in a try and names them in an error text).
 */
const RUNTIME_MODULE = /^(node:.+|@aws-sdk\/signature-v4-crt|@aws-sdk\/signature-v4a)$/;

/** The environment of a child process with no AWS credentials or CDK settings at all, and a Docker that cannot run. */
function envWithoutAwsOrDocker(noDocker: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && !k.startsWith('CDK_')));
  // Without CDK_VALIDATION (the test setup's 'false'): CDK's CloudFormation validation runs, as in a user's synth.
  // CDK runs $CDK_DOCKER for container bundling: any attempt to use it fails the synth.
  return { ...env, CDK_DISABLE_VERSION_CHECK: '1', CDK_DOCKER: noDocker };
}

describe('the synthesized assembly of the README app', () => {
  let outDir = '';
  let functions: AssemblyFunction[] = [];
  let template: { Resources: Record<string, { Type: string; Properties?: { Environment?: { Variables?: Record<string, string> } } }> } = { Resources: {} };

  beforeAll(async () => {
    // Act: the README's command, bundling on, with a context setting
    outDir = await mkdtemp(path.join(testTmp(), 'mfb-synth-'));
    const noDocker = path.join(outDir, 'docker-is-not-allowed');
    await run(process.execPath, [CDK, 'synth', '-q', '-o', outDir, '-c', 'maxConcurrentProcessings=3'], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
      env: envWithoutAwsOrDocker(noDocker),
    }).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`cdk synth failed:\n${error.stdout ?? ''}\n${error.stderr ?? String(error)}`);
    });
    functions = await bridgeFunctionsOf(outDir, 'MapflowBridge.template.json');
    template = JSON.parse(await readFile(path.join(outDir, 'MapflowBridge.template.json'), 'utf8')) as typeof template;
  }, 240_000);
  afterAll(async () => {
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  it('has one function for every handler of the catalogue', () => {
    // Assess
    expect(functions.map((fn) => fn.bridgeFunction).sort()).toEqual([...new Set(HANDLER_NAMES)].sort());
  });

  it('passes context settings to every function (bin/app.ts reads them)', () => {
    // Assess
    const lambdas = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Environment?.Variables?.BRIDGE_FUNCTION);
    expect(lambdas).toHaveLength(functions.length);
    for (const fn of lambdas) expect(fn.Properties?.Environment?.Variables?.MAX_CONCURRENT_PROCESSINGS).toBe('3');
  });

  it('gives every function an asset of its own', () => {
    // Assess
    expect(new Set(functions.map((fn) => fn.assetDir)).size).toBe(functions.length);
  });

  it('bundles every handler into ESM with the createRequire banner, no source maps, the SDK tree-shaken and nothing left to resolve', async () => {
    // Act
    const bundles = await Promise.all(functions.map(async (fn) => ({ name: fn.bridgeFunction, file: path.join(fn.assetDir, 'index.mjs'), code: await readFile(path.join(fn.assetDir, 'index.mjs'), 'utf8') })));

    // Assess
    for (const { name, file, code } of bundles) {
      expect(code.startsWith(ESM_REQUIRE_BANNER), name).toBe(true);
      // Production bundles ship no source maps (sourceMaps defaults to false): smaller, faster cold starts.
      expect(existsSync(`${file}.map`), name).toBe(false);
      expect(code.includes('sourceMappingURL'), name).toBe(false);
      // The construct bundles with lib/private/bundling.ts's plugin (what the bench measures): unused SDK schemas are gone.
      expect(code.includes('PutBucketLifecycleConfigurationRequest'), name).toBe(false);
      // Nothing left to resolve at run time, so no code path (a geotiff decoder, an SDK plugin) can miss a module later.
      const leftovers = [...code.matchAll(/\b(?:require|import)\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]!);
      expect(leftovers.filter((m) => !RUNTIME_MODULE.test(m)), name).toEqual([]);
    }
  });

  it("loads each bundle on Node 24 and runs the function's own handler: the bundle exports the function's catalogue name", async () => {
    // Act
    const found = await Promise.all(functions.map(async (fn) => [fn.bridgeFunction, await handlerNameOfBundle(fn.assetDir)] as const));
    // Assess
    expect(process.versions.node.split('.')[0]).toBe('24');
    for (const [expected, actual] of found) expect(actual, `asset of ${expected}`).toBe(expected);
  }, 60_000);
});
