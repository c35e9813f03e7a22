/**
 * The state machine's role judging its Task calls (local/auth/state-machine-role.ts):
 * which call a Task makes, what iam-simulate decides on the role's policies
 * (as CDK grants them: the function ARN and `${arn}:*`), the Task error Step
 * Functions reports for a refusal, one evaluation per call, and the engine
 * failing a refused Task through its Retry and Catch without invoking the function.
 */
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../../local/auth/evaluate.ts';
import { StateMachineRole, TaskAccessDeniedError, lambdaFunctionArn, taskCallOf, taskCallsOf, type Evaluate } from '../../../../local/auth/state-machine-role.ts';
import { LocalEngine } from '../../../../local/engine/engine.ts';

const ROLE_ARN = 'arn:aws:iam::000000000000:role/BridgeWorkflowStateMachineRoleCD050FCB';
const fn = (name: string) => `arn:aws:lambda:us-east-1:000000000000:function:${name}`;
const ALLOWED = fn('mapflow-bridge-register-job');
const OTHER = fn('mapflow-bridge-store-results');

/** What CDK grants a state machine's role for a LambdaInvoke task. */
const CDK_POLICIES = [{ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: [ALLOWED, `${ALLOWED}:*`] }] }];

const CAUSE = new RegExp(
  `^User: arn:aws:sts::000000000000:assumed-role/BridgeWorkflowStateMachineRoleCD050FCB/[A-Za-z]{32} is not authorized to perform: lambda:InvokeFunction on resource: ${OTHER.replace(/[.$]/g, '\\$&')} ` +
    'because no identity-based policy allows the lambda:InvokeFunction action \\(Service: Lambda, Status Code: 403, Request ID: [0-9a-f-]{36}\\)$',
);

describe('the call a Task state makes', () => {
  it('is lambda:InvokeFunction on the function, whichever way the definition names it', () => {
    // Act / Assess
    expect(taskCallOf('A', { Resource: ALLOWED })).toEqual({ state: 'A', service: 'Lambda', action: 'lambda:InvokeFunction', resource: ALLOWED });
    expect(taskCallOf('B', { Resource: 'arn:aws:states:::lambda:invoke', Parameters: { FunctionName: 'mapflow-bridge-register-job' } })?.resource).toBe(ALLOWED);
    expect(taskCallOf('C', { Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken', Parameters: { FunctionName: `${ALLOWED}:$LATEST` } })?.resource).toBe(`${ALLOWED}:$LATEST`);
    expect(lambdaFunctionArn('000000000000:function:x')).toBe(fn('x'));
    expect(taskCallOf('D', { Resource: 'arn:aws:states:::events:putEvents', Parameters: {} })).toBeUndefined();
  });

  it('is found in Map item processors too', () => {
    // Prepare
    const definition = {
      StartAt: 'Parts',
      States: { Parts: { Type: 'Map', ItemProcessor: { StartAt: 'Inner', States: { Inner: { Type: 'Task', Resource: OTHER, End: true } } }, End: true } },
    };
    // Act / Assess
    expect([...taskCallsOf(definition).values()].map((call) => [call.state, call.resource])).toEqual([['Inner', OTHER]]);
  });
});

describe("the state machine's role", () => {
  it('allows what it grants (the function and its qualified ARNs) and refuses the rest as Step Functions reports it', async () => {
    // Prepare
    const role = new StateMachineRole({ roleArn: ROLE_ARN, policies: CDK_POLICIES });
    // Act / Assess
    await expect(role.authorize({ state: 'Register Job', service: 'Lambda', action: 'lambda:InvokeFunction', resource: ALLOWED })).resolves.toBeUndefined();
    await expect(role.authorize({ state: 'Register Job', service: 'Lambda', action: 'lambda:InvokeFunction', resource: `${ALLOWED}:$LATEST` })).resolves.toBeUndefined();
    const refused = await role.authorize({ state: 'Store Results', service: 'Lambda', action: 'lambda:InvokeFunction', resource: OTHER }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TaskAccessDeniedError);
    expect((refused as Error).name).toBe('Lambda.AWSLambdaException');
    expect((refused as Error).message).toMatch(CAUSE);
  });

  it('names an explicit deny', async () => {
    // Prepare
    const role = new StateMachineRole({
      roleArn: ROLE_ARN,
      policies: [...CDK_POLICIES, { Version: '2012-10-17', Statement: [{ Effect: 'Deny', Action: 'lambda:InvokeFunction', Resource: ALLOWED }] }],
    });
    // Act
    const refused = await role.authorize({ state: 'Register Job', service: 'Lambda', action: 'lambda:InvokeFunction', resource: ALLOWED }).catch((error: unknown) => error);
    // Assess
    expect((refused as Error).message).toContain(`on resource: ${ALLOWED} with an explicit deny in an identity-based policy (Service: Lambda, Status Code: 403`);
  });

  it('evaluates each call once', async () => {
    // Prepare
    let evaluations = 0;
    const counting: Evaluate = (principal, requests) => {
      evaluations++;
      return evaluate(principal, requests);
    };
    const role = new StateMachineRole({ roleArn: ROLE_ARN, policies: CDK_POLICIES }, counting);
    // Act
    for (let i = 0; i < 5; i++) {
      await role.judge({ action: 'lambda:InvokeFunction', resource: ALLOWED });
      await role.judge({ action: 'lambda:InvokeFunction', resource: OTHER });
    }
    // Assess
    expect(evaluations).toBe(2);
  });
});

describe('a refused Task on the engine', () => {
  const definition = (withCatch: boolean) => ({
    StartAt: 'Store Results',
    States: {
      'Store Results': {
        Type: 'Task',
        Resource: OTHER,
        Retry: [{ ErrorEquals: ['Lambda.AWSLambdaException'], MaxAttempts: 2 }],
        ...(withCatch ? { Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Failed' }] } : {}),
        End: withCatch ? undefined : true,
        ...(withCatch ? { Next: 'Done' } : {}),
      },
      ...(withCatch ? { Done: { Type: 'Succeed' }, Failed: { Type: 'Pass', End: true } } : {}),
    },
  });

  async function run(withCatch: boolean) {
    const role = new StateMachineRole({ roleArn: ROLE_ARN, policies: CDK_POLICIES });
    const call = taskCallOf('Store Results', { Resource: OTHER });
    let judged = 0;
    let invoked = 0;
    const engine = new LocalEngine({
      definition: JSON.parse(JSON.stringify(definition(withCatch))) as Record<string, unknown>,
      taskResources: { 'Store Results': async () => ++invoked },
      retryIntervalMs: 1,
      authorizeTask: async () => {
        judged++;
        await role.authorize(call as NonNullable<typeof call>);
      },
    });
    engine.startExecution('job-1', { job: 'j' });
    const record = await engine.waitFor('job-1');
    await engine.close();
    return { record, judged, invoked };
  }

  it('is retried as the definition says, then caught, and the function never runs', async () => {
    // Act
    const { record, judged, invoked } = await run(true);
    // Assess
    expect(invoked).toBe(0);
    expect(judged).toBe(3);
    expect(record?.status).toBe('SUCCEEDED');
    const error = (record?.output as { error?: { Error: string; Cause: string } }).error;
    expect(error?.Error).toBe('Lambda.AWSLambdaException');
    expect(error?.Cause).toMatch(CAUSE);
  });

  it('fails the execution with that error when nothing catches it', async () => {
    // Act
    const { record, invoked } = await run(false);
    // Assess
    expect(invoked).toBe(0);
    expect(record?.status).toBe('FAILED');
    expect(record?.error?.Error).toBe('Lambda.AWSLambdaException');
    expect(record?.error?.Cause).toMatch(CAUSE);
  });
});
