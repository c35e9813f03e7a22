/**
 * Slow-path smoke tests: the real app entry (bin/app.ts) synthesizes without
 * AWS credentials, and one function is really bundled by the local esbuild
 * (no Docker) into an ESM bundle that loads on the pinned Node 24.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { BridgeFunction, PROJECT_ROOT } from '../../lib/bridge-function.ts';
import { ESM_REQUIRE_BANNER } from '../../lib/defaults.ts';
import { RemovalPolicy } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';

const run = promisify(execFile);
const dirs: string[] = [];
const tempDir = (name: string) => {
  const dir = mkdtempSync(path.join(tmpdir(), `mapflow-bridge-${name}-`));
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
    expect(functions).toHaveLength(15);
    for (const fn of functions) expect(fn.Properties.Environment.Variables.MAX_CONCURRENT_PROCESSINGS).toBe('3');
  }, 120_000);
});

describe('bundling', () => {
  it('bundles a handler with the local esbuild into ESM with the createRequire banner, and it loads on Node 24', async () => {
    // Prepare: any attempt to use Docker would fail (CDK runs $CDK_DOCKER for container bundling).
    const savedDocker = process.env.CDK_DOCKER;
    process.env.CDK_DOCKER = path.join(tempDir('no-docker'), 'docker-is-not-allowed');
    const outdir = tempDir('bundle');
    const app = new App({ outdir });
    const stack = new Stack(app, 'Bundle');
    new BridgeFunction(stack, 'Dispatch', {
      name: 'dispatch',
      environment: { LEDGER_TABLE: 'ledger', STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:000000000000:stateMachine:m' },
      logRetention: logs.RetentionDays.ONE_DAY,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // Act
    try {
      app.synth();
    } finally {
      if (savedDocker === undefined) delete process.env.CDK_DOCKER;
      else process.env.CDK_DOCKER = savedDocker;
    }
    const assetDir = readdirSync(outdir)
      .filter((d) => d.startsWith('asset.'))
      .map((d) => path.join(outdir, d))
      .find((d) => existsSync(path.join(d, 'index.mjs')));

    // Assess
    expect(assetDir).toBeDefined();
    const bundle = path.join(assetDir!, 'index.mjs');
    const code = readFileSync(bundle, 'utf8');
    expect(code.startsWith(ESM_REQUIRE_BANNER)).toBe(true);
    expect(existsSync(`${bundle}.map`)).toBe(true);
    const { stdout } = await run(
      process.execPath,
      ['--input-type=module', '-e', `const m = await import(${JSON.stringify(bundle)}); console.log(typeof m.handler);`],
      { env: envWithoutAws({ LEDGER_TABLE: 'ledger', AWS_REGION: 'us-east-1' }), timeout: 60_000 },
    );
    expect(stdout.trim()).toBe('function');
  }, 120_000);
});
