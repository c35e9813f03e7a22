import { StateMachine } from 'aws-local-stepfunctions';
import { beforeAll, describe, expect, it } from 'vitest';
import { TASKS } from '../../../../functions/core/catalog.ts';
import { localFunctionArn, resolveIntrinsics, synthLocalDefinition, type LocalDefinition } from '../../src/assembly/local-definition.ts';
import { WORKFLOW_STATES } from '../../../../lib/private/workflow.ts';

type State = Record<string, unknown> & { Type: string };
type States = Record<string, State>;

/** Every state machine (top level and Map item processors) of a definition. */
function machinesOf(definition: { StartAt: string; States: States }): { StartAt: string; States: States }[] {
  const machines = [definition];
  for (const state of Object.values(definition.States)) {
    const processor = (state.ItemProcessor ?? state.Iterator) as { StartAt: string; States: States } | undefined;
    if (processor) machines.push(...machinesOf(processor));
  }
  return machines;
}

/** Targets a state can move to. */
function targetsOf(state: State): string[] {
  const targets: string[] = [];
  if (typeof state.Next === 'string') targets.push(state.Next);
  if (typeof state.Default === 'string') targets.push(state.Default);
  for (const choice of (state.Choices as { Next: string }[] | undefined) ?? []) targets.push(choice.Next);
  for (const c of (state.Catch as { Next: string }[] | undefined) ?? []) targets.push(c.Next);
  return targets;
}

let local: LocalDefinition;
beforeAll(() => {
  local = synthLocalDefinition();
});

describe('synthLocalDefinition', () => {
  it('is plain ASL: no CloudFormation intrinsic is left', () => {
    const text = JSON.stringify(local.definition);
    expect(text).not.toMatch(/Fn::|"Ref"|AWS::/);
  });

  it('binds every catalogue Task by state name to the plain local ARN of its function', () => {
    // Act
    const tasks = machinesOf(local.definition as never).flatMap((m) =>
      Object.entries(m.States).filter(([, s]) => s.Type === 'Task'),
    );

    // Assess
    expect(local.taskStates).toHaveLength(TASKS.length);
    expect(new Set(local.taskStates.map((t) => t.state))).toEqual(new Set(TASKS.map((t) => t.state)));
    expect(tasks).toHaveLength(TASKS.length);
    for (const [name, state] of tasks) {
      const entry = TASKS.find((t) => t.state === name);
      expect(entry, name).toBeDefined();
      if (entry!.waitsForToken) {
        // The callback pattern: the integration ARN, the function in the Parameters.
        expect(state.Resource, name).toBe('arn:aws:states:::lambda:invoke.waitForTaskToken');
        expect((state.Parameters as { FunctionName?: string }).FunctionName, name).toBe(localFunctionArn(entry!.fn));
      } else {
        expect(state.Resource, name).toBe(localFunctionArn(entry!.fn));
      }
      // Finish Part replaces the part state ('$' may be omitted, it is the default).
      expect(state.ResultPath ?? '$', name).toBe(entry!.resultPath);
    }
  });

  it('is JSONPath only and every Next/Default/Catch target exists; every state is reachable', () => {
    const definition = local.definition as { StartAt: string; States: States; QueryLanguage?: string };
    expect(definition.QueryLanguage).toBeUndefined();
    for (const machine of machinesOf(definition)) {
      // Assess: targets exist
      const names = Object.keys(machine.States);
      expect(names, 'StartAt').toContain(machine.StartAt);
      for (const [name, state] of Object.entries(machine.States)) {
        expect(state.QueryLanguage, name).toBeUndefined();
        for (const target of targetsOf(state)) expect(names, `${name} -> ${target}`).toContain(target);
      }
      // Assess: reachability from StartAt
      const reached = new Set<string>();
      const queue = [machine.StartAt];
      while (queue.length > 0) {
        const name = queue.pop()!;
        if (reached.has(name)) continue;
        reached.add(name);
        queue.push(...targetsOf(machine.States[name]));
      }
      expect([...reached].sort()).toEqual([...names].sort());
    }
  });

  it('has the flow of docs/architecture.md', () => {
    const top = local.definition as { StartAt: string; States: States };
    const map = top.States[WORKFLOW_STATES.processParts];
    const part = (map.ItemProcessor as { StartAt: string; States: States }).States;

    // Top level
    expect(top.StartAt).toBe('Register Job');
    expect(top.States['Register Job'].Parameters).toEqual({ 'jobId.$': '$.jobId', 'input.$': '$.input', 'executionArn.$': '$$.Execution.Id' });
    expect(top.States['Already Final?']).toMatchObject({ Choices: [{ Variable: '$.job.alreadyFinal', BooleanEquals: true, Next: 'Done' }] });
    expect(top.States.Done.Type).toBe('Succeed');
    expect(top.States['Which Kind?']).toMatchObject({ Choices: [{ Variable: '$.job.kind', StringEquals: 'geotiff', Next: 'Inspect GeoTIFF' }], Default: 'Plan Processing' });
    expect(top.States['Inspect GeoTIFF'].Next).toBe('Ensure Mosaic');
    expect(top.States['Ensure Mosaic'].Next).toBe('Upload Image');
    // Upload Image loops on Mapflow's preprocessing (Image Ready? / Wait For Image) before Has Model?.
    expect(top.States['Upload Image'].Next).toBe('Image Ready?');
    expect(top.States['Image Ready?']).toMatchObject({ Default: 'Has Model?' });
    expect(top.States['Has Model?']).toMatchObject({ Choices: [{ Next: 'Plan Processing' }], Default: 'Finish Job' });
    // Admission before the Map Run opens: the job sleeps on a task token (docs/architecture.md, Admission).
    expect(top.States['Plan Processing'].Next).toBe('Admit Job');
    expect(top.States['Admit Job']).toMatchObject({
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { Payload: { 'taskToken.$': '$$.Task.Token', 'job.$': '$.job', 'part': { 'index.$': '$.plan.parts[0].index' } } },
      ResultPath: '$.admission',
      Next: 'Process Parts',
    });
    expect(map).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.plan.parts',
      ItemSelector: { 'job.$': '$.job', 'part.$': '$$.Map.Item.Value', 'admittedIndex.$': '$.plan.parts[0].index' },
      MaxConcurrency: 5,
      ResultPath: '$.partOutcomes',
      Next: 'Finish Job',
    });
    expect(top.States['Finish Job'].End).toBe(true);
    // Fail Job records the failure; Release Job Slots hands the job's slots on, also when Fail Job failed.
    expect(top.States['Fail Job'].Next).toBe('Release Job Slots');
    expect(top.States['Fail Job'].Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.failJobError', Next: 'Release Job Slots' }]);
    expect(top.States['Release Job Slots'].Next).toBe('Job Failed');
    expect(top.States['Job Failed'].Type).toBe('Fail');
    for (const name of ['Register Job', 'Inspect GeoTIFF', 'Ensure Mosaic', 'Upload Image', 'Plan Processing', 'Admit Job', 'Process Parts', 'Finish Job']) {
      expect(top.States[name].Catch, name).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Fail Job' }]);
    }

    // Inside the Map
    // The admitted part (its slot taken by Admit Job) goes straight to Create Processing; the others look for a slot.
    expect(part['Admitted Part?']).toMatchObject({
      Choices: [{ Variable: '$.part.index', NumericEqualsPath: '$.admittedIndex', Next: 'Create Processing' }],
      Default: 'Acquire Slot',
    });
    expect(part['Slot Acquired?']).toMatchObject({ Choices: [{ Variable: '$.slot.acquired', BooleanEquals: true, Next: 'Create Processing' }], Default: 'Wait For Slot' });
    // No polling loop: a part without a free slot sleeps on its task token until a release hands it one.
    expect(part['Wait For Slot']).toMatchObject({
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { Payload: { 'taskToken.$': '$$.Task.Token', 'part': { 'index.$': '$.part.index' } } },
      ResultPath: '$.slot',
      Next: 'Create Processing',
    });
    expect(part['Create Processing'].Next).toBe('Poll Processing');
    expect(part['Poll Processing'].Next).toBe('Processing Outcome?');
    const outcomes = Object.fromEntries(
      (part['Processing Outcome?'].Choices as Record<string, unknown>[]).flatMap((c) =>
        'Or' in c ? (c.Or as { StringEquals: string }[]).map((o) => [o.StringEquals, c.Next]) : [[c.StringEquals, c.Next]],
      ),
    );
    expect(outcomes).toEqual({
      WAIT: 'Wait For Processing',
      RESTART: 'Restart Processing',
      OK: 'Store Results',
      FAILED: 'Store Results', // partial results, under failed/
      TIMEOUT: 'Finish Part',
    });
    expect(part['Wait For Processing']).toEqual({ Type: 'Wait', SecondsPath: '$.poll.waitSeconds', Next: 'Poll Processing' });
    expect(part['Restart Processing'].Next).toBe('Wait For Processing');
    expect(part['Store Results'].Next).toBe('Finish Part');
    expect(part['Finish Part'].End).toBe(true);
    for (const name of ['Acquire Slot', 'Wait For Slot', 'Create Processing', 'Poll Processing', 'Restart Processing', 'Store Results']) {
      expect(part[name].Catch, name).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Finish Part' }]);
    }
  });

  it('retries transient errors on every Task with backoff and jitter, and never waits a fixed time', () => {
    const checkedTasks: string[] = [];
    const checkedWaits: string[] = [];
    for (const machine of machinesOf(local.definition as never)) {
      for (const [name, state] of Object.entries(machine.States)) {
        if (state.Type === 'Wait') {
          checkedWaits.push(name);
          expect(state.Seconds, name).toBeUndefined();
          // No slot wait any more (admission sleeps on a task token): the poll and image-preprocessing waits.
          expect(state.SecondsPath, name).toMatch(/^\$\.(upload|poll)\.waitSeconds$/);
        }
        if (state.Type !== 'Task') continue;
        checkedTasks.push(name);
        expect(state.Retry, name).toEqual([
          expect.objectContaining({
            ErrorEquals: expect.arrayContaining([
              'Lambda.ServiceException',
              'Lambda.TooManyRequestsException',
              'Lambda.SdkClientException',
              'MapflowUnavailable',
              'MapflowRateLimited',
              'MapflowOutcomeUnknown',
            ]),
            BackoffRate: 2,
            JitterStrategy: 'FULL',
          }),
        ]);
      }
    }
    // Every catalogue Task was looked at, and the poll and image waits too.
    expect(checkedTasks.sort()).toEqual(TASKS.map((t) => t.state).sort());
    expect(checkedWaits.length).toBeGreaterThanOrEqual(2);
  });

  it('takes the poll policy and concurrency options (state machine timeout, Map concurrency)', () => {
    // Act
    const custom = synthLocalDefinition({ maxConcurrentProcessings: 2, pollPolicy: { maxJobSeconds: 3_600 } });

    // Assess
    expect((custom.definition.States as States)['Process Parts'].MaxConcurrency).toBe(2);
    expect(custom.definition.TimeoutSeconds).toBe(3_600 + 7 * 86_400 + 6 * 3_600); // maxJobSeconds + MAX_AWAITING_SECONDS + margin
    expect(local.definition.TimeoutSeconds).toBe(86_400 + 7 * 86_400 + 6 * 3_600);
  });

  it("passes aws-local-stepfunctions' own validator, with path and ARN checks", () => {
    expect(() => new StateMachine(local.definition as never, { validationOptions: { checkPaths: true, checkArn: true } })).not.toThrow();
  });

  it("is refused by that validator when a target is broken (the check can fail)", () => {
    // Prepare
    const broken = structuredClone(local.definition) as { States: States };
    broken.States['Plan Processing'].Next = 'No Such State';

    // Act / Assess
    expect(() => new StateMachine(broken as never, { validationOptions: { checkPaths: true, checkArn: true } })).toThrow();
  });
});

describe('resolveIntrinsics', () => {
  it('resolves Join, GetAtt of functions and pseudo parameters, and refuses anything else', () => {
    const arns = new Map([['Fn1', 'arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-x']]);
    expect(resolveIntrinsics({ 'Fn::Join': ['', ['a', { 'Fn::GetAtt': ['Fn1', 'Arn'] }, { Ref: 'AWS::Region' }]] }, arns)).toBe(
      'aarn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-xus-east-1',
    );
    expect(() => resolveIntrinsics({ 'Fn::GetAtt': ['Other', 'Arn'] }, arns)).toThrow(/Other/);
    expect(() => resolveIntrinsics({ 'Fn::ImportValue': 'x' }, arns)).toThrow(/unsupported/);
  });
});
