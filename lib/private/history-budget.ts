/**
 * History budget: a Standard execution fails when its history reaches 25,000
 * events ("Quotas related to state machine executions", Step Functions
 * developer guide). The job's loops (wait for a slot, poll the processing,
 * restart it...) add events at every turn, so every accepted setting must keep
 * the worst case of every execution (the top-level one and each Distributed
 * Map child) under the limit.
 *
 * The worst case is computed from the definition itself, not from a number
 * typed here: states are counted by type (the events each type writes, from
 * the HistoryEvent reference), loops are found as strongly connected
 * components of the state graph, and each loop is bounded by the Task states
 * in it whose run count the code limits (LOOP_BOUNDS). A loop without such a
 * state is an error: its worst case is unbounded. So a loop added or removed
 * in lib/private/workflow.ts changes the budget by itself.
 */
import { Stack, type CfnResource } from 'aws-cdk-lib';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { IConstruct } from 'constructs';
import { awaitingPollsBound, maxPollsOf, pollsFor, type PollPolicy } from '../../functions/polling/poll-policy.ts';
import { TASKS, type HandlerName } from '../../functions/core/catalog.ts';
import { MapflowBridgeConfigError } from '../errors.ts';

/** Events after which Step Functions fails a Standard execution. */
export const HISTORY_EVENT_LIMIT = 25_000;

/**
 * History events one visit of a state writes (API_HistoryEvent types):
 * a Task on a Lambda ARN: TaskStateEntered, LambdaFunctionScheduled,
 * LambdaFunctionStarted, LambdaFunctionSucceeded, TaskStateExited; a Task on a
 * service integration: TaskStateEntered, TaskScheduled, TaskStarted,
 * (TaskSubmitted,) TaskSucceeded, TaskStateExited; Choice, Wait, Pass,
 * Succeed: Entered + Exited; Fail: FailStateEntered; a Distributed Map in its
 * parent: MapStateEntered, MapStateStarted, MapRunStarted, MapRunSucceeded,
 * MapStateSucceeded, MapStateExited (its items run as child executions).
 */
export const EVENTS_PER_VISIT = {
  lambdaTask: 5,
  integrationTask: 6,
  Choice: 2,
  Wait: 2,
  Pass: 2,
  Succeed: 2,
  Fail: 1,
  distributedMap: 6,
} as const;
/** ExecutionStarted and ExecutionSucceeded/Failed/TimedOut. */
export const EXECUTION_EVENTS = 2;
/** A retried attempt: LambdaFunctionScheduled, LambdaFunctionStarted, LambdaFunctionFailed (or TimedOut). */
export const EVENTS_PER_RETRY = 3;
/**
 * Retries are not bounded per loop turn by anything but luck: the budget
 * reserves room for this many Task visits exhausting all their retries in one
 * execution (an outage of minutes, not of hours; beyond it the execution may
 * fail on history and the reconciler settles the job).
 */
export const RETRIED_VISITS_RESERVE = 50;

/** Task states whose visits per execution the code bounds, and how. */
export interface LoopBound {
  /** Most visits of the state in one execution. */
  readonly visits: number;
  /** Where the bound comes from (printed in errors and docs). */
  readonly source: string;
}

function taskState(fn: HandlerName): string {
  const entry = TASKS.find((t) => t.fn === fn);
  if (!entry) throw new Error(`history budget: no catalogue entry for ${fn}`);
  return entry.state;
}

/**
 * The bounds of the bridge's loops for a poll policy. A state listed here but
 * absent from the definition is ignored, so a loop removed from the workflow
 * needs no change here; a loop added needs its bound here.
 */
export function bridgeLoopBounds(policy: PollPolicy): Record<string, LoopBound> {
  return {
    // The poll that finds the count spent ends the loop (TIMEOUT); one more for safety.
    // Polls while AWAITING (an ordered scene) are not counted toward maxPollsOf, up to MAX_AWAITING_SECONDS: their bound is added.
    [taskState('poll-processing')]: {
      visits: maxPollsOf(policy) + awaitingPollsBound() + 1,
      source: 'maxPollsOf(pollPolicy): the poll count from maxJobSeconds and the waits; awaitingPollsBound(): the polls while AWAITING',
    },
    [taskState('restart-processing')]: { visits: 1, source: 'shouldRestart: one restart per processing' },
    // Bounded by time only (maxJobSeconds since the upload) with waits of
    // nextPollSeconds without progress, at least 0.9 x the ramp of pollsFor:
    // at most pollsFor / 0.9 checks, plus the first and the one that gives up.
    [taskState('upload-image')]: {
      visits: Math.ceil(pollsFor(policy) / 0.9) + 2,
      source: 'maxJobSeconds since the upload, waits of nextPollSeconds (upload-image.ts)',
    },
  };
}

/** Minimal ASL shapes read here. */
interface AslState {
  Type: string;
  Resource?: string;
  Next?: string;
  Default?: string;
  End?: boolean;
  Choices?: { Next: string }[];
  Catch?: { Next: string }[];
  Retry?: { MaxAttempts?: number }[];
  ItemProcessor?: { ProcessorConfig?: { Mode?: string }; StartAt: string; States: Record<string, AslState> };
  Iterator?: unknown;
  Branches?: unknown[];
}
export interface AslDefinition {
  StartAt: string;
  States: Record<string, AslState>;
}

export interface LoopBudget {
  /** The states of the loop. */
  readonly states: string[];
  /** The bounded Task states of the loop and their bounds. */
  readonly bounds: Record<string, number>;
  /** Worst-case events of one turn through every state of the loop once. */
  readonly eventsPerTurn: number;
}

export interface ExecutionBudget {
  /** 'top level' or the Distributed Map state whose children these are. */
  readonly execution: string;
  /** Worst-case history events of one execution. */
  readonly events: number;
  /** Visits of each state in the worst case. */
  readonly visits: Record<string, number>;
  readonly loops: LoopBudget[];
  /** Events reserved for retries (RETRIED_VISITS_RESERVE visits that use all their retries). */
  readonly retryReserve: number;
}

/** Thrown when a loop has no bound (the construct turns it into a config error). */
export class HistoryBudgetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HistoryBudgetError';
  }
}

/** Worst-case history of every execution the definition runs (top level first, then each Distributed Map's children). */
export function historyBudget(definition: AslDefinition, bounds: Record<string, LoopBound>): ExecutionBudget[] {
  const budgets: ExecutionBudget[] = [];
  const visit = (execution: string, scope: AslDefinition): void => {
    budgets.push(scopeBudget(execution, scope, bounds));
    for (const [name, state] of Object.entries(scope.States)) {
      if (state.Type === 'Map' && state.ItemProcessor) {
        if (state.ItemProcessor.ProcessorConfig?.Mode !== 'DISTRIBUTED') {
          throw new HistoryBudgetError(`Map state '${name}' is INLINE: its iterations share the parent's history; the budget only handles Distributed Maps`);
        }
        visit(name, state.ItemProcessor);
      }
      if (state.Type === 'Parallel' || state.Iterator) {
        throw new HistoryBudgetError(`state '${name}' (${state.Type}) runs inline branches; the budget does not handle them`);
      }
    }
  };
  visit('top level', definition);
  return budgets;
}

function scopeBudget(execution: string, scope: AslDefinition, bounds: Record<string, LoopBound>): ExecutionBudget {
  const names = Object.keys(scope.States);
  const successors = (name: string): string[] => {
    const s = scope.States[name];
    return [s.Next, s.Default, ...(s.Choices ?? []).map((c) => c.Next), ...(s.Catch ?? []).map((c) => c.Next)].filter(
      (n): n is string => typeof n === 'string' && n in scope.States,
    );
  };

  const visits: Record<string, number> = {};
  const loops: LoopBudget[] = [];
  for (const component of stronglyConnected(names, successors)) {
    const cyclic = component.length > 1 || successors(component[0]).includes(component[0]);
    if (!cyclic) {
      visits[component[0]] = 1;
      continue;
    }
    const bounded = component.filter((n) => bounds[n] !== undefined);
    // Every cycle must pass a bounded state: without them the rest must be acyclic.
    const rest = new Set(component.filter((n) => bounds[n] === undefined));
    const restCycles = stronglyConnected([...rest], (n) => successors(n).filter((m) => rest.has(m))).filter(
      (c) => c.length > 1 || successors(c[0]).includes(c[0]),
    );
    if (bounded.length === 0 || restCycles.length > 0) {
      const cycle = restCycles[0] ?? component;
      throw new HistoryBudgetError(
        `${execution}: the loop through ${cycle.map((n) => `'${n}'`).join(', ')} has no bounded Task state, so its history has no worst case; ` +
          'bound one of its Tasks in the code and declare it in bridgeLoopBounds (lib/private/history-budget.ts)',
      );
    }
    // Between two visits of bounded states every other state is visited at most once.
    const total = bounded.reduce((sum, n) => sum + bounds[n].visits, 0);
    for (const n of component) visits[n] = bounds[n] !== undefined ? bounds[n].visits : total + 1;
    loops.push({
      states: component,
      bounds: Object.fromEntries(bounded.map((n) => [n, bounds[n].visits])),
      eventsPerTurn: component.reduce((sum, n) => sum + eventsPerVisit(n, scope.States[n]), 0),
    });
  }

  let events = EXECUTION_EVENTS;
  let mostRetryEvents = 0;
  for (const [name, count] of Object.entries(visits)) {
    const state = scope.States[name];
    events += count * eventsPerVisit(name, state);
    if (state.Type === 'Task' && state.Retry) {
      const attempts = state.Retry.reduce((sum, r) => sum + (r.MaxAttempts ?? 3), 0);
      mostRetryEvents = Math.max(mostRetryEvents, attempts * EVENTS_PER_RETRY);
    }
  }
  const retryReserve = RETRIED_VISITS_RESERVE * mostRetryEvents;
  return { execution, events: events + retryReserve, visits, loops, retryReserve };
}

function eventsPerVisit(name: string, state: AslState): number {
  switch (state.Type) {
    case 'Task':
      return state.Resource?.startsWith('arn:aws:states:::') || state.Resource?.includes(':states:::') ? EVENTS_PER_VISIT.integrationTask : EVENTS_PER_VISIT.lambdaTask;
    case 'Map':
      return EVENTS_PER_VISIT.distributedMap;
    case 'Choice':
    case 'Wait':
    case 'Pass':
    case 'Succeed':
    case 'Fail':
      return EVENTS_PER_VISIT[state.Type];
    default:
      throw new HistoryBudgetError(`state '${name}' has type ${state.Type}, which the history budget does not know`);
  }
}

/** Tarjan's strongly connected components. */
function stronglyConnected(nodes: string[], successors: (n: string) => string[]): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string): void => {
    indices.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of successors(v)) {
      if (!indices.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, indices.get(w)!));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (const n of nodes) if (!indices.has(n)) connect(n);
  return components;
}

/**
 * The definition of a synthesized state machine as plain ASL: the
 * CloudFormation parts of DefinitionString (function ARNs) become a
 * placeholder ARN, which is all the budget needs to know about them.
 */
export function definitionOf(stateMachine: sfn.StateMachine): AslDefinition {
  const cfn = stateMachine.node.defaultChild as CfnResource & { definitionString?: unknown };
  const resolved = Stack.of(stateMachine).resolve(cfn.definitionString);
  const text = flatten(resolved);
  return JSON.parse(text) as AslDefinition;
}

function flatten(value: unknown): string {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] } | undefined)?.['Fn::Join'];
  if (join) return join[1].map((part) => (typeof part === 'string' ? part : flattenPart(part))).join(join[0]);
  throw new HistoryBudgetError('the state machine definition is neither a string nor an Fn::Join');
}

function flattenPart(part: unknown): string {
  const join = (part as { 'Fn::Join'?: unknown })?.['Fn::Join'];
  return join ? flatten(part) : 'arn:aws:lambda:region:000000000000:function:token';
}

/** Describes the worst case of each execution, for error messages and docs. */
export function describeBudget(budgets: ExecutionBudget[]): string {
  return budgets
    .map((b) => {
      const loops = b.loops.map((l) => `${Object.entries(l.bounds).map(([n, v]) => `${v} x '${n}'`).join(' + ')} (${l.eventsPerTurn} events a turn)`).join('; ');
      return `${b.execution}: ${b.events} events${loops ? ` [loops: ${loops}]` : ''}, ${b.retryReserve} of them reserved for retries`;
    })
    .join('\n');
}

/**
 * Fails the synth when a setting lets any execution's worst case pass the
 * history limit (or a loop has no bound), with an error on `scope` (the
 * construct whose pollPolicy it is). Returns the budgets otherwise.
 */
export function checkHistoryBudget(scope: IConstruct, stateMachine: sfn.StateMachine, policy: PollPolicy): ExecutionBudget[] {
  let budgets: ExecutionBudget[];
  try {
    budgets = historyBudget(definitionOf(stateMachine), bridgeLoopBounds(policy));
  } catch (cause) {
    if (cause instanceof HistoryBudgetError) throw new MapflowBridgeConfigError(cause.message, scope, { cause });
    throw cause;
  }
  const over = budgets.filter((b) => b.events > HISTORY_EVENT_LIMIT);
  if (over.length > 0) {
    throw new MapflowBridgeConfigError(
      `pollPolicy ${JSON.stringify(policy)} lets an execution's history reach ${Math.max(...over.map((b) => b.events))} events, ` +
        `over Step Functions' ${HISTORY_EVENT_LIMIT}; raise pollPolicy.maxSeconds or lower pollPolicy.maxJobSeconds (or set a lower maxPolls).\n${describeBudget(budgets)}`,
      scope,
    );
  }
  return budgets;
}
