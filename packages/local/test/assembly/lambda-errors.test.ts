/**
 * Lambda error shapes (issue 37 point 9, the local half). A handler's error
 * reaches the caller as the Node.js runtime answers it (formatError in
 * aws/aws-lambda-nodejs-runtime-interface-client, src/utils/error.ts):
 * `{ errorType, errorMessage, trace }`, the stack split into lines, and what
 * Step Functions puts in Cause is the JSON of that object. A thrown non-Error
 * is `typeof` it and String() of it, with an empty trace. With the
 * Lambda.Unknown option a timeout or an out-of-memory reaches a Task state as
 * Step Functions may report it (bp-lambda-serviceexception.html), and the
 * bridge's outcome is the same for both shapes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { jobErrorFromTaskError } from '../../../../functions/jobs/outcome.ts';
import { overrunAsRejection } from '../../../../functions/jobs/steps/fail-job.ts';
import { LocalFunction, asStepFunctionsReports } from '../../src/assembly/functions.ts';
import { LocalEngine } from '../../src/engine/engine.ts';
import { LambdaFunctionError } from '../../src/engine/lambda.ts';
import { handlerSpec } from './support.ts';

/** Throws what the event names; waits past its timeout on 'sleep'. */
const HANDLER = `export const handler = async (event) => {
  switch (event.throw) {
    case 'type-error': throw new TypeError('bad input');
    case 'string': throw 'plain string';
    case 'undefined': throw undefined;
    case 'object': throw { code: 42 };
    case 'null': throw null;
    case 'sleep': return new Promise((resolve) => setTimeout(resolve, 60_000));
  }
  return 'fine';
};
`;

async function functionOf(timeoutSeconds = 30): Promise<LocalFunction> {
  const spec = await handlerSpec('thrower', HANDLER, { logicalId: 'Thrower', timeoutSeconds });
  return new LocalFunction({ spec, environment: {} });
}

const errorOf = (work: Promise<unknown>) => work.then(() => undefined, (error: unknown) => error as LambdaFunctionError);

let fn: LocalFunction | undefined;
afterEach(async () => fn?.close());

describe("a handler's error, as the Node.js runtime answers it", () => {
  it('gives an Error its name, message and stack as trace lines, and Cause the JSON of that answer', { timeout: 60_000 }, async () => {
    // Prepare
    fn = await functionOf();
    // Act
    const error = await errorOf(fn.invoke({ throw: 'type-error' }));
    // Assess
    expect(error).toBeInstanceOf(LambdaFunctionError);
    expect(error?.name).toBe('TypeError');
    const cause = JSON.parse(error!.message) as { errorType: string; errorMessage: string; trace: string[] };
    expect(Object.keys(cause)).toEqual(['errorType', 'errorMessage', 'trace']);
    expect(cause.errorType).toBe('TypeError');
    expect(cause.errorMessage).toBe('bad input');
    expect(cause.trace[0]).toBe('TypeError: bad input');
    expect(cause.trace.length).toBeGreaterThan(1);
    expect(cause.trace[1]).toMatch(/^\s+at /);
    expect(error?.trace).toEqual(cause.trace);
  });

  it.each([
    ['string', { errorType: 'string', errorMessage: 'plain string', trace: [] }],
    ['undefined', { errorType: 'undefined', errorMessage: 'undefined', trace: [] }],
    ['object', { errorType: 'object', errorMessage: '[object Object]', trace: [] }],
    ['null', { errorType: 'object', errorMessage: 'null', trace: [] }],
  ])('gives a thrown %s typeof it, String() of it and an empty trace', { timeout: 60_000 }, async (thrown, expected) => {
    // Prepare
    fn = await functionOf();
    // Act
    const error = await errorOf(fn.invoke({ throw: thrown }));
    // Assess
    expect(error).toBeInstanceOf(LambdaFunctionError);
    expect(error?.name).toBe(expected.errorType);
    expect(JSON.parse(error!.message)).toEqual(expected);
  });
});

describe('timeouts and out-of-memory reported as Lambda.Unknown', () => {
  it('turns a timeout into Lambda.Unknown with a plain-text cause, and the job gets the same code either way', { timeout: 60_000 }, async () => {
    // Prepare: a function of one second that sleeps a minute
    fn = await functionOf(1);
    const timeout = await errorOf(fn.invoke({ throw: 'sleep' }));
    // Act
    const named = asStepFunctionsReports(timeout, false) as LambdaFunctionError;
    const unknown = asStepFunctionsReports(timeout, true) as LambdaFunctionError;
    const fromNamed = jobErrorFromTaskError({ Error: named.name, Cause: named.message });
    const fromUnknown = jobErrorFromTaskError({ Error: unknown.name, Cause: unknown.message });
    // Assess
    expect(named.name).toBe('Sandbox.Timedout');
    expect(unknown.name).toBe('Lambda.Unknown');
    expect(unknown.message).toBe('The cause could not be determined because Lambda did not return an error type. Returned payload: {"errorMessage":"Task timed out after 1.00 seconds"}');
    expect(fromNamed.error.code).toBe('SANDBOX_TIMEDOUT');
    expect(fromUnknown.error.code).toBe(fromNamed.error.code);
  });

  it('turns an out-of-memory into Lambda.Unknown, and Fail Job rejects the input the same way for both', () => {
    // Prepare: the error a process environment over its MemorySize ends with
    const oom = new LambdaFunctionError('Runtime.OutOfMemory', 'Runtime exited: the function used more than its 192 MB (resident memory 201 MB)');
    // Act
    const unknown = asStepFunctionsReports(oom, true) as LambdaFunctionError;
    const fromNamed = overrunAsRejection(jobErrorFromTaskError({ Error: oom.name, Cause: oom.message }), undefined);
    const fromUnknown = overrunAsRejection(jobErrorFromTaskError({ Error: unknown.name, Cause: unknown.message }), undefined);
    // Assess
    expect(unknown.name).toBe('Lambda.Unknown');
    expect(unknown.message).toMatch(/^The cause could not be determined because Lambda did not return an error type\. Returned payload: \{"errorType":"Runtime\.OutOfMemory",/);
    expect(fromNamed).toMatchObject({ rejected: true, error: { code: 'INPUT_TOO_COMPLEX' } });
    // The same outcome; the message is the payload's own (outcome.ts reads the plain-text cause's payload)
    expect(fromUnknown).toMatchObject({ rejected: true, error: { code: 'INPUT_TOO_COMPLEX' } });
    expect(fromUnknown.error.message).toContain('Runtime exited: the function used more than its 192 MB');
  });

  it('leaves every other error as it is', () => {
    // Prepare
    const handled = new LambdaFunctionError('TypeError', 'bad input', { trace: ['TypeError: bad input'] });
    // Act
    const reported = asStepFunctionsReports(handled, true);
    // Assess
    expect(reported).toBe(handled);
  });
});

describe('what a Task state catches', () => {
  /** One Task invoking the function as runtime.ts does, its error caught into $.error. */
  function engineFor(target: LocalFunction, lambdaUnknown: boolean): LocalEngine {
    return new LocalEngine({
      definition: {
        StartAt: 'Step',
        States: {
          Step: { Type: 'Task', Resource: 'arn:aws:lambda:eu-central-1:000000000000:function:mapflow-bridge-thrower', Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Caught' }], End: true },
          Caught: { Type: 'Pass', End: true },
        },
      },
      taskResources: { Step: (input: unknown) => target.invoke(input).catch((error: unknown) => Promise.reject(asStepFunctionsReports(error, lambdaUnknown))) },
    });
  }

  async function caught(engine: LocalEngine, name: string, input: unknown): Promise<{ Error: string; Cause: string }> {
    await engine.start(name, input);
    const execution = await engine.waitFor(name);
    return (execution?.output as { error: { Error: string; Cause: string } }).error;
  }

  it('is the error type as Error and the JSON of the runtime answer, trace included, as Cause', { timeout: 60_000 }, async () => {
    // Prepare
    fn = await functionOf();
    // Act
    const error = await caught(engineFor(fn, false), 'type-error', { throw: 'type-error' });
    // Assess
    expect(error.Error).toBe('TypeError');
    const cause = JSON.parse(error.Cause) as { errorType: string; errorMessage: string; trace: string[] };
    expect(cause).toMatchObject({ errorType: 'TypeError', errorMessage: 'bad input' });
    expect(cause.trace[0]).toBe('TypeError: bad input');
    expect(jobErrorFromTaskError(error).error).toMatchObject({ code: 'TYPE_ERROR', message: 'bad input' });
  });

  it('is Lambda.Unknown for a timeout with the option, Sandbox.Timedout without, and the job code is the same', { timeout: 60_000 }, async () => {
    // Prepare: a function of one second that sleeps a minute
    fn = await functionOf(1);
    // Act
    const named = await caught(engineFor(fn, false), 'timeout-named', { throw: 'sleep' });
    const unknown = await caught(engineFor(fn, true), 'timeout-unknown', { throw: 'sleep' });
    // Assess
    expect(named.Error).toBe('Sandbox.Timedout');
    expect(unknown.Error).toBe('Lambda.Unknown');
    expect(unknown.Cause).toMatch(/^The cause could not be determined because Lambda did not return an error type\. Returned payload: /);
    expect(jobErrorFromTaskError(unknown).error.code).toBe(jobErrorFromTaskError(named).error.code);
  });
});
