/**
 * Issue 23 (a): a decode of untrusted bytes runs where its memory is bounded,
 * off-heap allocations included (a worker thread's resourceLimits bound only
 * its V8 heap). A function environment of isolation 'process' (the
 * functions that decode the input) is a child process whose resident memory
 * is held to the template's MemorySize: an allocation beyond it ends that
 * process with Runtime.OutOfMemory, this process lives on, the next
 * invocation gets a fresh environment, and Fail Job ends the job REJECTED.
 * Two watchdogs hold it there: this process reading the child's /proc status
 * (Linux), or, where there is no /proc (macOS), the child itself from a
 * thread of its own; both are run here, on any platform the second.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { overrunAsRejection } from '../../../../functions/jobs/steps/fail-job.ts';
import { jobErrorFromTaskError } from '../../../../functions/jobs/outcome.ts';
import type { WorkflowState } from '../../../../functions/jobs/workflow.ts';
import { EnvironmentBudget, LocalFunction, memoryWatchOf, THREAD_HEAP_LIMIT_MB, threadExecArgv, type MemoryWatch } from '../../src/assembly/functions.ts';
import { LambdaFunctionError } from '../../src/engine/lambda.ts';
import { testTmp } from '../../../../test/support/temp.ts';
import { handlerSpec } from './support.ts';

const MiB = 1024 * 1024;

/** A handler that holds `mb` MiB of Buffers (off the V8 heap), each page written so it is resident, or `heapMb` MiB on the heap. */
const HANDLER = `export const handler = async (event) => {
  const held = [];
  // On the V8 heap instead: arrays of 1 MiB of doubles.
  if (event.heapMb) {
    for (let i = 0; i < event.heapMb; i++) held.push(new Array(128 * 1024).fill(i + 0.5));
    return { heap: held.length };
  }
  for (let i = 0; i < event.mb; i += 16) held.push(Buffer.alloc(16 * 1024 * 1024).fill(1));
  return { held: held.length * 16, pid: process.pid };
};
`;

async function functionOf(
  memoryMb: number,
  isolation: 'thread' | 'process',
  memoryWatch?: MemoryWatch,
  shared: { name?: string; budget?: EnvironmentBudget; maxEnvironments?: number } = {},
): Promise<LocalFunction> {
  const spec = await handlerSpec(shared.name ?? 'inspect-geotiff', HANDLER, { logicalId: 'Decode', timeoutSeconds: 60, memoryMb });
  return new LocalFunction({
    spec,
    environment: {},
    isolation,
    ...(memoryWatch && { memoryWatch }),
    ...(shared.budget && { budget: shared.budget }),
    ...(shared.maxEnvironments !== undefined && { maxEnvironments: shared.maxEnvironments }),
  });
}

let fn: LocalFunction | undefined;
afterEach(async () => fn?.close());

describe('a thread environment (a light step, in the bridge\'s own process)', () => {
  it('cannot grow its heap past THREAD_HEAP_LIMIT_MB, whatever its MemorySize: the invocation ends Runtime.OutOfMemory, this process lives on and the next one runs', { timeout: 120_000 }, async () => {
    // Prepare: a light function of 512 MB, as the template's
    fn = await functionOf(512, 'thread', undefined, { name: 'create-processing' });
    // Act: twice the thread's limit on its heap, well within the function's MemorySize
    const overrun = await fn.invoke({ heapMb: 2 * THREAD_HEAP_LIMIT_MB }).then(
      () => undefined,
      (error: unknown) => error as LambdaFunctionError,
    );
    const next = await fn.invoke({ heapMb: 16 });
    // Assess
    expect(overrun).toBeInstanceOf(LambdaFunctionError);
    expect(overrun).toMatchObject({ errorType: 'Runtime.OutOfMemory' });
    expect(overrun?.errorMessage).toContain(`more than its ${THREAD_HEAP_LIMIT_MB} MB`);
    expect(next).toEqual({ heap: 16 });
    expect(fn.coldStarts).toBe(2);
  });

  it('keeps one thread of a light function warm after a burst, not one per environment the burst started', { timeout: 60_000 }, async () => {
    // Prepare: a light function of up to two environments
    fn = await functionOf(512, 'thread', undefined, { name: 'finish-job', maxEnvironments: 2 });
    // Act: two invocations at once (two environments), then a third after both
    await Promise.all([fn.invoke({ mb: 0 }), fn.invoke({ mb: 0 })]);
    const warmAfterBurst = fn.idleEnvironments;
    await fn.invoke({ mb: 0 });
    // Assess: the burst started two, one waits warm and served the third
    expect(fn.coldStarts).toBe(2);
    expect(warmAfterBurst).toBe(1);
    expect(fn.idleEnvironments).toBe(1);
  });

  it('gets this process\'s Node flags but tsx\'s loader (the bundles are JavaScript): a bridge run as `node --import tsx` loads no tsx in its functions', { timeout: 60_000 }, async () => {
    // Prepare: a script, run as the test bridges of hostile-start are, that asks a thread environment for its flags
    const spec = await handlerSpec('finish-job', 'export const handler = async () => ({ execArgv: process.execArgv });', { logicalId: 'Flags', timeoutSeconds: 30, memoryMb: 128 });
    const script = path.join(spec.assetDir, 'ask.mts');
    await writeFile(
      script,
      `import { LocalFunction } from ${JSON.stringify(new URL('../../src/assembly/functions.ts', import.meta.url).href)};\n` +
        `const fn = new LocalFunction({ spec: ${JSON.stringify(spec)}, environment: {}, isolation: 'thread' });\n` +
        `console.log(JSON.stringify(await fn.invoke({})));\n` +
        `await fn.close();\n`,
    );

    // Act
    const ask = async (flags: string[]) => JSON.parse((await promisify(execFile)(process.execPath, [...flags, script], { cwd: new URL('../../', import.meta.url) })).stdout) as unknown;
    const withTsx = await ask(['--import', 'tsx', '--conditions=mapflow-test']);
    // A V8 option may not be given to a thread explicitly, only inherited: the thread then gets them all.
    const withV8Option = await ask(['--stack-size=2000', '--import', 'tsx']);

    // Assess: the other flag passes on, tsx does not; a list Node refuses falls back to inheriting it
    expect(withTsx).toEqual({ execArgv: ['--conditions=mapflow-test'] });
    expect(withV8Option).toEqual({ execArgv: ['--stack-size=2000', '--import', 'tsx'] });
  });
});

describe('the Node flags of a thread environment', () => {
  it('are this process\'s without tsx, in every form a preload is written, and inherited when there is no tsx', () => {
    // Prepare
    const cases: [string[], string[] | undefined][] = [
      [['--import', 'tsx', '--conditions', 'development'], ['--conditions', 'development']],
      [['--import=tsx/esm', '--require', 'tsx/cjs'], []],
      [['--loader', 'file:///app/node_modules/tsx/dist/esm/index.mjs', '--enable-source-maps'], ['--enable-source-maps']],
      [['--import', 'file:///t/record-modules.mjs?file=x', '--import', 'tsx'], ['--import', 'file:///t/record-modules.mjs?file=x']],
      // Nothing to take out: undefined, the thread inherits them
      [['--import', 'file:///t/record-modules.mjs?file=x', '-r', './setup.cjs'], undefined],
      [[], undefined],
    ];
    // Act + Assess
    for (const [given, expected] of cases) expect(threadExecArgv(given), given.join(' ')).toEqual(expected);
  });
});

describe('a process environment', () => {
  it.skipIf(process.platform !== 'linux')('ends an invocation that allocates off-heap beyond its MemorySize with Runtime.OutOfMemory (watched through /proc); this process lives on and the next one runs', { timeout: 120_000 }, async () => {
    // Prepare: 192 MB of memory, watched from here through /proc; this process's resident memory before
    fn = await functionOf(192, 'process', 'proc');
    const small = (await fn.invoke({ mb: 16 })) as { held: number; pid: number };
    const rssBefore = process.memoryUsage.rss();

    // Act: 1 GiB of Buffers, five times the bound
    const overrun = await fn.invoke({ mb: 1024 }).catch((error: unknown) => error);
    const rssAfter = process.memoryUsage.rss();
    const next = (await fn.invoke({ mb: 16 })) as { held: number; pid: number };

    // Assess: Lambda's error, none of the memory in this process, a fresh environment after it
    expect(small.pid).not.toBe(process.pid);
    expect(overrun).toBeInstanceOf(LambdaFunctionError);
    expect(overrun).toMatchObject({ errorType: 'Runtime.OutOfMemory' });
    expect((overrun as LambdaFunctionError).errorMessage).toMatch(/more than its 192 MB \(resident memory \d+ MB\)/);
    expect(rssAfter - rssBefore).toBeLessThan(128 * MiB);
    expect(next.held).toBe(16);
    expect(next.pid).not.toBe(small.pid);
  });

  it('holds itself to its MemorySize where this process cannot read its memory (no /proc, as on macOS): the same Runtime.OutOfMemory, the next one runs', { timeout: 120_000 }, async () => {
    // Prepare: 192 MB of memory, watched only by the child's own thread (this process reads nothing)
    fn = await functionOf(192, 'process', 'self');
    const small = (await fn.invoke({ mb: 16 })) as { held: number; pid: number };
    const rssBefore = process.memoryUsage.rss();

    // Act: 1 GiB of Buffers, allocated in one synchronous loop (the child's main thread never yields)
    const overrun = await fn.invoke({ mb: 1024 }).catch((error: unknown) => error);
    const rssAfter = process.memoryUsage.rss();
    const next = (await fn.invoke({ mb: 16 })) as { held: number; pid: number };

    // Assess: stopped by the child's own measure, named as such; nothing of it here; a fresh environment after it
    expect(overrun).toBeInstanceOf(LambdaFunctionError);
    expect(overrun).toMatchObject({ errorType: 'Runtime.OutOfMemory' });
    expect((overrun as LambdaFunctionError).errorMessage).toMatch(/more than its 192 MB \(resident memory (\d+) MB, measured by the process itself\)/);
    const measured = Number(/resident memory (\d+) MB/.exec((overrun as LambdaFunctionError).errorMessage)?.[1]);
    // Whole MB, rounded: a process stopped just past its 192 MB (192.3) reads 192.
    expect(measured).toBeGreaterThanOrEqual(192);
    expect(measured).toBeLessThan(1024);
    expect(rssAfter - rssBefore).toBeLessThan(128 * MiB);
    expect(next.held).toBe(16);
    expect(next.pid).not.toBe(small.pid);
  });

  it('is retired after an invocation that left it large, by the memory it reports itself where /proc is not read', { timeout: 120_000 }, async () => {
    // Prepare: 256 MB, watched by itself; a warm environment
    fn = await functionOf(256, 'process', 'self');
    const first = (await fn.invoke({ mb: 16 })) as { pid: number };
    const warm = (await fn.invoke({ mb: 16 })) as { pid: number };

    // Act: 144 MiB of Buffers held during one invocation (resident after it: above RETIRE_ABOVE_RSS_BYTES, 128 MB)
    const large = (await fn.invoke({ mb: 144 })) as { pid: number };
    const next = (await fn.invoke({ mb: 16 })) as { pid: number };

    // Assess: kept warm while small, a fresh process after the large one
    expect(warm.pid).toBe(first.pid);
    expect(large.pid).toBe(first.pid);
    expect(next.pid).not.toBe(large.pid);
  });

  it('is watched through /proc on Linux and by itself elsewhere', () => {
    // Act
    const watch = memoryWatchOf();

    // Assess
    expect(watch).toBe(process.platform === 'linux' ? 'proc' : 'self');
    expect(memoryWatchOf('self')).toBe('self');
  });

  it('keeps an environment warm between invocations', { timeout: 60_000 }, async () => {
    // Prepare
    fn = await functionOf(192, 'process');

    // Act
    const first = (await fn.invoke({ mb: 16 })) as { pid: number };
    const second = (await fn.invoke({ mb: 16 })) as { pid: number };

    // Assess
    expect(second.pid).toBe(first.pid);
    expect(fn.environments).toBe(1);
  });
});

describe('a budget shared by two functions', () => {
  let other: LocalFunction | undefined;
  afterEach(async () => other?.close());

  it('wakes an invocation waiting for its function\'s only place when the budget lets that place\'s idle environment go', { timeout: 60_000 }, async () => {
    // Prepare: room for one invoked environment (128 MiB) for both; the first function may have one environment, warm and idle after a first invocation
    const budget = new EnvironmentBudget(128, 128);
    fn = await functionOf(128, 'thread', undefined, { name: 'register-job', budget, maxEnvironments: 1 });
    other = await functionOf(128, 'thread', undefined, { name: 'finish-job', budget, maxEnvironments: 1 });
    await fn.invoke({ mb: 0 });

    // Act: the other function takes the unit (letting the idle environment go) while the first is invoked again
    const results = await Promise.all([other.invoke({ mb: 0 }), fn.invoke({ mb: 0 })]);

    // Assess: both answered (before, the second invocation of the first waited forever), two cold starts for the first
    expect(results).toHaveLength(2);
    expect(fn.coldStarts).toBe(2);
    expect(other.coldStarts).toBe(1);
  });

  it('hands a finished environment to the next invocation of its function, so another function waiting on the budget cannot let it go mid-burst', { timeout: 60_000 }, async () => {
    // Prepare: room for one invoked environment (128 MiB) for both functions, one environment each at most
    const budget = new EnvironmentBudget(128, 128);
    fn = await functionOf(128, 'thread', undefined, { name: 'register-job', budget, maxEnvironments: 1 });
    other = await functionOf(128, 'thread', undefined, { name: 'finish-job', budget, maxEnvironments: 1 });

    // Act: a burst of four invocations of the first function, and one of the other waiting on the budget behind them
    const burst = [fn.invoke({ mb: 0 }), fn.invoke({ mb: 0 }), fn.invoke({ mb: 0 })];
    const waiting = other.invoke({ mb: 0 });
    burst.push(fn.invoke({ mb: 0 }));
    await Promise.all([...burst, waiting]);

    // Assess: the burst ran on one environment (before: the waiting function let it go after each invocation, and the next one started cold)
    expect(fn.coldStarts).toBe(1);
    expect(other.coldStarts).toBe(1);
  });

  it('refuses at once an environment heavier than the whole budget, which would wait for room forever', async () => {
    // Prepare: 256 MiB, half of it the decoding processes' share; a decoding process of 192 MiB
    const budget = new EnvironmentBudget(256);

    // Act
    const made = functionOf(192, 'process', undefined, { name: 'inspect-geotiff', budget });

    // Assess
    await expect(made).rejects.toThrow(/mapflow-bridge-inspect-geotiff: an environment holds up to 192 MiB \(its MemorySize\), but the decoding processes' share of the memory budget is 128 MiB; give a budget of at least 384 MiB/);
  });

  it('never starts more environments than a function may have, however many invocations wait on the budget', { timeout: 60_000 }, async () => {
    // Prepare: a budget held by the other function's environment, the first function allowed one
    const budget = new EnvironmentBudget(128, 128);
    fn = await functionOf(128, 'thread', undefined, { name: 'register-job', budget, maxEnvironments: 1 });
    other = await functionOf(128, 'thread', undefined, { name: 'finish-job', budget, maxEnvironments: 1 });
    await other.invoke({ mb: 0 });

    // Act: three invocations at once, all waiting for the budget
    await Promise.all([fn.invoke({ mb: 0 }), fn.invoke({ mb: 0 }), fn.invoke({ mb: 0 })]);

    // Assess: one environment served all three, one after another
    expect(fn.coldStarts).toBe(1);
  });
});

describe('warm decoding processes in a shared budget', () => {
  const others: LocalFunction[] = [];
  afterEach(async () => {
    await Promise.all(others.splice(0).map((other) => other.close()));
  });

  it('keep only their idle weight while they wait, so the light steps do not let them go', { timeout: 120_000 }, async () => {
    // Prepare: 512 MiB, 384 of them the decoding share (one process of 256 invoked beside another warm at 128); a job's two decoding steps and a light one
    const budget = new EnvironmentBudget(512, 128);
    fn = await functionOf(256, 'process', undefined, { name: 'plan-processing', budget });
    const store = await functionOf(256, 'process', undefined, { name: 'store-results', budget });
    const light = await functionOf(128, 'thread', undefined, { name: 'finish-job', budget });
    others.push(store, light);

    // Act: two jobs, each its decoding steps then its light step
    for (let job = 0; job < 2; job++) {
      await fn.invoke({ mb: 0 });
      await store.invoke({ mb: 0 });
      await light.invoke({ mb: 0 });
    }

    // Assess: one cold start each (had idle processes weighed their MemorySize, the second would have let the first go, and the next job started it cold)
    expect([fn.coldStarts, store.coldStarts, light.coldStarts]).toEqual([1, 1, 1]);
    expect(budget.used).toBe(128 + 128 + 64);
  });

  it('take their full weight back before they decode: three warm at once, never more than the budget, all answer', { timeout: 120_000 }, async () => {
    // Prepare: three decoding functions of 256 MiB warm (128 each) in a decoding share of 512 MiB
    const budget = new EnvironmentBudget(768, 256);
    fn = await functionOf(256, 'process', undefined, { name: 'inspect-geotiff', budget });
    const plan = await functionOf(256, 'process', undefined, { name: 'plan-processing', budget });
    const upload = await functionOf(256, 'process', undefined, { name: 'upload-image', budget });
    others.push(plan, upload);
    for (const decoder of [fn, plan, upload]) await decoder.invoke({ mb: 0 });
    expect(budget.used).toBe(3 * 128);

    // Act: all three at once (256 + 256 + 256 would be 768 MiB of processes)
    const answers = await Promise.all([fn, plan, upload].map((decoder) => decoder.invoke({ mb: 0 })));

    // Assess: all answered; a warm process took its full weight back to decode (256 beside two idle: 512), never past
    // the decoding share (a third waited, or let an idle one go), and each waits warm again at its idle weight
    expect(answers).toHaveLength(3);
    expect(budget.peakByProcesses).toBeGreaterThanOrEqual(512);
    expect(budget.peakByProcesses).toBeLessThanOrEqual(512);
    expect(budget.used).toBe(128 * (fn.environments + plan.environments + upload.environments));
  });
});

describe('an out-of-memory step at Fail Job', () => {
  // The error as the local engine hands it to the top-level Catch (Error = errorType, Cause = the invocation's error).
  const caught = (error: LambdaFunctionError) => ({ Error: error.errorType, Cause: error.message });
  const oom = new LambdaFunctionError('Runtime.OutOfMemory', 'Runtime exited: the function used more than its 1024 MB (resident memory 1100 MB)');
  const state = (parts?: WorkflowState['parts']) => ({ jobId: 'j', input: { bucket: 'b', key: 'inbox/a.tif' }, ...(parts && { parts }) }) as WorkflowState;

  it('is a REJECTED job (INPUT_TOO_COMPLEX) while nothing was created in Mapflow', () => {
    // Act
    const outcome = overrunAsRejection(jobErrorFromTaskError(caught(oom)), state());

    // Assess
    expect(outcome.rejected).toBe(true);
    expect(outcome.error.code).toBe('INPUT_TOO_COMPLEX');
    expect(outcome.error.message).toMatch(/more memory than the bridge allows one step .*1024 MB.*nothing was sent to Mapflow/);
  });

  it('counts a sandbox killed by the kernel (Runtime.ExitError "signal: killed", as AWS reports some overruns) as the same overrun', () => {
    // Act
    const killed = overrunAsRejection(jobErrorFromTaskError(caught(new LambdaFunctionError('Runtime.ExitError', 'RequestId: 0f1e Error: Runtime exited with error: signal: killed'))), state());

    // Assess
    expect(killed).toMatchObject({ rejected: true, error: { code: 'INPUT_TOO_COMPLEX' } });
  });

  it('stays FAILED once a processing ran (Store Results), and other errors keep their code', () => {
    // Act
    const afterProcessing = overrunAsRejection(jobErrorFromTaskError(caught(oom)), state([{ index: 0 } as never]));
    const other = overrunAsRejection(jobErrorFromTaskError(caught(new LambdaFunctionError('Runtime.ExitError', 'Runtime exited with error: signal: SIGSEGV'))), state());

    // Assess
    expect(afterProcessing).toMatchObject({ rejected: false, error: { code: 'RUNTIME_OUT_OF_MEMORY' } });
    expect(other).toMatchObject({ rejected: false, error: { code: 'RUNTIME_EXIT_ERROR' } });
  });
});

describe("a function's log file on a full disk", () => {
  it.skipIf(process.platform !== 'linux')('is an error told once, not a crash: the invocations go on', { timeout: 60_000 }, async () => {
    // Prepare: the log file is /dev/full, whose every write fails with ENOSPC, as on a full disk
    const spec = await handlerSpec('finish-job', 'export const handler = async () => { console.log("a line for the log"); return { ok: true }; };\n', { logicalId: 'FinishJob' });
    const logDir = await mkdtemp(path.join(testTmp(), 'mfb-logs-'));
    await symlink('/dev/full', path.join(logDir, 'mapflow-bridge-finish-job.log'));
    const told: string[] = [];
    // The write error arrives asynchronously, after the output that caused it: wait for it, not for time.
    let firstTold!: () => void;
    const toldOnce = new Promise<void>((resolve) => (firstTold = resolve));
    fn = new LocalFunction({
      spec,
      environment: {},
      isolation: 'thread',
      logDir,
      onLogError: (message) => {
        told.push(message);
        firstTold();
      },
    });

    // Act
    const first = await fn.invoke({});
    const second = await fn.invoke({});

    await toldOnce;

    // Assess
    expect([first, second]).toEqual([{ ok: true }, { ok: true }]);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/the disk is full/);
  });
});
