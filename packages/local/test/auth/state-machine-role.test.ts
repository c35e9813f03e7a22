/**
 * The state machine's role judging its Task calls (packages/local/src/auth/state-machine-role.ts):
 * which call a Task makes, what the evaluator decides on the role's policies
 * (as CDK grants them: the function ARN and `${arn}:*`), the Task error Step
 * Functions reports for a refusal, one evaluation per call, and the engine
 * failing a refused Task through its Retry and Catch without invoking the function;
 * a DISTRIBUTED Map's StartExecution on the state machine, judged before any
 * item calls anything, its refusal failing the Map state (States.Runtime, which
 * no Retry or Catch matches) and the execution.
 */
import { describe, expect, it } from 'vitest';
import type { PolicyDocument } from '../../src/auth/credentials.ts';
import { evaluate } from '../../src/auth/evaluate.ts';
import {
  MapRunAccessDeniedError,
  StateMachineRole,
  TaskAccessDeniedError,
  lambdaFunctionArn,
  mapRunCallsOf,
  taskCallOf,
  taskCallsOf,
  type Evaluate,
} from '../../src/auth/state-machine-role.ts';
import { LocalEngine } from '../../src/engine/engine.ts';

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

const MACHINE_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:mapflow-bridge';

/** What CDK's DistributedMapPolicy grants (StartExecution on the state machine itself), with the item's invoke. */
const MAP_RUN_POLICIES = [
  ...CDK_POLICIES,
  { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'states:StartExecution', Resource: MACHINE_ARN }] },
];

const MAP_CAUSE = new RegExp(
  '^User: arn:aws:sts::000000000000:assumed-role/BridgeWorkflowStateMachineRoleCD050FCB/[A-Za-z]{32} is not authorized to perform: states:StartExecution ' +
    `on resource: ${MACHINE_ARN} because no identity-based policy allows the states:StartExecution action$`,
);

describe("a DISTRIBUTED Map's StartExecution", () => {
  it('is found for DISTRIBUTED Map states (nested too), on the state machine, and not for inline ones', () => {
    // Prepare
    const inner = { StartAt: 'Inner', States: { Inner: { Type: 'Task', Resource: ALLOWED, End: true } } };
    const definition = {
      StartAt: 'Parts',
      States: {
        Parts: {
          Type: 'Map',
          ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' }, StartAt: 'Nested', States: { Nested: { Type: 'Parallel', Branches: [{ StartAt: 'Deep', States: { Deep: { Type: 'Map', ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED' }, ...inner }, End: true } } }], End: true } } },
          Next: 'Inline',
        },
        Inline: { Type: 'Map', ItemProcessor: { ProcessorConfig: { Mode: 'INLINE' }, ...inner }, Next: 'Old' },
        Old: { Type: 'Map', Iterator: inner, End: true },
      },
    };
    // Act
    const calls = mapRunCallsOf(definition, MACHINE_ARN);
    // Assess
    expect([...calls.values()]).toEqual([
      { state: 'Parts', action: 'states:StartExecution', resource: MACHINE_ARN },
      { state: 'Deep', action: 'states:StartExecution', resource: MACHINE_ARN },
    ]);
  });

  it('is allowed by the grant CDK gives and refused without it, as States.Runtime with the AccessDenied cause', async () => {
    // Prepare
    const call = { state: 'Process Parts', action: 'states:StartExecution', resource: MACHINE_ARN } as const;
    // Act
    const allowed = new StateMachineRole({ roleArn: ROLE_ARN, policies: MAP_RUN_POLICIES }).authorizeMapRun(call);
    const refused = await new StateMachineRole({ roleArn: ROLE_ARN, policies: CDK_POLICIES }).authorizeMapRun(call).catch((error: unknown) => error);
    // Assess
    await expect(allowed).resolves.toBeUndefined();
    expect(refused).toBeInstanceOf(MapRunAccessDeniedError);
    expect((refused as Error).name).toBe('States.Runtime');
    expect((refused as Error).message).toMatch(MAP_CAUSE);
  });
});

describe('a DISTRIBUTED Map on the engine, judged', () => {
  /** A Map whose item's Task retries and catches everything, and a Map that catches everything too. */
  const definition = (mode: 'DISTRIBUTED' | 'INLINE') => ({
    StartAt: 'Process Parts',
    States: {
      'Process Parts': {
        Type: 'Map',
        ItemsPath: '$.parts',
        ItemProcessor: {
          ProcessorConfig: { Mode: mode, ...(mode === 'DISTRIBUTED' ? { ExecutionType: 'STANDARD' } : {}) },
          StartAt: 'Admitted?',
          States: {
            'Admitted?': { Type: 'Choice', Choices: [{ Variable: '$.index', NumericEquals: 0, Next: 'Store Results' }], Default: 'Store Results' },
            'Store Results': {
              Type: 'Task',
              Resource: OTHER,
              Retry: [{ ErrorEquals: ['States.ALL'], MaxAttempts: 2 }],
              Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Part Failed' }],
              End: true,
            },
            'Part Failed': { Type: 'Pass', End: true },
          },
        },
        Retry: [{ ErrorEquals: ['States.ALL'], MaxAttempts: 2 }],
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Fail Job' }],
        End: true,
      },
      'Fail Job': { Type: 'Pass', End: true },
    },
  });

  async function run(mode: 'DISTRIBUTED' | 'INLINE', policies: readonly PolicyDocument[]) {
    const role = new StateMachineRole({ roleArn: ROLE_ARN, policies: [...policies, { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: OTHER }] }] });
    const mapRuns = mapRunCallsOf(definition(mode), MACHINE_ARN);
    const judged: string[] = [];
    let invoked = 0;
    const engine = new LocalEngine({
      definition: JSON.parse(JSON.stringify(definition(mode))) as Record<string, unknown>,
      taskResources: { 'Store Results': async () => ++invoked },
      retryIntervalMs: 1,
      authorizeMapRun: async (state) => {
        judged.push(state);
        const call = mapRuns.get(state);
        if (call) await role.authorizeMapRun(call);
      },
    });
    engine.startExecution('job-1', { parts: [{ index: 0 }, { index: 1 }, { index: 2 }] });
    const record = await engine.waitFor('job-1');
    await engine.close();
    return { record, judged, invoked, taskInvocations: engine.taskInvocations.get('Store Results') };
  }

  it('refused: fails the Map state and the execution (neither Retry nor Catch matches States.Runtime), and no item invokes its function', async () => {
    // Act
    const { record, judged, invoked, taskInvocations } = await run('DISTRIBUTED', CDK_POLICIES);
    // Assess: the Map's Catch did not run (the execution has no output), nothing was invoked
    expect(record?.status).toBe('FAILED');
    expect(record?.error?.Error).toBe('States.Runtime');
    expect(record?.error?.Cause).toMatch(MAP_CAUSE);
    expect(record?.output).toBeUndefined();
    expect(invoked).toBe(0);
    expect(taskInvocations).toBeUndefined();
    // Judged for the Map state, once per item at most (the item's Retry did not try again)
    expect(judged.length).toBeGreaterThan(0);
    expect(judged.length).toBeLessThanOrEqual(3);
    expect(new Set(judged)).toEqual(new Set(['Process Parts']));
  });

  it('allowed: every item runs', async () => {
    // Act
    const { record, invoked } = await run('DISTRIBUTED', MAP_RUN_POLICIES);
    // Assess
    expect(record?.status).toBe('SUCCEEDED');
    expect(invoked).toBe(3);
  });

  it('an inline Map starts no execution: not judged', async () => {
    // Act
    const { record, judged, invoked } = await run('INLINE', CDK_POLICIES);
    // Assess
    expect(record?.status).toBe('SUCCEEDED');
    expect(judged).toEqual([]);
    expect(invoked).toBe(3);
  });
});
