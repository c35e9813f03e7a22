/**
 * Issue 37 (10): a function's process runs on Node 24, as the template's
 * nodejs24.x runtime does, whatever Node runs the bridge (a system Node 20,
 * say): the binary of the project's `node` devDependency. Without that
 * package, the bridge's own Node, with a one-line warning.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { functionNodePath, LAMBDA_NODE_MAJOR, LocalFunction, resolveFunctionNode } from '../../src/assembly/functions.ts';
import { handlerSpec } from './support.ts';

const HANDLER = `export const handler = async () => ({ version: process.version, execPath: process.execPath, lambdaFlag: process.execArgv });\n`;

let fn: LocalFunction | undefined;
afterEach(async () => fn?.close());

describe('the Node.js of the functions', () => {
  it('runs a function process on Node 24, the binary of the node package, with only the heap limit as a flag', { timeout: 60_000 }, async () => {
    // Prepare: a decoding step (a process of its own)
    const spec = await handlerSpec('store-results', HANDLER, { logicalId: 'StoreResults', timeoutSeconds: 60 });
    fn = new LocalFunction({ spec, environment: {}, isolation: 'process' });
    // Act
    const answer = (await fn.invoke({})) as { version: string; execPath: string; lambdaFlag: string[] };
    // Assess
    expect(answer.version).toMatch(new RegExp(`^v${LAMBDA_NODE_MAJOR}\\.`));
    expect(answer.execPath).toBe(functionNodePath());
    expect(answer.lambdaFlag).toEqual(['--max-old-space-size=256']);
  });

  it('finds the binary where the node package is installed', () => {
    // Act
    const found = resolveFunctionNode((request) => path.join(process.cwd(), 'node_modules', request), () => undefined);
    // Assess
    expect(found).toBe(path.join(process.cwd(), 'node_modules', 'node', 'bin', 'node'));
  });

  it("falls back to the bridge's own Node without the package, saying so in one line unless it is Node 24 itself", () => {
    // Prepare
    const told: string[] = [];
    // Act
    const found = resolveFunctionNode(() => {
      throw new Error("Cannot find module 'node/package.json'");
    }, (line) => told.push(line));
    // Assess
    expect(found).toBe(process.execPath);
    expect(told).toHaveLength(process.version.startsWith(`v${LAMBDA_NODE_MAJOR}.`) ? 0 : 1);
    for (const line of told) expect(line).toContain(`npm install --save-dev node@${LAMBDA_NODE_MAJOR}`);
  });
});
