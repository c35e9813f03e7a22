import { describe, expect, it, vi } from 'vitest';
import { LocalEngine, UnboundTaskError } from '../../src/engine/engine.ts';
import { asTaskResource } from '../../src/engine/lambda.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';

const ARN = (fn: string) => `arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-${fn}`;

/** A small machine with the real Task names and the same Catch/Retry/Map shapes. */
function definition() {
  return {
    StartAt: 'Register Job',
    States: {
      'Register Job': {
        Type: 'Task',
        Resource: ARN('register-job'),
        Parameters: { 'jobId.$': '$.jobId', 'executionArn.$': '$$.Execution.Id' },
        ResultPath: '$.job',
        Retry: [{ ErrorEquals: ['MapflowUnavailable'], IntervalSeconds: 30, MaxAttempts: 2, BackoffRate: 2 }],
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Fail Job' }],
        Next: 'Process Parts',
      },
      'Process Parts': {
        Type: 'Map',
        ItemsPath: '$.job.parts',
        ItemSelector: { 'part.$': '$$.Map.Item.Value', 'jobId.$': '$.jobId' },
        ResultPath: '$.parts',
        ItemProcessor: {
          ProcessorConfig: { Mode: 'INLINE' },
          StartAt: 'Wait For Processing',
          States: {
            'Wait For Processing': { Type: 'Wait', Seconds: 60, Next: 'Finish Part' },
            'Finish Part': { Type: 'Task', Resource: ARN('finish-part'), End: true },
          },
        },
        Next: 'Finish Job',
      },
      'Finish Job': { Type: 'Task', Resource: ARN('finish-job'), ResultPath: '$.finish', End: true },
      'Fail Job': { Type: 'Task', Resource: ARN('fail-job'), ResultPath: '$.finish', Next: 'Job Failed' },
      'Job Failed': { Type: 'Fail', Error: 'JobFailed', Cause: 'see the ledger' },
    },
  };
}

type Handler = (event: unknown) => unknown;
function engineWith(handlers: Record<string, Handler>, extra: Partial<ConstructorParameters<typeof LocalEngine>[0]> = {}) {
  const taskResources = Object.fromEntries(
    Object.entries(handlers).map(([state, handler]) => [state, asTaskResource(async (e) => handler(e), { functionName: state, stateName: state })]),
  );
  return new LocalEngine({ definition: definition(), taskResources, waitOverridesMs: { 'Wait For Processing': 5 }, retryIntervalMs: 5, ...extra });
}

const noop: Record<string, Handler> = {
  'Register Job': (e) => ({ ...(e as object), parts: [1, 2] }),
  'Finish Part': (e) => ({ done: (e as { part: number }).part }),
  'Finish Job': () => ({ status: 'SUCCEEDED' }),
  'Fail Job': (e) => ({ status: 'FAILED', seen: e }),
};

describe('local engine', () => {
  it('runs Tasks in process with the execution ARN in the context and Map iterations', async () => {
    // Prepare
    const engine = engineWith(noop);
    // Act
    const outcome = await engine.start('job-1', { jobId: 'job-1' });
    const execution = await engine.waitFor('job-1');
    // Assess
    expect(outcome).toBe('started');
    expect(execution?.status).toBe('SUCCEEDED');
    const output = execution?.output as { job: { executionArn: string }; parts: unknown[]; finish: unknown };
    expect(output.job.executionArn).toBe('arn:aws:states:us-east-1:000000000000:execution:mapflow-bridge:job-1');
    expect(output.parts).toEqual([{ done: 1 }, { done: 2 }]);
    expect(output.finish).toEqual({ status: 'SUCCEEDED' });
  });

  it('ends the execution FAILED with the Fail state error after Catch', async () => {
    // Prepare
    const engine = engineWith({
      ...noop,
      'Register Job': () => {
        throw new InputRejected('NOT_GEOJSON', 'the file is JSON but not GeoJSON');
      },
    });
    // Act
    await engine.start('job-2', { jobId: 'job-2' });
    const execution = await engine.waitFor('job-2');
    // Assess: Fail Job saw the AWS shape, then the Fail state ended the execution.
    expect(execution?.status).toBe('FAILED');
    expect(execution?.error).toEqual({ Error: 'JobFailed', Cause: 'see the ledger' });
  });

  it('gives Fail Job the {Error, Cause} Step Functions writes for a Lambda error', async () => {
    // Prepare
    let seen: unknown;
    const engine = engineWith({
      ...noop,
      'Register Job': () => {
        throw new InputRejected('NOT_GEOJSON', 'the file is JSON but not GeoJSON');
      },
      'Fail Job': (e) => {
        seen = e;
        return {};
      },
    });
    // Act
    await engine.start('job-3', { jobId: 'job-3' });
    await engine.waitFor('job-3');
    // Assess
    const error = (seen as { error: { Error: string; Cause: string } }).error;
    expect(error.Error).toBe('InputRejected');
    expect(JSON.parse(error.Cause)).toEqual({ errorType: 'InputRejected', errorMessage: 'NOT_GEOJSON: the file is JSON but not GeoJSON' });
  });

  it('retries on the error name with the overridden pause', async () => {
    // Prepare
    let calls = 0;
    const engine = engineWith({
      ...noop,
      'Register Job': (e) => {
        calls++;
        if (calls < 3) throw Object.assign(new Error('503 from Mapflow'), { name: 'MapflowUnavailable' });
        return { ...(e as object), parts: [] };
      },
    });
    // Record the pauses the engine asks the timers for (a spy, not a clock: the
    // pauses themselves are the behaviour, so no test has to measure time).
    const pauses: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((handler: () => void, ms?: number) => {
      pauses.push(ms ?? 0);
      return realSetTimeout(handler, ms);
    }) as typeof setTimeout);
    // Act
    try {
      await engine.start('job-4', { jobId: 'job-4' });
      await engine.waitFor('job-4');
    } finally {
      spy.mockRestore();
    }
    const execution = await engine.waitFor('job-4');
    // Assess: two retries, each after the overridden 5 ms pause instead of the
    // definition's 30 s and 60 s.
    expect(calls).toBe(3);
    expect(execution?.status).toBe('SUCCEEDED');
    expect(pauses.filter((ms) => ms === 5)).toHaveLength(2);
    expect(pauses).not.toContain(30_000);
    expect(pauses).not.toContain(60_000);
  });

  it('answers duplicate for a running name, and for a failed one (a closed name is taken for 90 days, issue 37 point 4)', async () => {
    // Prepare
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let fail = true;
    const engine = engineWith({
      ...noop,
      'Register Job': async (e) => {
        await gate;
        if (fail) throw new Error('boom');
        return { ...(e as object), parts: [] };
      },
    });
    // Act / Assess
    expect(await engine.start('job-5', { jobId: 'job-5' })).toBe('started');
    expect(await engine.start('job-5', { jobId: 'job-5' })).toBe('duplicate');
    expect(await engine.isAlive('arn:aws:states:us-east-1:000000000000:execution:mapflow-bridge:job-5')).toBe(true);
    release();
    expect((await engine.waitFor('job-5'))?.status).toBe('FAILED');
    expect(await engine.isAlive('job-5')).toBe(false);
    fail = false;
    expect(await engine.start('job-5', { jobId: 'job-5' })).toBe('duplicate');
    expect(engine.describe('job-5')?.status).toBe('FAILED');
    expect(engine.resumeExecution('job-5').outcome).toBe('refused');
  });

  it('refuses a definition with a Task state that has no handler', () => {
    // Act / Assess
    expect(() => engineWith({ 'Register Job': noop['Register Job'] as Handler })).toThrow(UnboundTaskError);
  });

  it('fails with States.DataLimitExceeded, past Catch, when a result is above 256 KiB', async () => {
    // Prepare
    let failJobRan = false;
    const engine = engineWith({
      ...noop,
      'Register Job': () => ({ big: 'x'.repeat(300 * 1024) }),
      'Fail Job': () => {
        failJobRan = true;
        return {};
      },
    });
    // Act
    await engine.start('job-6', { jobId: 'job-6' });
    const execution = await engine.waitFor('job-6');
    // Assess
    expect(execution?.status).toBe('FAILED');
    expect(execution?.error?.Error).toBe('States.DataLimitExceeded');
    expect(failJobRan).toBe(false);
  });

  it('stopExecution() aborts one execution, leaves the others running, and its name stays taken', async () => {
    // Prepare: two executions parked in the poll wait
    const engine = engineWith(noop, { waitOverridesMs: { 'Wait For Processing': 60_000 } });
    await engine.start('job-9', { jobId: 'job-9' });
    await engine.start('job-10', { jobId: 'job-10' });
    // Act
    const stopped = await engine.stopExecution('arn:aws:states:us-east-1:000000000000:execution:mapflow-bridge:job-9');
    // Assess
    expect(stopped?.status).toBe('ABORTED');
    expect(await engine.isAlive('job-9')).toBe(false);
    expect(await engine.isAlive('job-10')).toBe(true);
    expect(await engine.stopExecution('job-9')).toBeUndefined();
    expect(await engine.start('job-9', { jobId: 'job-9' })).toBe('duplicate');
    expect(engine.describe('job-9')?.status).toBe('ABORTED');
    await engine.close();
  });

  it('close() aborts running executions and waits for handlers in flight', async () => {
    // Prepare
    let finished = false;
    const engine = engineWith(noop, { waitOverridesMs: { 'Wait For Processing': 60_000 } });
    const slowEngine = engineWith({
      ...noop,
      'Register Job': async (e) => {
        await new Promise((r) => setTimeout(r, 100));
        finished = true;
        return { ...(e as object), parts: [] };
      },
    });
    await engine.start('job-7', { jobId: 'job-7' });
    await slowEngine.start('job-8', { jobId: 'job-8' });
    // Act
    await Promise.all([engine.close(), slowEngine.close()]);
    // Assess
    expect(engine.describe('job-7')?.status).toBe('ABORTED');
    expect(finished).toBe(true);
    expect(engine.running()).toEqual([]);
  });
});
