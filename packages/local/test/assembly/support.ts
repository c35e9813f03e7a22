/**
 * A function of the assembly for the runtime's tests: the handler source
 * written as `index.mjs` into a fresh asset folder, and the spec the template
 * reader would give for it (packages/local/src/assembly/template.ts).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AssemblyFunctionSpec } from '../../src/assembly/template.ts';
import { testTmp } from '../../../../test/support/temp.ts';

export interface HandlerSpecOptions {
  /** The template's logical id. @default 'Handler' */
  logicalId?: string;
  /** @default 30 */
  timeoutSeconds?: number;
  /** @default 256 */
  memoryMb?: number;
}

/** The spec of bridge function `bridgeFunction` (named `mapflow-bridge-<name>`) whose bundle is `handlerSource`. */
export async function handlerSpec(bridgeFunction: string, handlerSource: string, options: HandlerSpecOptions = {}): Promise<AssemblyFunctionSpec> {
  const assetDir = await mkdtemp(path.join(testTmp(), `mfb-${bridgeFunction}-`));
  await writeFile(path.join(assetDir, 'index.mjs'), handlerSource);
  const functionName = `mapflow-bridge-${bridgeFunction}`;
  return {
    logicalId: options.logicalId ?? 'Handler',
    bridgeFunction,
    functionName,
    arn: `arn:aws:lambda:eu-central-1:000000000000:function:${functionName}`,
    assetDir,
    moduleFile: 'index',
    exportName: 'handler',
    timeoutSeconds: options.timeoutSeconds ?? 30,
    memoryMb: options.memoryMb ?? 256,
    environment: {},
  };
}
