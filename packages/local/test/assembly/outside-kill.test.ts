/**
 * Issue 39 (5): a decoding function's process killed from outside (a kill -9
 * of that process alone) fails no good job: its invocation runs once more on
 * a fresh environment. A death the process caused itself (a native abort) is
 * the invocation's error at once, as before, and a second death from outside
 * too.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalFunction } from '../../src/assembly/functions.ts';
import { LambdaFunctionError } from '../../src/engine/lambda.ts';
import { handlerSpec } from './support.ts';

/**
 * Each attempt appends a line to event.attempts; `hang` attempts wait (to be
 * killed), `until-released` ones until the file event.release exists, `abort`
 * ones abort their own process, the rest answer.
 */
const HANDLER = `import { appendFileSync, existsSync, readFileSync } from 'node:fs';
export const handler = async (event) => {
  appendFileSync(event.attempts, process.pid + '\\n');
  const attempt = readFileSync(event.attempts, 'utf8').trim().split('\\n').length;
  const mode = event.modes[attempt - 1] ?? 'answer';
  if (mode === 'abort') process.abort();
  if (mode === 'hang') await new Promise((resolve) => setTimeout(resolve, 600_000));
  if (mode === 'until-released') while (!existsSync(event.release)) await new Promise((resolve) => setTimeout(resolve, 20));
  return { attempt };
};
`;

async function storeResults(): Promise<{ fn: LocalFunction; dir: string; told: string[] }> {
  const spec = await handlerSpec('store-results', HANDLER, { logicalId: 'StoreResults', timeoutSeconds: 600 });
  const told: string[] = [];
  return { fn: new LocalFunction({ spec, environment: {}, isolation: 'process', onOutsideKill: (line) => told.push(line) }), dir: spec.assetDir, told };
}

/** Waits until the function's invoked process has run its handler `count` times (its pid in the attempts file), and returns that pid. */
async function busyPidAfter(fn: LocalFunction, attempts: string, count: number): Promise<number> {
  for (;;) {
    const lines = existsSync(attempts) ? (await readFile(attempts, 'utf8')).trim().split('\n').filter(Boolean) : [];
    const pid = fn.busyProcessIds[0];
    if (lines.length >= count && pid !== undefined && Number(lines.at(-1)) === pid) return pid;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let fn: LocalFunction | undefined;
afterEach(async () => fn?.close());

describe('a process environment killed from outside', () => {
  it('runs its invocation once more on a fresh environment, which answers', { timeout: 60_000 }, async () => {
    // Prepare: Store Results, whose first attempt hangs
    const made = await storeResults();
    fn = made.fn;
    const attempts = path.join(made.dir, 'attempts');
    const answer = fn.invoke({ attempts, modes: ['hang'] });

    // Act: kill -9 of its process, from outside
    process.kill(await busyPidAfter(fn, attempts, 1), 'SIGKILL');

    // Assess: the invocation answered from its second attempt, in another process, and the bridge said why
    expect(await answer).toEqual({ attempt: 2 });
    const pids = (await readFile(attempts, 'utf8')).trim().split('\n');
    expect(new Set(pids).size).toBe(2);
    expect(fn.coldStarts).toBe(2);
    expect(made.told).toEqual([expect.stringMatching(/mapflow-bridge-store-results's process was killed from outside \(Runtime.ExitError: Runtime exited with error: signal: SIGKILL\); its invocation runs once more/)]);
  });

  it('fails with Runtime.ExitError when the fresh environment is killed too (one retry, not more)', { timeout: 60_000 }, async () => {
    // Prepare: both attempts hang
    const made = await storeResults();
    fn = made.fn;
    const attempts = path.join(made.dir, 'attempts');
    const answer = fn.invoke({ attempts, modes: ['hang', 'hang'] }).catch((error: unknown) => error);

    // Act: kill -9 of each
    process.kill(await busyPidAfter(fn, attempts, 1), 'SIGKILL');
    process.kill(await busyPidAfter(fn, attempts, 2), 'SIGKILL');

    // Assess
    const error = await answer;
    expect(error).toBeInstanceOf(LambdaFunctionError);
    expect((error as LambdaFunctionError).errorType).toBe('Runtime.ExitError');
    expect((await readFile(attempts, 'utf8')).trim().split('\n')).toHaveLength(2);
  });

  it('does not retry a process that aborted itself (a death the input may have caused)', { timeout: 60_000 }, async () => {
    // Prepare: the first attempt aborts its own process
    const made = await storeResults();
    fn = made.fn;
    const attempts = path.join(made.dir, 'attempts');

    // Act
    const error = await fn.invoke({ attempts, modes: ['abort'] }).catch((caught: unknown) => caught);

    // Assess: the invocation's error at once, one attempt
    expect(error).toBeInstanceOf(LambdaFunctionError);
    expect((error as LambdaFunctionError).errorType).toBe('Runtime.ExitError');
    expect((error as LambdaFunctionError).errorMessage).toMatch(/SIGABRT/);
    expect((await readFile(attempts, 'utf8')).trim().split('\n')).toHaveLength(1);
    expect(made.told).toEqual([]);
  });

  it('is not ended by a Ctrl-C to the process group (SIGINT, SIGHUP, SIGTERM): the bridge stops its environments itself', { timeout: 60_000 }, async () => {
    // Prepare: an invocation that waits until the test releases it
    const made = await storeResults();
    fn = made.fn;
    const attempts = path.join(made.dir, 'attempts');
    const release = path.join(made.dir, 'release');
    const answer = fn.invoke({ attempts, release, modes: ['until-released'] });
    const pid = await busyPidAfter(fn, attempts, 1);

    // Act: the terminal's signals reach the process, then the invocation is released
    for (const signal of ['SIGINT', 'SIGHUP', 'SIGTERM'] as const) process.kill(pid, signal);
    await writeFile(release, '');

    // Assess: it answered from its first attempt, in the same process (before, SIGINT ended it mid-step)
    expect(await answer).toEqual({ attempt: 1 });
    expect(fn.coldStarts).toBe(1);
    expect(made.told).toEqual([]);
  });
});
