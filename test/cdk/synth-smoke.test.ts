/**
 * Slow-path smoke tests: the real app entry (bin/app.ts) synthesizes without
 * AWS credentials, and every function is really bundled by the local esbuild
 * (no Docker, lib/private/bundle-handler.ts with the SDK tree-shaking plugin) into an
 * ESM bundle that loads on the pinned Node 24.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../functions/core/catalog.ts';
import { BridgeFunction, PROJECT_ROOT } from '../../lib/private/bridge-function.ts';
import { functionId } from '../../lib/mapflow-bridge.ts';
import { ESM_REQUIRE_BANNER } from '../../lib/private/defaults.ts';
import { RemovalPolicy } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import { testTmp } from '../support/temp.ts';

const run = promisify(execFile);
const dirs: string[] = [];
const tempDir = (name: string) => {
  const dir = mkdtempSync(path.join(testTmp(), `mapflow-bridge-${name}-`));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The environment of a child process with no AWS credentials at all. */
function envWithoutAws(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && !k.startsWith('CDK_')));
  return { ...env, ...extra };
}

describe('bin/app.ts', () => {
  it('synthesizes with context settings, no AWS credentials and cdk-nag on', async () => {
    // Prepare
    const outdir = tempDir('app');
    const context = { 'aws:cdk:bundling-stacks': [], maxConcurrentProcessings: '3', stackName: 'SmokeBridge' };

    // Act
    await run(process.execPath, ['--import', 'tsx', 'bin/app.ts'], {
      cwd: PROJECT_ROOT,
      env: envWithoutAws({ CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify(context) }),
      timeout: 120_000,
    });

    // Assess
    const templatePath = path.join(outdir, 'SmokeBridge.template.json');
    expect(existsSync(templatePath)).toBe(true);
    const template = JSON.parse(readFileSync(templatePath, 'utf8')) as { Resources: Record<string, { Type: string; Properties: Record<string, any> }> };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(functions).toHaveLength(HANDLER_NAMES.length);
    for (const fn of functions) expect(fn.Properties.Environment.Variables.MAX_CONCURRENT_PROCESSINGS).toBe('3');
  }, 120_000);
});

describe('bundling', () => {
  /**
   * Modules a bundle may still name at run time: Node built-ins, and the SDK's
   * optional SigV4a signers (only for S3 multi-region access points, which the
   * bridge never uses; the SDK loads them in a try and names them in an error text).
   */
  const RUNTIME_MODULE = /^(node:.+|@aws-sdk\/signature-v4-crt|@aws-sdk\/signature-v4a)$/;

  it('bundles every handler with the local esbuild into ESM with the createRequire banner, and each loads on Node 24 (cold start)', async () => {
    // Prepare: any attempt to use Docker would fail (CDK runs $CDK_DOCKER for container bundling).
    const savedDocker = process.env.CDK_DOCKER;
    process.env.CDK_DOCKER = path.join(tempDir('no-docker'), 'docker-is-not-allowed');
    const outdir = tempDir('bundle');
    const app = new App({ outdir });
    const stack = new Stack(app, 'Bundle');
    for (const name of HANDLER_NAMES) {
      new BridgeFunction(stack, functionId(name), {
        name,
        environment: { LEDGER_TABLE: 'ledger', STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:000000000000:stateMachine:m' },
        logRetention: logs.RetentionDays.ONE_DAY,
        removalPolicy: RemovalPolicy.DESTROY,
      });
    }

    // Act
    let assembly;
    try {
      assembly = app.synth();
    } finally {
      if (savedDocker === undefined) delete process.env.CDK_DOCKER;
      else process.env.CDK_DOCKER = savedDocker;
    }
    // Each function's asset, found through its template (Code.S3Key is '<asset hash>.zip').
    const template = assembly.getStackByName('Bundle').template as { Resources: Record<string, { Type: string; Properties: any }> };
    const bundles = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::Lambda::Function')
      .map((r) => ({
        name: r.Properties.Environment.Variables.BRIDGE_FUNCTION as string,
        file: path.join(outdir, `asset.${String(r.Properties.Code.S3Key).replace(/\.zip$/, '')}`, 'index.mjs'),
      }));
    const loaded = await Promise.all(
      bundles.map(async ({ name, file }) => {
        const { stdout } = await run(
          process.execPath,
          ['--input-type=module', '-e', `const m = await import(${JSON.stringify(file)}); console.log(typeof m.handler);`],
          { env: envWithoutAws({ LEDGER_TABLE: 'ledger', AWS_REGION: 'us-east-1' }), timeout: 60_000 },
        );
        return [name, stdout.trim()] as const;
      }),
    );

    // Assess
    expect(bundles.map((b) => b.name).sort()).toEqual([...HANDLER_NAMES].sort());
    expect(Object.fromEntries(loaded)).toEqual(Object.fromEntries(HANDLER_NAMES.map((n) => [n, 'function'])));
    for (const { name, file } of bundles) {
      const code = readFileSync(file, 'utf8');
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
  }, 600_000);
});
