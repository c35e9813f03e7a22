/**
 * History budget (issue 10 point 5): every accepted setting keeps every
 * execution under 25,000 history events. The budget is computed from the
 * synthesized definition (lib/private/history-budget.ts); here it is checked against
 * small definitions, against the construct's validation, and against runs of
 * the real definition in the local engine (aws-local-stepfunctions) with
 * every loop driven to its bound by stub handlers that use the real stop rules
 * (pollBudgetExhausted, nextPollSeconds) and waits overridden to 0.
 */
import { App, Stack } from 'aws-cdk-lib';
import { StateMachine } from 'aws-local-stepfunctions';
import { beforeAll, describe, expect, it } from 'vitest';
import { awaitingPollsBound, DEFAULT_POLL_POLICY, maxPollsOf, nextPollSeconds, pollBudgetExhausted, type PollPolicy } from '../../../functions/polling/poll-policy.ts';
import {
  bridgeLoopBounds,
  definitionOf,
  EVENTS_PER_VISIT,
  EXECUTION_EVENTS,
  HISTORY_EVENT_LIMIT,
  historyBudget,
  HistoryBudgetError,
  type AslDefinition,
  type ExecutionBudget,
} from '../../../lib/private/history-budget.ts';
import { MapflowBridge } from '../../../lib/mapflow-bridge.ts';

const SYNTH_TIMEOUT = 240_000;
const RUN_TIMEOUT = 600_000;

function bridgeDefinition(pollPolicy?: Partial<PollPolicy>): AslDefinition {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const bridge = new MapflowBridge(new Stack(app, 'Budget'), 'Bridge', { dashboard: false, pollPolicy });
  return definitionOf(bridge.stateMachine);
}

const lambda = (next?: string) => ({ Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:000000000000:function:f', ...(next ? { Next: next } : { End: true }) });

describe('historyBudget on small definitions', () => {
  it('counts a straight path by state type', () => {
    // Prepare
    const definition = {
      StartAt: 'A',
      States: { A: lambda('B'), B: { Type: 'Choice', Choices: [{ Next: 'C' }], Default: 'D' }, C: { Type: 'Succeed' }, D: { Type: 'Fail' } },
    } as unknown as AslDefinition;

    // Act
    const [top] = historyBudget(definition, {});

    // Assess
    expect(top.events).toBe(EXECUTION_EVENTS + EVENTS_PER_VISIT.lambdaTask + EVENTS_PER_VISIT.Choice + EVENTS_PER_VISIT.Succeed + EVENTS_PER_VISIT.Fail);
  });

  it('multiplies a bounded loop: Task + Choice + Wait per turn', () => {
    // Prepare
    const definition = {
      StartAt: 'Poll',
      States: { Poll: lambda('Done?'), 'Done?': { Type: 'Choice', Choices: [{ Next: 'End' }], Default: 'Wait' }, Wait: { Type: 'Wait', Seconds: 1, Next: 'Poll' }, End: { Type: 'Succeed' } },
    } as unknown as AslDefinition;

    // Act
    const [top] = historyBudget(definition, { Poll: { visits: 100, source: 'test' } });

    // Assess: 100 polls, at most 101 Choices and Waits (one more than the bounded Task)
    expect(top.loops).toEqual([expect.objectContaining({ bounds: { Poll: 100 }, eventsPerTurn: 9 })]);
    expect(top.events).toBe(EXECUTION_EVENTS + 100 * 5 + 101 * 2 + 101 * 2 + 2);
  });

  it('refuses a loop that no bounded Task state breaks', () => {
    // Prepare
    const definition = {
      StartAt: 'Poll',
      States: { Poll: lambda('Wait'), Wait: { Type: 'Wait', Seconds: 1, Next: 'Poll' } },
    } as unknown as AslDefinition;

    // Act / Assess
    expect(() => historyBudget(definition, {})).toThrow(HistoryBudgetError);
    expect(() => historyBudget(definition, {})).toThrow(/loop through .*'Poll'.* has no bounded Task state/);
  });

  it('adds a retry reserve when Tasks retry', () => {
    // Prepare
    const definition = { StartAt: 'A', States: { A: { ...lambda(), Retry: [{ ErrorEquals: ['X'], MaxAttempts: 6 }] } } } as unknown as AslDefinition;

    // Act
    const [top] = historyBudget(definition, {});

    // Assess
    expect(top.retryReserve).toBe(50 * 6 * 3);
  });
});

describe('the bridge definition', () => {
  let definition: AslDefinition;
  let budgets: ExecutionBudget[];
  beforeAll(() => {
    definition = bridgeDefinition();
    budgets = historyBudget(definition, bridgeLoopBounds(DEFAULT_POLL_POLICY));
  }, SYNTH_TIMEOUT);

  it('fits every execution (top level and each Distributed Map child) with the default settings', () => {
    expect(budgets.map((b) => b.execution)).toEqual(['top level', 'Process Parts']);
    for (const b of budgets) {
      expect(b.events, b.execution).toBeLessThanOrEqual(HISTORY_EVENT_LIMIT);
      // The poll loop is the bulk of a child's history: the count is not trivially small.
      expect(b.events, b.execution).toBeGreaterThan(5_000);
    }
  });

  it('refuses a poll policy whose worst case passes 25,000 events, and says what to change', () => {
    // Act / Assess: two days of polls at 60 s need about 3,200 polls x 14 events.
    expect(() => bridgeDefinition({ maxJobSeconds: 2 * 86_400 })).toThrow(/history .* events|raise pollPolicy.maxSeconds/);
  }, SYNTH_TIMEOUT);

  it('accepts the worst accepted setting found by search, and refuses the next one', () => {
    // Prepare: the largest maxJobSeconds the budget accepts at the default waits.
    const accepted = worstAcceptedMaxJobSeconds(definition);

    // Act / Assess
    expect(() => bridgeDefinition({ maxJobSeconds: accepted })).not.toThrow();
    expect(() => bridgeDefinition({ maxJobSeconds: accepted + 600 })).toThrow(/over Step Functions' 25000/);
    // a CDK ValidationError on the bridge's construct path
    expect(() => bridgeDefinition({ maxJobSeconds: accepted + 600 })).toThrow(expect.objectContaining({ name: 'MapflowBridgeConfigError', constructPath: expect.stringMatching(/\/Bridge$/) }));
  }, 2 * SYNTH_TIMEOUT);

  it('the local engine, with every loop at its bound, writes no more events than the budget and close to it (Process Parts child)', async () => {
    // Prepare: the worst accepted setting.
    const policy: PollPolicy = { ...DEFAULT_POLL_POLICY, maxJobSeconds: worstAcceptedMaxJobSeconds(definition) };
    const mapState = definition.States['Process Parts'] as unknown as { ItemProcessor: AslDefinition };
    const child = { StartAt: mapState.ItemProcessor.StartAt, States: mapState.ItemProcessor.States };
    const [, budget] = historyBudget(definition, bridgeLoopBounds(policy));
    let polls = 0;
    const handlers = {
      'Acquire Slot': () => ({ acquired: true, waitSeconds: 0, attempts: 1 }),
      'Create Processing': () => ({ processingId: 'p-1' }),
      // The real stop rule: the first poll asks for a restart, then WAIT until the poll count is spent;
      // the polls while AWAITING (an ordered scene) do not count, up to their bound (poll-policy.ts).
      'Poll Processing': () => {
        polls++;
        const outcome = polls === 1 ? 'RESTART' : pollBudgetExhausted(policy, polls - awaitingPollsBound(), undefined, new Date()) ? 'TIMEOUT' : 'WAIT';
        return { outcome, waitSeconds: 0, polls };
      },
      'Restart Processing': () => ({ restarts: 1 }),
      'Finish Part': () => ({ ok: true }),
    };

    // Act
    const events = await runAndCount(child, handlers);

    // Assess
    expect(polls).toBe(maxPollsOf(policy) + awaitingPollsBound());
    expect(events).toBeLessThanOrEqual(budget.events - budget.retryReserve);
    expect(events).toBeGreaterThan(budget.events - budget.retryReserve - 60);
    expect(budget.events).toBeLessThanOrEqual(HISTORY_EVENT_LIMIT);
  }, RUN_TIMEOUT);

  it('the local engine, with the image preprocessing wait at its bound, stays within the top-level budget', async () => {
    // Prepare: the upload step's own rule: give up after maxJobSeconds of waits of nextPollSeconds; lowest jitter = most checks.
    const policy: PollPolicy = { ...DEFAULT_POLL_POLICY, maxJobSeconds: worstAcceptedMaxJobSeconds(definition) };
    const [budget] = historyBudget(definition, bridgeLoopBounds(policy));
    let checks = 0;
    let elapsed = 0;
    const handlers = {
      'Register Job': () => ({ jobId: 'j', kind: 'geotiff', alreadyFinal: false, processImages: false }),
      'Inspect GeoTIFF': () => ({ ok: true }),
      'Ensure Mosaic': () => ({ mosaicId: 'm' }),
      'Upload Image': () => {
        checks++;
        if (elapsed > policy.maxJobSeconds) return { ready: true, waitSeconds: 0, checks };
        const waitSeconds = nextPollSeconds(policy, { polls: checks }, () => 0);
        elapsed += waitSeconds;
        return { ready: false, waitSeconds, checks };
      },
      'Finish Job': () => ({ ok: true }),
    };

    // Act
    const events = await runAndCount(definition, handlers, (input) => ({ ...input, job: { kind: 'geotiff', alreadyFinal: false, processImages: false } }));

    // Assess: the loop ran far (most of its bound) and the run fits the budget computed for it.
    expect(checks).toBeGreaterThan(bridgeLoopBounds(policy)['Upload Image'].visits * 0.85);
    expect(checks).toBeLessThanOrEqual(bridgeLoopBounds(policy)['Upload Image'].visits);
    expect(events).toBeLessThanOrEqual(budget.events - budget.retryReserve);
  }, RUN_TIMEOUT);
});

/** Largest maxJobSeconds (to 10 minutes) whose worst case fits, at the default waits. */
function worstAcceptedMaxJobSeconds(definition: AslDefinition): number {
  const fits = (maxJobSeconds: number) =>
    historyBudget(definition, bridgeLoopBounds({ ...DEFAULT_POLL_POLICY, maxJobSeconds })).every((b) => b.events <= HISTORY_EVENT_LIMIT);
  let low = DEFAULT_POLL_POLICY.maxJobSeconds;
  let high = 30 * 86_400;
  expect(fits(low)).toBe(true);
  expect(fits(high)).toBe(false);
  while (high - low > 600) {
    const middle = Math.floor((low + high) / 2);
    if (fits(middle)) low = middle;
    else high = middle;
  }
  return low;
}

/**
 * Runs a definition in aws-local-stepfunctions with local handlers and every
 * Wait at 0 s, and turns its state log into Step Functions history events
 * with the per-type counts of lib/private/history-budget.ts.
 */
async function runAndCount(
  definition: AslDefinition,
  handlers: Record<string, () => unknown>,
  input: (i: Record<string, unknown>) => Record<string, unknown> = (i) => i,
): Promise<number> {
  const waits = Object.entries(definition.States)
    .filter(([, s]) => s.Type === 'Wait')
    .map(([name]) => [name, 0] as const);
  const machine = new StateMachine(definition as never, { validationOptions: { checkArn: false, checkPaths: false } });
  // Every other Task answers {}: it is not on the path the stubs drive.
  const taskNames = Object.entries(definition.States).filter(([, s]) => s.Type === 'Task').map(([name]) => name);
  const local = Object.fromEntries(taskNames.map((name) => [name, async () => (handlers[name] ?? (() => ({})))() as never]));
  // admittedIndex (from the Map's ItemSelector) names another part: this one takes the longer path through Acquire Slot.
  const execution = machine.run(input({ jobId: 'j', input: {}, job: {}, part: { index: 0, name: 'p' }, admittedIndex: -1 }) as never, {
    overrides: { taskResourceLocalHandlers: local, waitTimeOverrides: Object.fromEntries(waits) },
    context: { Execution: { Id: 'arn:aws:states:us-east-1:000000000000:execution:budget:j' } } as never,
  });
  let events = 0;
  const counting = (async () => {
    for await (const event of execution.eventLogs as AsyncGenerator<{ type: string; state?: { name: string } }>) {
      if (event.type === 'ExecutionStarted' || event.type === 'ExecutionSucceeded' || event.type === 'ExecutionFailed') events += 1;
      if (event.type === 'StateEntered') {
        const state = definition.States[event.state!.name];
        events +=
          state.Type === 'Task'
            ? state.Resource?.includes(':states:::')
              ? EVENTS_PER_VISIT.integrationTask
              : EVENTS_PER_VISIT.lambdaTask
            : state.Type === 'Map'
              ? EVENTS_PER_VISIT.distributedMap
              : EVENTS_PER_VISIT[state.Type as 'Choice' | 'Wait' | 'Pass' | 'Succeed' | 'Fail'];
      }
    }
  })();
  const outcome = await execution.result.then(
    () => 'succeeded',
    (error: Error) => error.message,
  );
  // The paths these tests drive end in success (a part that timed out still finishes).
  expect(outcome).toBe('succeeded');
  await counting;
  return events;
}
