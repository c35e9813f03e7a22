/**
 * What `cdk deploy` uploads: the README's app (`npx cdk synth -o <dir>`, with
 * bundling on, as a user runs it) gives every bridge function a bundle of its
 * own handler. Each bundle exports its catalogue name (BRIDGE_HANDLER), and
 * the test imports each asset's index.mjs and compares that name with the
 * function's BRIDGE_FUNCTION. Before the fix in lib/private/bridge-function.ts all
 * functions shared register-job's bundle (CDK's asset cache key could not
 * tell the handlers apart).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../functions/core/catalog.ts';
import { bridgeFunctionsOf, handlerNameOfBundle, type AssemblyFunction } from '../support/assembly.ts';
import { testTmp } from '../support/temp.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CDK = path.join(ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk');

describe('the synthesized assembly of the README app', () => {
  let outDir = '';
  let functions: AssemblyFunction[] = [];

  beforeAll(async () => {
    // Act: the README's command, bundling on
    outDir = await mkdtemp(path.join(testTmp(), 'mfb-synth-'));
    await run(process.execPath, [CDK, 'synth', '-q', '-o', outDir], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, CDK_DISABLE_VERSION_CHECK: '1' } }).catch(
      (error: { stdout?: string; stderr?: string }) => {
        throw new Error(`cdk synth failed:\n${error.stdout ?? ''}\n${error.stderr ?? String(error)}`);
      },
    );
    functions = await bridgeFunctionsOf(outDir, 'MapflowBridge.template.json');
  }, 240_000);
  afterAll(async () => {
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  it('has one function for every handler of the catalogue', () => {
    // Assess
    expect(functions.map((fn) => fn.bridgeFunction).sort()).toEqual([...new Set(HANDLER_NAMES)].sort());
  });

  it('gives every function an asset of its own', () => {
    // Assess
    expect(new Set(functions.map((fn) => fn.assetDir)).size).toBe(functions.length);
  });

  it("runs each function's own handler: the bundle in its asset exports the function's catalogue name", async () => {
    // Act
    const found = await Promise.all(functions.map(async (fn) => [fn.bridgeFunction, await handlerNameOfBundle(fn.assetDir)] as const));
    // Assess
    for (const [expected, actual] of found) expect(actual, `asset of ${expected}`).toBe(expected);
  }, 60_000);
});
