/**
 * Issue 37 point 2: a failed Map Run, as Step Functions does it. With no
 * tolerated failure (the default), one failed child execution fails the Map
 * Run; the Map state fails with States.ExceedToleratedFailureThreshold, which
 * its Catch matches (States.ALL), whatever the child's own error was; the
 * children still running are aborted ("Distributed Map failure threshold",
 * docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html;
 * MapRunExecutionCounts `aborted`). An INLINE Map keeps the item's own error.
 */
import { describe, expect, it } from 'vitest';
import { LocalEngine } from '../../src/engine/engine.ts';
import { asTaskResource } from '../../src/engine/lambda.ts';

const ARN = (fn: string) => `arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-${fn}`;

type Failure = 'task' | 'runtime' | 'no-choice';

/** The item a failing part runs: a Task error, a bad path (States.Runtime), or a Choice without a match. */
function itemStates(failure: Failure): Record<string, unknown> {
  const first = failure === 'runtime' ? 'Bad Path' : failure === 'no-choice' ? 'Pick' : 'Work';
  return {
    Route: {
      Type: 'Choice',
      Choices: [
        { Variable: '$.part', NumericEquals: 0, Next: first },
        { Variable: '$.part', NumericGreaterThan: 0, Next: 'Work' },
      ],
    },
    ...(failure === 'runtime' && { 'Bad Path': { Type: 'Pass', InputPath: '$.missing.field', End: true } }),
    ...(failure === 'no-choice' && { Pick: { Type: 'Choice', Choices: [{ Variable: '$.part', NumericEquals: 99, Next: 'Work' }] } }),
    Work: { Type: 'Task', Resource: ARN('work'), End: true },
  };
}

function definition(options: { failure: Failure; mode?: 'DISTRIBUTED' | 'INLINE'; tolerance?: Record<string, number>; maxConcurrency?: number }) {
  const mode = options.mode ?? 'DISTRIBUTED';
  return {
    StartAt: 'Process Parts',
    States: {
      'Process Parts': {
        Type: 'Map',
        ItemsPath: '$.parts',
        ItemSelector: { 'part.$': '$$.Map.Item.Value' },
        ...options.tolerance,
        ...(options.maxConcurrency && { MaxConcurrency: options.maxConcurrency }),
        ItemProcessor: {
          ProcessorConfig: { Mode: mode, ...(mode === 'DISTRIBUTED' ? { ExecutionType: 'STANDARD' } : {}) },
          StartAt: 'Route',
          States: itemStates(options.failure),
        },
        ResultPath: '$.parts',
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Fail Job' }],
        End: true,
      },
      'Fail Job': { Type: 'Pass', Result: 'caught', ResultPath: '$.caught', End: true },
    },
  };
}

/**
 * An engine whose Work task fails for part 0 with a Task error, and holds
 * part 1 (the slow sibling) until released; other parts succeed at once.
 */
function engineFor(options: Parameters<typeof definition>[0]) {
  let release!: () => void;
  const hold = new Promise<void>((resolve) => (release = resolve));
  const executionArns = new Map<number, string>();
  const handler = async (event: unknown) => {
    const { part } = event as { part: number };
    if (part === 0) throw Object.assign(new Error('part 0 could not be recorded'), { name: 'LedgerError' });
    if (part === 1) await hold;
    return { part, ok: true };
  };
  const engine = new LocalEngine({
    definition: definition(options),
    taskResources: { Work: asTaskResource(handler, { functionName: 'work', stateName: 'Work' }) },
  });
  return { engine, release, executionArns };
}

/** The child executions of the job, by their input's part (through the engine's DescribeExecution). */
function childrenOf(engine: LocalEngine, arns: string[]) {
  return arns.map((arn) => engine.describe(arn));
}

describe('a failed Map Run (DISTRIBUTED)', () => {
  for (const [failure, childError] of [
    ['task', 'LedgerError'],
    ['runtime', 'States.Runtime'],
    ['no-choice', 'States.NoChoiceMatched'],
  ] as const) {
    it(`fails the Map with States.ExceedToleratedFailureThreshold, caught by its Catch, when a child fails with ${childError}`, async () => {
      // Prepare
      const { engine, release } = engineFor({ failure });

      // Act
      await engine.start('job-1', { parts: [0, 2] });
      const done = await engine.waitFor('job-1');
      release();

      // Assess
      expect(done?.status).toBe('SUCCEEDED');
      const output = done?.output as { caught?: string; error?: { Error: string; Cause: string } };
      expect(output.caught).toBe('caught');
      expect(output.error?.Error).toBe('States.ExceedToleratedFailureThreshold');
      expect(output.error?.Cause).toContain("'Process Parts'");
      expect(output.error?.Cause).toContain(childError);
      expect(output.error?.Cause).toMatch(/execution:mapflow-bridge\/Process-Parts:[0-9a-f-]{36}/);
    });
  }

  it('aborts the children still running, and describes the failed one as FAILED', async () => {
    // Prepare: part 1 holds until released, part 0 fails
    const seen: string[] = [];
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    let slowStarted!: () => void;
    const slow = new Promise<void>((resolve) => (slowStarted = resolve));
    const engine = new LocalEngine({
      definition: {
        StartAt: 'Process Parts',
        States: {
          'Process Parts': {
            Type: 'Map',
            ItemsPath: '$.parts',
            ItemSelector: { 'part.$': '$$.Map.Item.Value', 'executionArn.$': '$$.Execution.Id' },
            ItemProcessor: {
              ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' },
              StartAt: 'Work',
              States: { Work: { Type: 'Task', Resource: ARN('work'), Parameters: { 'part.$': '$.part', 'executionArn.$': '$$.Execution.Id' }, End: true } },
            },
            Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Caught' }],
            End: true,
          },
          Caught: { Type: 'Pass', End: true },
        },
      },
      taskResources: {
        Work: asTaskResource(
          async (event: unknown) => {
            const { part, executionArn } = event as { part: number; executionArn: string };
            seen[part] = executionArn;
            if (part === 1) {
              slowStarted();
              await hold;
              return { part };
            }
            await slow;
            throw Object.assign(new Error('boom'), { name: 'LedgerError' });
          },
          { functionName: 'work', stateName: 'Work' },
        ),
      },
    });

    // Act
    await engine.start('job-1', { parts: [0, 1] });
    const done = await engine.waitFor('job-1');
    release();

    // Assess
    expect((done?.output as { error?: { Error: string } }).error?.Error).toBe('States.ExceedToleratedFailureThreshold');
    expect(childrenOf(engine, [seen[0]!, seen[1]!]).map((c) => c?.status)).toEqual(['FAILED', 'ABORTED']);
  });

  it('starts no item still waiting for MaxConcurrency once the Map Run failed', async () => {
    // Prepare: one item at a time; the first fails
    const ran: number[] = [];
    const engine = new LocalEngine({
      definition: definition({ failure: 'task', maxConcurrency: 1 }),
      taskResources: {
        Work: asTaskResource(
          async (event: unknown) => {
            const { part } = event as { part: number };
            ran.push(part);
            if (part === 0) throw Object.assign(new Error('boom'), { name: 'LedgerError' });
            return { part };
          },
          { functionName: 'work', stateName: 'Work' },
        ),
      },
    });

    // Act
    await engine.start('job-1', { parts: [0, 2, 3] });
    const done = await engine.waitFor('job-1');
    await engine.close();

    // Assess
    expect((done?.output as { error?: { Error: string } }).error?.Error).toBe('States.ExceedToleratedFailureThreshold');
    expect(ran).toEqual([0]);
  });

  it('lets a failure pass within ToleratedFailureCount, and fails the Map Run above it', async () => {
    // Prepare
    const tolerant = engineFor({ failure: 'task', tolerance: { ToleratedFailureCount: 1 } });
    const strict = engineFor({ failure: 'task', tolerance: { ToleratedFailureCount: 1 } });

    // Act: one failed part (0) of three; then two failed parts (0 twice) of three
    await tolerant.engine.start('job-1', { parts: [0, 2, 3] });
    await strict.engine.start('job-1', { parts: [0, 0, 3] });
    const [passed, failed] = await Promise.all([tolerant.engine.waitFor('job-1'), strict.engine.waitFor('job-1')]);

    // Assess
    const output = passed?.output as { caught?: string; parts?: unknown[] };
    expect(output.caught).toBeUndefined();
    expect(output.parts).toHaveLength(3);
    expect(output.parts?.[0]).toMatchObject({ Error: 'LedgerError' });
    expect(output.parts?.slice(1)).toEqual([{ part: 2, ok: true }, { part: 3, ok: true }]);
    expect((failed?.output as { error?: { Error: string } }).error?.Error).toBe('States.ExceedToleratedFailureThreshold');
  });

  it('counts against ToleratedFailurePercentage with the number of items', async () => {
    // Prepare: 1 failure of 4 items is 25%
    const within = engineFor({ failure: 'task', tolerance: { ToleratedFailurePercentage: 25 } });
    const above = engineFor({ failure: 'task', tolerance: { ToleratedFailurePercentage: 20 } });

    // Act
    await within.engine.start('job-1', { parts: [0, 2, 3, 4] });
    await above.engine.start('job-1', { parts: [0, 2, 3, 4] });
    const [passed, failed] = await Promise.all([within.engine.waitFor('job-1'), above.engine.waitFor('job-1')]);

    // Assess: the item's input is the ItemSelector's, not the engine's wrapper
    expect((passed?.output as { caught?: string }).caught).toBeUndefined();
    expect((passed?.output as { parts: unknown[] }).parts.slice(1)).toEqual([{ part: 2, ok: true }, { part: 3, ok: true }, { part: 4, ok: true }]);
    expect((failed?.output as { error?: { Error: string; Cause: string } }).error?.Cause).toContain('1 item of 4 failed');
  });
});

describe('a failed item of an INLINE Map', () => {
  it("keeps the item's own error", async () => {
    // Prepare
    const { engine } = engineFor({ failure: 'task', mode: 'INLINE' });

    // Act
    await engine.start('job-1', { parts: [0, 2] });
    const done = await engine.waitFor('job-1');

    // Assess
    expect((done?.output as { error?: { Error: string } }).error?.Error).toBe('LedgerError');
  });
});

describe('a refused StartExecution of the Map Run', () => {
  it('still fails the execution, past the Map\'s Catch, as before', async () => {
    // Prepare
    const engine = new LocalEngine({
      definition: definition({ failure: 'task' }),
      taskResources: { Work: asTaskResource(async () => ({ ok: true }), { functionName: 'work', stateName: 'Work' }) },
      authorizeMapRun: async () => {
        throw Object.assign(new Error('not authorized to perform states:StartExecution'), { name: 'AccessDeniedException' });
      },
    });

    // Act
    await engine.start('job-1', { parts: [2] });
    const done = await engine.waitFor('job-1');

    // Assess
    expect(done?.status).toBe('FAILED');
    expect(done?.error?.Error).toBe('AccessDeniedException');
  });
});
