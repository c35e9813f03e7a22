/**
 * A pause is not a timeout (issue 39, point 4): a bridge stopped with SIGSTOP
 * for longer than a function's Timeout, then continued, finishes the
 * invocation that was in flight; a handler that really hangs still times out.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { handlerSpec } from './support.ts';

const FUNCTIONS = fileURLToPath(new URL('../../src/assembly/functions.ts', import.meta.url));

/** A process that invokes a function once (Timeout `timeoutSeconds`) whose handler waits `handlerMs`, and prints the outcome. */
async function invoker(timeoutSeconds: number, handlerMs: number): Promise<ReturnType<typeof spawn>> {
  const handler = `export const handler = async () => { await new Promise((r) => setTimeout(r, ${handlerMs})); return { ok: true }; };\n`;
  const spec = await handlerSpec('finish-job', handler, { logicalId: 'FinishJob', timeoutSeconds });
  const script = `
    const { LocalFunction } = await import(${JSON.stringify(FUNCTIONS)});
    const fn = new LocalFunction({ spec: ${JSON.stringify(spec)}, environment: {}, isolation: 'thread' });
    await fn.prewarm();
    console.log('invoking');
    const outcome = await fn.invoke({}).then((value) => ({ value }), (error) => ({ error: error.name + ': ' + error.message }));
    console.log(JSON.stringify(outcome));
    await fn.close();
  `;
  // A file, not -e: the function's worker inherits this process's flags, and --input-type would refuse its entry.
  const file = path.join(spec.assetDir, 'invoker.mjs');
  await writeFile(file, script);
  return spawn(process.execPath, ['--import', 'tsx', file], { stdio: ['ignore', 'pipe', 'inherit'] });
}

async function outcomeOf(child: ReturnType<typeof spawn>, pauseMs: number): Promise<{ value?: unknown; error?: string }> {
  const lines = createInterface({ input: child.stdout! });
  const iterator = lines[Symbol.asyncIterator]();
  expect((await iterator.next()).value).toBe('invoking');
  if (pauseMs > 0) {
    // Act: the whole process stands still (as Ctrl-Z or a debugger stops it), then goes on
    child.kill('SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    child.kill('SIGCONT');
  }
  const line = (await iterator.next()).value as string;
  await once(child, 'exit');
  return JSON.parse(line) as { value?: unknown; error?: string };
}

describe('a function invocation while the bridge stands still', () => {
  it.skipIf(process.platform === 'win32')('finishes when the bridge was stopped longer than its Timeout, then continued', { timeout: 60_000 }, async () => {
    // Prepare: Timeout 4 s, a handler of 1 s
    const child = await invoker(4, 1_000);

    // Act + Assess: stopped for 7 s mid-invocation
    expect(await outcomeOf(child, 7_000)).toEqual({ value: { ok: true } });
  });

  it('still times out a handler that runs past its Timeout', { timeout: 60_000 }, async () => {
    // Prepare: Timeout 1 s, a handler of 10 s
    const child = await invoker(1, 10_000);

    // Act + Assess
    expect((await outcomeOf(child, 0)).error).toMatch(/Sandbox\.Timedout.*Task timed out after 1\.00 seconds/);
  });
});
