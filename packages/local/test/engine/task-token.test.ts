/**
 * Issue 37 point 5: a `.waitForTaskToken` state completes when its token is
 * sent, as on AWS ("Wait for a Callback with Task Token", Step Functions
 * developer guide: the task pauses until SendTaskSuccess or SendTaskFailure
 * comes back), not when the Lambda that sent it returns. Before, the local
 * engine waited for both, so a handler still busy after its send held the
 * job locally where it would have gone on deployed.
 */
import { describe, expect, it } from 'vitest';
import { LocalEngine } from '../../src/engine/engine.ts';
import { asTaskResource } from '../../src/engine/lambda.ts';
import type { LocalTaskTokens } from '../../src/engine/task-tokens.ts';

const FUNCTION = 'arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-wait-for-slot';

const definition = {
  StartAt: 'Wait For Slot',
  States: {
    'Wait For Slot': {
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { FunctionName: FUNCTION, Payload: { 'taskToken.$': '$$.Task.Token', 'executionArn.$': '$$.Execution.Id' } },
      ResultPath: '$.slot',
      Next: 'After',
    },
    After: { Type: 'Pass', End: true },
  },
};

/** An engine whose waiting handler does `act` with its token, then stays busy until `release`. */
function engineWith(act: (tokens: LocalTaskTokens, token: string) => void, options: { throwAfterRelease?: boolean } = {}) {
  let release!: () => void;
  const busy = new Promise<void>((resolve) => (release = resolve));
  let returned = false;
  // eslint-disable-next-line prefer-const -- the handler needs the engine, built below
  let engine: LocalEngine;
  const handler = async (event: unknown) => {
    act(engine.taskTokens, (event as { taskToken: string }).taskToken);
    await busy;
    returned = true;
    if (options.throwAfterRelease) throw new Error('failed after sending its token');
    return { ignored: true };
  };
  engine = new LocalEngine({
    definition,
    taskResources: { 'Wait For Slot': asTaskResource(handler, { functionName: 'wait-for-slot', stateName: 'Wait For Slot' }) },
  });
  return { engine, release, returned: () => returned };
}

describe('.waitForTaskToken', () => {
  it('completes its state when SendTaskSuccess arrives, while the Lambda that sent it still runs', async () => {
    // Prepare
    const { engine, release, returned } = engineWith((tokens, token) => tokens.succeed(token, '{"acquired":true}'));

    // Act
    await engine.start('job-1', {});
    const done = await engine.waitFor('job-1');

    // Assess
    expect(returned()).toBe(false);
    expect(done?.status).toBe('SUCCEEDED');
    expect(done?.output).toMatchObject({ slot: { acquired: true } });
    release();
  });

  it('fails its state when SendTaskFailure arrives, without waiting for the Lambda', async () => {
    // Prepare
    const { engine, release, returned } = engineWith((tokens, token) => tokens.fail(token, 'SlotsFull', 'no slot'));

    // Act
    await engine.start('job-1', {});
    const done = await engine.waitFor('job-1');

    // Assess
    expect(returned()).toBe(false);
    expect(done?.status).toBe('FAILED');
    expect(done?.error?.Error).toBe('SlotsFull');
    release();
  });

  it("keeps the sent result when the Lambda fails after sending it: the task was already over", async () => {
    // Prepare: the handler sends, then fails at once
    let release: () => void = () => undefined;
    const made = engineWith(
      (tokens, token) => {
        tokens.succeed(token, '{"acquired":true}');
        release();
      },
      { throwAfterRelease: true },
    );
    const { engine } = made;
    release = made.release;

    // Act
    await engine.start('job-1', {});
    const done = await engine.waitFor('job-1');

    // Assess
    expect(done?.status).toBe('SUCCEEDED');
    expect(done?.output).toMatchObject({ slot: { acquired: true } });
  });

  it('fails its state on a Lambda error before any token was sent', async () => {
    // Prepare
    const { engine, release } = engineWith(() => {
      throw new Error('crashed before sending');
    });

    // Act
    await engine.start('job-1', {});
    const done = await engine.waitFor('job-1');

    // Assess
    expect(done?.status).toBe('FAILED');
    expect(engine.taskTokens.waiting()).toBe(0);
    release();
  });
});
