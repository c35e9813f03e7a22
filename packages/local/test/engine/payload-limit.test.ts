/**
 * Issue 37 point 3: 256 KiB on every state's input and output ("Maximum input
 * or output size for a task, state, or execution: 256 KiB of data as a UTF-8
 * encoded string", docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html).
 * Above it the execution fails with States.DataLimitExceeded, a terminal
 * error that States.ALL does not catch
 * (docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html).
 * A StartExecution input above it is refused.
 */
import { describe, expect, it } from 'vitest';
import { ExecutionInputTooLarge, LocalEngine } from '../../src/engine/engine.ts';
import { STATE_PAYLOAD_LIMIT_BYTES } from '../../src/engine/lambda.ts';

const ARN = (fn: string) => `arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-${fn}`;
const CATCH_ALL = [{ ErrorEquals: ['States.DataLimitExceeded'], ResultPath: '$.error', Next: 'Caught' }, { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Caught' }];

/** A string of `bytes` ASCII characters (one UTF-8 byte each). */
const filler = (bytes: number) => 'x'.repeat(bytes);

/** JSON bytes of the output `{ big: <input>, extra: <extra> }` built below. */
const outputBytes = (input: string, extra: string) => Buffer.byteLength(JSON.stringify({ big: input, extra }), 'utf8');

/** A Task (raw handler: not the Lambda boundary, which checks its own result) whose result joins a large input. */
function taskEngine(extra: string) {
  return new LocalEngine({
    definition: {
      StartAt: 'Work',
      States: {
        Work: { Type: 'Task', Resource: ARN('work'), ResultPath: '$.extra', Catch: CATCH_ALL, End: true },
        Caught: { Type: 'Pass', End: true },
      },
    },
    taskResources: { Work: async () => extra },
  });
}

describe('256 KiB on a state\'s output', () => {
  it('fails the execution with States.DataLimitExceeded when a Task\'s output is above it, past its Catch', async () => {
    // Prepare: a 200 KB input and a 100 KB result, each below the limit, together above it
    const input = filler(200_000);
    const extra = filler(100_000);
    const engine = taskEngine(extra);

    // Act
    await engine.start('job-1', { big: input });
    const done = await engine.waitFor('job-1');

    // Assess
    expect(outputBytes(input, extra)).toBeGreaterThan(STATE_PAYLOAD_LIMIT_BYTES);
    expect(done?.status).toBe('FAILED');
    expect(done?.error?.Error).toBe('States.DataLimitExceeded');
    expect(done?.error?.Cause).toContain("output of 'Work'");
  });

  it('lets an output just under the limit through', async () => {
    // Prepare: the output exactly 262,144 bytes
    const input = filler(200_000);
    const extra = filler(STATE_PAYLOAD_LIMIT_BYTES - outputBytes(filler(200_000), ''));
    const engine = taskEngine(extra);

    // Act
    await engine.start('job-1', { big: input });
    const done = await engine.waitFor('job-1');

    // Assess
    expect(outputBytes(input, extra)).toBe(STATE_PAYLOAD_LIMIT_BYTES);
    expect(done?.status).toBe('SUCCEEDED');
    expect((done?.output as { error?: unknown }).error).toBeUndefined();
  });

  it('holds a Pass state to it too', async () => {
    // Prepare
    const engine = new LocalEngine({
      definition: {
        StartAt: 'Grow',
        States: { Grow: { Type: 'Pass', Result: filler(100_000), ResultPath: '$.extra', End: true } },
      },
      taskResources: {},
    });

    // Act
    await engine.start('job-1', { big: filler(200_000) });
    const done = await engine.waitFor('job-1');

    // Assess
    expect(done?.error?.Error).toBe('States.DataLimitExceeded');
  });
});

describe('256 KiB on a state\'s input after Parameters', () => {
  it('fails the Task before it runs, past its Catch', async () => {
    // Prepare: Parameters that name the 150 KB input twice
    let called = false;
    const engine = new LocalEngine({
      definition: {
        StartAt: 'Work',
        States: {
          Work: { Type: 'Task', Resource: ARN('work'), Parameters: { 'a.$': '$.big', 'b.$': '$.big' }, Catch: CATCH_ALL, End: true },
          Caught: { Type: 'Pass', End: true },
        },
      },
      taskResources: {
        Work: async () => {
          called = true;
          return {};
        },
      },
    });

    // Act
    await engine.start('job-1', { big: filler(150_000) });
    const done = await engine.waitFor('job-1');

    // Assess
    expect(done?.error?.Error).toBe('States.DataLimitExceeded');
    expect(called).toBe(false);
  });
});

describe("256 KiB on a DISTRIBUTED Map's combined result", () => {
  it('fails the Map with States.DataLimitExceeded past its Catch, even when ResultSelector would trim it', async () => {
    // Prepare: three items of 100 KB each
    const engine = new LocalEngine({
      definition: {
        StartAt: 'Process Parts',
        States: {
          'Process Parts': {
            Type: 'Map',
            ItemsPath: '$.parts',
            ItemProcessor: {
              ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' },
              StartAt: 'Work',
              States: { Work: { Type: 'Task', Resource: ARN('work'), End: true } },
            },
            ResultSelector: { 'count.$': 'States.ArrayLength($)' },
            Catch: CATCH_ALL,
            End: true,
          },
          Caught: { Type: 'Pass', End: true },
        },
      },
      taskResources: { Work: async () => filler(100_000) },
    });

    // Act
    await engine.start('job-1', { parts: [0, 1, 2] });
    const done = await engine.waitFor('job-1');

    // Assess
    expect(done?.error?.Error).toBe('States.DataLimitExceeded');
    expect(done?.error?.Cause).toContain("combined result of the Map Run of 'Process Parts'");
  });
});

describe('256 KiB in a child execution of a DISTRIBUTED Map', () => {
  it('fails that child; the Map Run then fails with States.ExceedToleratedFailureThreshold, which the Map\'s Catch takes', async () => {
    // Prepare: the item's Pass state grows its input past the limit
    const engine = new LocalEngine({
      definition: {
        StartAt: 'Process Parts',
        States: {
          'Process Parts': {
            Type: 'Map',
            ItemsPath: '$.parts',
            ItemProcessor: {
              ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' },
              StartAt: 'Grow',
              States: { Grow: { Type: 'Pass', Result: filler(STATE_PAYLOAD_LIMIT_BYTES), End: true } },
            },
            ResultPath: '$.parts',
            Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Caught' }],
            End: true,
          },
          Caught: { Type: 'Pass', End: true },
        },
      },
      taskResources: {},
    });

    // Act
    await engine.start('job-1', { parts: [0] });
    const done = await engine.waitFor('job-1');

    // Assess
    expect(done?.status).toBe('SUCCEEDED');
    const error = (done?.output as { error?: { Error: string; Cause: string } }).error;
    expect(error?.Error).toBe('States.ExceedToleratedFailureThreshold');
    expect(error?.Cause).toContain('States.DataLimitExceeded');
  });
});

describe('StartExecution', () => {
  it('refuses an input above 256 KiB, and starts one at it', () => {
    // Prepare
    const engine = new LocalEngine({ definition: { StartAt: 'Done', States: { Done: { Type: 'Pass', End: true } } }, taskResources: {} });
    const at = { big: filler(STATE_PAYLOAD_LIMIT_BYTES - Buffer.byteLength(JSON.stringify({ big: '' }))) };

    // Act
    const refused = (() => {
      try {
        engine.startExecution('job-1', { big: filler(STATE_PAYLOAD_LIMIT_BYTES) });
        return undefined;
      } catch (error) {
        return error;
      }
    })();
    const started = engine.startExecution('job-2', at);

    // Assess
    expect(refused).toBeInstanceOf(ExecutionInputTooLarge);
    expect((refused as Error).name).toBe('ValidationException');
    expect(started.outcome).toBe('started');
  });
});
