/**
 * The local Step Functions: runs the synthesized state machine definition with
 * aws-local-stepfunctions, each Task state bound to its handler in process.
 *
 * It behaves like StartExecution where the bridge relies on it:
 * - an execution's name is unique: starting a name that is running answers
 *   'duplicate' (ExecutionAlreadyExists on AWS, or the first start's answer
 *   for the same input), and so does a name whose execution closed (any
 *   status) less than 90 days ago, across restarts: the names are kept in the
 *   state folder (execution-names.ts, issue 37 point 4);
 * - an execution the bridge was running when it stopped (a kill, a Ctrl-C)
 *   never stopped on AWS: `resumeExecution` runs it again under its own name,
 *   as the continuation of the same execution, and only for such a name;
 * - a Task of an execution stopped before the Task's Lambda was invoked is
 *   not invoked (StopExecution right after StartExecution runs nothing);
 * - the context object carries the execution ARN (`$$.Execution.Id`) and name;
 * - an item of a DISTRIBUTED Map is a child execution, as on AWS: its
 *   `$$.Execution.Id` is `execution:<machine>/<map run label>:<id>` (not the
 *   job's ARN), DescribeExecution answers for it while it runs, and stopping
 *   the job's execution aborts it (issue 37 point 1: a child ARN recorded for
 *   the reconciler now meets the template's IAM locally too);
 * - a DISTRIBUTED Map whose failed children exceed its tolerated failures
 *   (none by default) fails with States.ExceedToleratedFailureThreshold,
 *   which its Catch matches, and its other children are aborted (issue 37
 *   point 2, see failedItem);
 * - every state's input and output is held to 256 KiB: above it
 *   States.DataLimitExceeded fails the execution past any Catch (issue 37
 *   point 3, see checkStatePayloads).
 */
import { randomUUID } from 'node:crypto';
import { StateMachine, ExecutionAbortedError, ExecutionError, ExecutionTimeoutError } from 'aws-local-stepfunctions';
import { LocalTaskTokens } from './task-tokens.ts';
import { DataLimitExceeded, STATE_PAYLOAD_LIMIT_BYTES } from './lambda.ts';
import { LOCAL_AWS } from '../local-account.ts';
import { ExecutionNames } from './execution-names.ts';

/** Stands for `$$.Task.Token` in a waiting state's Parameters until the engine gives the invocation its token. */
const TASK_TOKEN_PLACEHOLDER = '__LOCAL_TASK_TOKEN__';

export const LOCAL_REGION = LOCAL_AWS.region;
export const LOCAL_ACCOUNT = LOCAL_AWS.account;
export const DEFAULT_STATE_MACHINE_NAME = 'mapflow-bridge';

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface ExecutionRecord {
  name: string;
  arn: string;
  input: unknown;
  status: ExecutionStatus;
  startedAt: string;
  stoppedAt?: string;
  output?: unknown;
  /** Why a FAILED execution failed: the error name and cause, as DescribeExecution reports them. */
  error?: { Error: string; Cause: string };
}

export type TaskResource = (input: unknown) => Promise<unknown>;

export interface LocalEngineOptions {
  /** The ASL definition (as synthesized for AWS). */
  definition: Record<string, unknown>;
  /**
   * Check the definition (ASL schema, paths, ARNs) when the engine is built.
   * Default true; the local bridge checks a definition once, before it is
   * cached (checkDefinition), and builds the engine without checking again.
   */
  checkDefinition?: boolean;
  /** Task state name -> in-process resource. Every Task state must be bound. */
  taskResources: Record<string, TaskResource>;
  stateMachineName?: string;
  /** Wait state name -> milliseconds, replacing Seconds/SecondsPath (to make tests fast). */
  waitOverridesMs?: Record<string, number>;
  /** Pause before every Retry, in milliseconds, replacing IntervalSeconds/BackoffRate. */
  retryIntervalMs?: number;
  /**
   * TimeoutSeconds given to Task states that have none. aws-local-stepfunctions
   * would otherwise stop a task after 60 s; on AWS the Lambda's own timeout
   * (up to 900 s) is the limit.
   */
  defaultTaskTimeoutSeconds?: number;
  /**
   * The names of the executions, kept 90 days after they close (default: in
   * memory, for this engine's lifetime; the local bridge keeps them in its
   * state folder, so a restart forgets none).
   */
  executionNames?: ExecutionNames;
  /** Called when an execution stops, whatever the outcome. */
  onExecutionStopped?: (execution: ExecutionRecord) => void;
  /** Task tokens of `.waitForTaskToken` states (default: a registry of its own, `engine.taskTokens`). */
  taskTokens?: LocalTaskTokens;
  /** Called when a Task invocation ends (benchmarks: where a job's time goes). Must not throw. */
  onTask?: (trace: TaskTrace) => void;
  /**
   * Judges a Task state's call before it is made (local IAM: the state
   * machine's role, packages/local/src/auth/state-machine-role.ts). A rejection fails the
   * Task with that error, which the state's Retry and Catch match; the
   * function is not invoked.
   */
  authorizeTask?: (state: string) => Promise<void>;
  /**
   * Judges the StartExecution a DISTRIBUTED Map state makes for its child
   * executions (local IAM, packages/local/src/auth/state-machine-role.ts), given the Map
   * state's name. The engine runs the item processor inline
   * (aws-local-stepfunctions' Map), so it asks before each Task of a
   * DISTRIBUTED item processor (before authorizeTask; the answer is the
   * caller's to cache): nothing an item does calls anything before its first
   * Task. A rejection is made uncatchable (see `uncatchable`): no Retry or
   * Catch of the item matches it, the item fails, the Map state fails with it
   * (its own Retry and Catch do not match it either, as none matches a
   * States.Runtime error on AWS) and so does the execution; the function is
   * not invoked.
   */
  authorizeMapRun?: (mapState: string) => Promise<void>;
  /** The state machine's role (`$$.Execution.RoleArn`); default a placeholder role of the local account. */
  roleArn?: string;
  /** Told the size of each state's output as it exits (UTF-8 bytes of its JSON; Step Functions' limit is STATE_PAYLOAD_LIMIT_BYTES). */
  onStateOutput?: (output: StateOutputTrace) => void;
}

/** One Task invocation, timed (epoch ms). For a waiting state, `endedAt` is when its token was settled. */
export interface StateOutputTrace {
  execution: string;
  state: string;
  bytes: number;
}

export interface TaskTrace {
  state: string;
  input: unknown;
  startedAt: number;
  endedAt: number;
  failed: boolean;
}

/** A definition Task state that has no in-process handler. */
export class UnboundTaskError extends Error {
  constructor(states: string[]) {
    super(`No local handler for Task state(s): ${states.join(', ')}`);
    this.name = 'UnboundTaskError';
  }
}

interface Running {
  record: ExecutionRecord;
  abort: () => void;
  done: Promise<ExecutionRecord>;
}

const CHECKS = { checkPaths: true, checkArn: true } as const;

interface ChildExecution {
  record: ExecutionRecord;
  /** The name of the (top-level) execution whose Map Run started it. */
  parent: string;
}

/**
 * The ItemProcessor of every DISTRIBUTED Map of every engine, with its Map Run
 * label. aws-local-stepfunctions runs a Map's items with
 * `new StateMachine(ItemProcessor).run(item, runOptions)`, runOptions carrying
 * the parent's context: the run below gives such an item a child's context.
 */
const distributedProcessors = new WeakMap<object, DistributedProcessor>();
let childRunsPatched = false;

interface DistributedProcessor {
  engine: LocalEngine;
  label: string;
  /** The Map state's name (for the Cause of a failed Map Run). */
  mapState: string;
  /** ToleratedFailureCount / ToleratedFailurePercentage of the Map state (neither given: a count of 0, none tolerated). */
  toleratedCount?: number;
  toleratedPercentage?: number;
}

/**
 * One Map Run: aws-local-stepfunctions builds a new StateMachine for the
 * ItemProcessor each time the Map state runs (MapStateAction.execute), so
 * that instance is the run's key.
 */
interface MapRun {
  failed: number;
  /** The first failed child: its ARN, error and cause. */
  first?: { arn: string; error: string; cause: string };
  /** Items the Map Run has (known when ToleratedFailurePercentage needs it, see ITEM_COUNT). */
  total?: number;
  /** UTF-8 bytes of the Map's combined result so far (the JSON array of the items' outputs). */
  resultBytes?: number;
  /** The Map state failed: items not started yet never start (see runAsChild). */
  closed?: boolean;
}
const mapRuns = new WeakMap<object, MapRun>();

/**
 * A Distributed Map with a ToleratedFailurePercentage needs the number of
 * items, which nothing the library hands to an item carries: the engine wraps
 * the Map's ItemSelector as `{ [ITEM]: <selector>, [ITEM_COUNT]:
 * States.ArrayLength(<ItemsPath>) }` and unwraps it before the item runs.
 */
const ITEM = '__mapflowLocalItem';
const ITEM_COUNT = '__mapflowLocalItemCount';

/**
 * States.ExceedToleratedFailureThreshold: the Map state of a failed Map Run
 * (Step Functions developer guide, "Distributed Map failure threshold";
 * concepts-error-handling). A plain error: the Map's Retry and Catch match it
 * by name or States.ALL, whatever the child's own error was. The Cause says
 * which child failed and how many did; it does not reproduce the bytes of the
 * Cause AWS writes.
 */
export class ExceedToleratedFailureThreshold extends Error {
  constructor(mapState: string, run: MapRun, tolerated: string) {
    const first = run.first ? ` The first failed child execution was ${run.first.arn} (${run.first.error}: ${run.first.cause}).` : '';
    super(`The Map Run of '${mapState}' failed: ${run.failed} item${run.failed === 1 ? '' : 's'}${run.total === undefined ? '' : ` of ${run.total}`} failed, above the tolerated ${tolerated}.${first}`);
    this.name = 'States.ExceedToleratedFailureThreshold';
  }
}

/** A refusal of a Map Run's StartExecution (authorizeMapRuns): it fails the Map state as it is, uncatchable. */
const mapRunRefusals = new WeakSet<object>();

type RunArgs = Parameters<StateMachine['run']>;

function runItemsAsChildExecutions(): void {
  if (childRunsPatched) return;
  childRunsPatched = true;
  const run = StateMachine.prototype.run;
  StateMachine.prototype.run = function runAsChild(this: StateMachine, input: RunArgs[0], options?: RunArgs[1]) {
    const processor = distributedProcessors.get((this as unknown as { definition: object }).definition);
    const context = options?.context as { Execution?: { Name?: string } } | undefined;
    if (!processor || !context?.Execution?.Name) return run.call(this, input, options);
    let mapRun = mapRuns.get(this);
    if (!mapRun) mapRuns.set(this, (mapRun = { failed: 0 }));
    // The library's MapStateAction aborts the items running when one fails, but its p-limit queue still
    // starts the items waiting for MaxConcurrency; Step Functions starts no child of a failed Map Run.
    if (mapRun.closed) return { abort: () => undefined, eventLogs: (async function* () {})(), result: Promise.resolve(null) } as ReturnType<StateMachine['run']>;
    if (input && typeof input === 'object' && ITEM in input) {
      const wrapped = input as Record<string, unknown>;
      if (typeof wrapped[ITEM_COUNT] === 'number') mapRun.total = wrapped[ITEM_COUNT];
      input = wrapped[ITEM] as RunArgs[0];
    }
    const child = processor.engine.startChild(processor.label, context.Execution.Name, input);
    const execution = run.call(this, input, { ...options, context: { ...context, Execution: { ...context.Execution, Id: child.arn, Name: child.name } } });
    let aborted = false;
    const abort = execution.abort;
    execution.abort = () => {
      aborted = true;
      abort();
    };
    const rootAborted = () => Boolean((options as { _rootAbortSignal?: AbortSignal } | undefined)?._rootAbortSignal?.aborted);
    const run_ = mapRun;
    const result = execution.result.then(
      (output) => {
        processor.engine.stopChild(child.arn, aborted || rootAborted() ? 'ABORTED' : 'SUCCEEDED', output);
        return addToResult(processor, run_, output);
      },
      (error: unknown) => {
        const status = statusOf(error);
        processor.engine.stopChild(child.arn, status);
        const inner = error instanceof ExecutionError ? error.cause : error;
        // Stopped, or refused its StartExecution: the Map state fails as before (see authorizeMapRun).
        if (status === 'ABORTED' || (inner && typeof inner === 'object' && mapRunRefusals.has(inner))) throw error;
        return addToResult(processor, run_, failedItem(processor, run_, child.arn, status === 'TIMED_OUT' ? { Error: 'States.Timeout', Cause: 'The child execution timed out.' } : describeError(error)));
      },
    );
    // MapStateAction awaits `result` (all items), then aborts every item's run when one rejects.
    return {
      ...execution,
      result: result.catch((error: unknown) => {
        run_.closed = true;
        throw error;
      }),
    };
  };
}

/**
 * An item's output joins the Map's result: the JSON array of every item's
 * output is the Map state's raw result, held to 256 KiB like any state's
 * (without a ResultWriter, which the local engine does not run). Above it the
 * Map state fails with States.DataLimitExceeded, which nothing catches.
 */
function addToResult<T>(processor: DistributedProcessor, run: MapRun, output: T): T {
  // '[' first, then each item and its ',' (the last one's is the closing ']').
  run.resultBytes = (run.resultBytes ?? 1) + payloadBytes(output) + 1;
  if (run.resultBytes > STATE_PAYLOAD_LIMIT_BYTES) throw new DataLimitExceeded(processor.mapState, run.resultBytes, 'combined result of the Map Run');
  return output;
}

/**
 * A child execution FAILED or TIMED_OUT. Within the Map's tolerance its place
 * in the Map's result holds its error (as a ResultWriter's FAILED file lists
 * a failed child's Error and Cause; AWS's exact shape there is not
 * reproduced); above it the Map Run fails: the rejection fails the Map state
 * with States.ExceedToleratedFailureThreshold, and aws-local-stepfunctions
 * aborts the other items (their child executions end ABORTED), as Step
 * Functions stops the children of a failed Map Run.
 */
function failedItem(processor: DistributedProcessor, run: MapRun, arn: string, error: { Error: string; Cause: string }): { Error: string; Cause: string } {
  run.failed += 1;
  run.first ??= { arn, error: error.Error, cause: error.Cause };
  // Each threshold the definition gives is a maximum "before the Map Run fails" (UpdateMapRun,
  // DescribeMapRun): exceeding either fails it; with neither, none is tolerated.
  const { toleratedCount: count, toleratedPercentage: percentage } = processor;
  const overCount = count !== undefined && run.failed > count;
  const overPercentage = percentage !== undefined && run.total !== undefined && (run.failed / Math.max(run.total, 1)) * 100 > percentage;
  if (!overCount && !overPercentage) return error;
  const tolerated = overCount ? `count of ${count}` : `${percentage}%`;
  throw new ExceedToleratedFailureThreshold(processor.mapState, run, tolerated);
}

/** UTF-8 bytes of a value's JSON, as Step Functions measures a payload (remembered per object: a state's output is the next one's input). */
const measured = new WeakMap<object, number>();
function payloadBytes(value: unknown): number {
  if (value && typeof value === 'object') {
    const known = measured.get(value);
    if (known !== undefined) return known;
    const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
    measured.set(value, bytes);
    return bytes;
  }
  return Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
}

/**
 * StartExecution with an input above 256 KiB: AWS refuses the call itself
 * (StartExecution `input`: "Length Constraints: Maximum length of 262144",
 * in UTF-8 bytes), with a ValidationException.
 */
export class ExecutionInputTooLarge extends Error {
  constructor(bytes: number) {
    super(`1 validation error detected: Value at 'input' failed to satisfy constraint: Member must have length less than or equal to ${STATE_PAYLOAD_LIMIT_BYTES} (it is ${bytes} bytes)`);
    this.name = 'ValidationException';
  }
}

let payloadsChecked = false;
type EventLoggerMethods = {
  dispatchStateEnteredEvent: (stateName: string, stateType: string, input: unknown) => void;
  dispatchStateExitedEvent: (stateName: string, stateType: string, input: unknown, output: unknown) => void;
};

/**
 * 256 KiB on every state's input and output ("Maximum input or output size
 * for a task, state, or execution: 256 KiB of data as a UTF-8 encoded
 * string", Step Functions service quotas); above it the execution fails with
 * States.DataLimitExceeded, which no Retry or Catch matches (a terminal
 * error States.ALL does not catch, concepts-error-handling).
 *
 * The interception point: aws-local-stepfunctions' StateMachine.execute
 * tells its run's EventLogger of each state's input (StateEntered) and
 * output (StateExited), inside the loop's try but after the state's own
 * Retry and Catch were applied. Throwing there fails the execution (or the
 * Map item's run: a DISTRIBUTED child then counts as a failed child) without
 * any Catch seeing it. The EventLogger class is not exported: its prototype is
 * reached through the first run's logger.
 */
function checkStatePayloads(): void {
  if (payloadsChecked) return;
  payloadsChecked = true;
  const proto = StateMachine.prototype as unknown as { execute: (input: unknown, options: { eventLogger: object }, cleanup: () => void) => Promise<unknown> };
  const execute = proto.execute;
  let loggerPatched = false;
  proto.execute = function executeChecked(this: unknown, input, options, cleanup) {
    if (!loggerPatched) {
      loggerPatched = true;
      const logger = Object.getPrototypeOf(options.eventLogger) as EventLoggerMethods;
      const entered = logger.dispatchStateEnteredEvent;
      const exited = logger.dispatchStateExitedEvent;
      logger.dispatchStateEnteredEvent = function (this: unknown, stateName, stateType, stateInput) {
        const bytes = payloadBytes(stateInput);
        if (bytes > STATE_PAYLOAD_LIMIT_BYTES) throw new DataLimitExceeded(stateName, bytes, 'input');
        entered.call(this, stateName, stateType, stateInput);
      };
      logger.dispatchStateExitedEvent = function (this: unknown, stateName, stateType, stateInput, output) {
        const bytes = payloadBytes(output);
        if (bytes > STATE_PAYLOAD_LIMIT_BYTES) throw new DataLimitExceeded(stateName, bytes, 'output');
        exited.call(this, stateName, stateType, stateInput, output);
      };
    }
    return execute.call(this, input, options, cleanup);
  };
}

/** Throws when aws-local-stepfunctions rejects the definition (what a LocalEngine checks when built). */
export function checkDefinition(definition: Record<string, unknown>): void {
  new StateMachine(structuredClone(definition) as unknown as ConstructorParameters<typeof StateMachine>[0], { validationOptions: CHECKS });
}

export class LocalEngine {
  readonly stateMachineArn: string;
  private readonly machine: StateMachine;
  private readonly executions_ = new Map<string, Running>();
  private readonly options: LocalEngineOptions;
  private readonly taskStates: string[];
  private readonly waitStates: string[];
  /** The callback pattern's tokens: SendTaskSuccess settles them (see task-tokens.ts). */
  readonly taskTokens: LocalTaskTokens;
  private closed = false;
  /** The names taken (running, interrupted by a stop of the bridge, or closed less than 90 days ago). */
  readonly names: ExecutionNames;
  /** Executions aborted by close(): on AWS they would go on, so their names stay RUNNING (interrupted) for the next start. */
  private readonly shutDown = new Set<string>();
  /** Task invocations in flight: an aborted execution does not stop a running handler. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly tracked: Record<string, TaskResource>;
  /** Task invocations so far, by state name (the Lambda calls AWS would bill). */
  readonly taskInvocations = new Map<string, number>();

  constructor(options: LocalEngineOptions) {
    this.options = options;
    this.names = options.executionNames ?? new ExecutionNames();
    const name = options.stateMachineName ?? DEFAULT_STATE_MACHINE_NAME;
    this.stateMachineArn = `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:${name}`;
    const definition = structuredClone(options.definition);
    const { tasks, waits, tokenStates, distributedMapsOf, distributedProcessorsOf } = collectStates(definition, options.defaultTaskTimeoutSeconds ?? 900);
    runItemsAsChildExecutions();
    checkStatePayloads();
    for (const [processor, map] of distributedProcessorsOf) distributedProcessors.set(processor, { engine: this, ...map });
    const unbound = tasks.filter((state) => !options.taskResources[state]);
    if (unbound.length > 0) throw new UnboundTaskError(unbound);
    this.taskStates = tasks;
    this.taskTokens = options.taskTokens ?? new LocalTaskTokens();
    this.tracked = Object.fromEntries(
      tasks.map((state) => [
        state,
        (input: unknown) => {
          const resource = options.taskResources[state] as TaskResource;
          const startedAt = Date.now();
          const call = () => {
            // Stopped while its Task was being scheduled (StopExecution right after StartExecution): on AWS no
            // Lambda is invoked for a stopped execution; the execution has ended, nobody reads this error.
            if (this.stoppedBeforeInvoke(input)) return Promise.reject(new Error(`Task '${state}' not invoked: its execution was stopped`));
            // A state's input after Parameters above the quota (concepts-error-handling, States.DataLimitExceeded).
            const bytes = payloadBytes(input);
            if (bytes > STATE_PAYLOAD_LIMIT_BYTES) return Promise.reject(new DataLimitExceeded(state, bytes, 'input after Parameters'));
            this.taskInvocations.set(state, (this.taskInvocations.get(state) ?? 0) + 1);
            return tokenStates.has(state) ? this.invokeWaiting(resource, input) : resource(input);
          };
          const authorize = options.authorizeTask;
          const authorizeThenCall = () => (authorize ? authorize(state).then(call) : call());
          // Inside a DISTRIBUTED Map, its StartExecution first (the child execution this item is).
          const mapRuns = this.authorizeMapRuns(distributedMapsOf.get(state) ?? []);
          const invocation = mapRuns ? mapRuns.then(authorizeThenCall) : authorizeThenCall();
          if (options.onTask) {
            const trace = (failed: boolean) => options.onTask?.({ state, input, startedAt, endedAt: Date.now(), failed });
            invocation.then(() => trace(false), () => trace(true));
          }
          this.inFlight.add(invocation);
          const forget = () => this.inFlight.delete(invocation);
          invocation.then(forget, forget);
          return invocation;
        },
      ]),
    );
    this.waitStates = waits;
    this.machine = new StateMachine(definition as unknown as ConstructorParameters<typeof StateMachine>[0], {
      validationOptions: options.checkDefinition === false ? { noValidate: true } : CHECKS,
    });
  }

  /**
   * The StartExecution of each DISTRIBUTED Map around a Task (outermost
   * first), judged by `authorizeMapRun`; undefined when there is nothing to
   * judge. A refusal is thrown uncatchable, to fail the Map state rather than
   * the item.
   *
   * Only StartExecution is judged. The role's DescribeExecution and
   * StopExecution on the child executions (CDK's DistributedMapPolicy grants
   * them too) have no local equivalent to hang on: the engine never describes
   * a child (it awaits the item in process), and the library stops the other
   * items of a failed Map inside its MapStateAction, where no hook reaches.
   */
  private authorizeMapRuns(mapStates: readonly string[]): Promise<void> | undefined {
    const authorize = this.options.authorizeMapRun;
    if (!authorize || mapStates.length === 0) return undefined;
    return mapStates
      .reduce((previous, mapState) => previous.then(() => authorize(mapState)), Promise.resolve())
      .catch((error: unknown) => {
        const refusal = uncatchable(error);
        mapRunRefusals.add(refusal);
        throw refusal;
      });
  }

  /**
   * A `.waitForTaskToken` invocation: the Lambda gets the payload with a fresh
   * token; the state's result is what SendTaskSuccess sends (its own return
   * value is ignored, as on AWS). The state completes when the token is sent,
   * not when the Lambda returns: on AWS the task waits for the token only
   * ("pauses until it receives that task token back with a SendTaskSuccess or
   * SendTaskFailure call", Step Functions developer guide, "Wait for a
   * Callback with Task Token"), so a handler still running after its send
   * holds nothing up. A Lambda error before the token is sent fails the state
   * at once; one after it changes nothing (the task is already over).
   */
  private invokeWaiting(resource: TaskResource, input: unknown): Promise<unknown> {
    const parameters = input as { FunctionName?: unknown; Payload?: unknown };
    const payload = parameters && typeof parameters === 'object' && 'Payload' in parameters ? parameters.Payload : input;
    const executionArn = (payload as { executionArn?: unknown } | null)?.executionArn;
    // A child's token belongs to its job's execution: stopping that one stops the Map Run's children.
    const owner = typeof executionArn === 'string' ? (this.children.get(executionArn)?.parent ?? nameOf(executionArn)) : '';
    const { token, settled } = this.taskTokens.create(owner);
    let tokenSent = false;
    const sent = settled.finally(() => {
      tokenSent = true;
    });
    const invocation = resource(replaceValue(payload, TASK_TOKEN_PLACEHOLDER, token)).then(
      () => sent,
      (error: unknown) => {
        if (tokenSent) return sent;
        this.taskTokens.forget(token);
        throw error;
      },
    );
    return Promise.race([sent, invocation]);
  }

  /** Is the execution a Task's payload names (`executionArn`, as the bridge's Tasks carry it) stopped or stopping? */
  private stoppedBeforeInvoke(input: unknown): boolean {
    const parameters = input as { Payload?: unknown } | null;
    const payload = parameters && typeof parameters === 'object' && 'Payload' in parameters ? parameters.Payload : input;
    const arn = (payload as { executionArn?: unknown } | null)?.executionArn;
    if (typeof arn !== 'string') return false;
    const child = this.children.get(arn);
    if (child) return child.record.status !== 'RUNNING';
    const name = nameOf(arn);
    const running = this.executions_.get(name);
    return this.aborted.has(name) || (running !== undefined && running.record.status !== 'RUNNING');
  }

  executionArn(name: string): string {
    return this.stateMachineArn.replace(':stateMachine:', ':execution:') + ':' + name;
  }

  /** StartExecution. The shape the dispatch core takes as its `start` function. */
  start = async (name: string, input: unknown): Promise<'started' | 'duplicate'> => {
    return this.startExecution(name, input).outcome;
  };

  startExecution(name: string, input: unknown): { outcome: 'started' | 'duplicate'; execution: ExecutionRecord } {
    if (this.closed) throw new Error('The local engine is closed.');
    const existing = this.executions_.get(name);
    if (existing && existing.record.status === 'RUNNING') return { outcome: 'duplicate', execution: existing.record };
    // Closed less than 90 days ago (whatever its status), or left running by the last run: taken.
    const taken = this.names.get(name);
    if (taken) {
      return { outcome: 'duplicate', execution: existing?.record ?? (this.describe(name) as ExecutionRecord) };
    }
    const inputBytes = payloadBytes(input);
    if (inputBytes > STATE_PAYLOAD_LIMIT_BYTES) throw new ExecutionInputTooLarge(inputBytes);
    return { outcome: 'started', execution: this.run(name, input, new Date().toISOString()) };
  }

  /**
   * Runs again, from its start, an execution the last run of the bridge was
   * running when it stopped (a kill, a Ctrl-C): on AWS it never stopped, so
   * this is the same execution going on, under its own name and start date.
   * Its input is the one it started with (kept in the names file); `input` only stands in when none was kept.
   * 'refused' for any other name (one never started, running now, or closed).
   */
  resumeExecution(name: string, input?: unknown): { outcome: 'resumed' | 'refused'; execution?: ExecutionRecord } {
    if (this.closed) throw new Error('The local engine is closed.');
    if (!this.names.isInterrupted(name) || this.executions_.has(name)) {
      const execution = this.describe(name);
      return { outcome: 'refused', ...(execution ? { execution } : {}) };
    }
    const kept = this.names.get(name);
    return { outcome: 'resumed', execution: this.run(name, kept?.input === undefined ? input : kept.input, kept?.startedAt ?? new Date().toISOString()) };
  }

  /**
   * The executions the last run left running that were not resumed (their
   * job had ended, or resuming is off): they end ABORTED, as if stopped now,
   * so their names close and nothing is left running that nobody runs
   * (only those of `only` when given). Returns their names.
   */
  abandonInterrupted(only?: readonly string[]): string[] {
    const names = this.names.interrupted().filter((name) => only === undefined || only.includes(name));
    for (const name of names) this.names.closed(name, 'ABORTED');
    return names;
  }

  private run(name: string, input: unknown, startedAt: string): ExecutionRecord {
    const record: ExecutionRecord = {
      name,
      arn: this.executionArn(name),
      input,
      status: 'RUNNING',
      startedAt,
    };
    this.names.started(name, startedAt, input);
    const retryOverrides =
      this.options.retryIntervalMs === undefined
        ? undefined
        : Object.fromEntries(this.taskStates.map((state) => [state, this.options.retryIntervalMs as number]));
    const execution = this.machine.run(input as Parameters<StateMachine["run"]>[0], {
      overrides: {
        taskResourceLocalHandlers: this.tracked as Record<string, (input: unknown) => Promise<never>>,
        waitTimeOverrides: pick(this.options.waitOverridesMs ?? {}, this.waitStates),
        ...(retryOverrides ? { retryIntervalOverrides: retryOverrides } : {}),
      },
      noThrowOnAbort: true,
      context: {
        Execution: { Id: record.arn, Name: name, RoleArn: this.options.roleArn ?? `arn:aws:iam::${LOCAL_ACCOUNT}:role/local` },
        StateMachine: { Id: this.stateMachineArn, Name: this.stateMachineArn.split(':').pop() },
      },
    });
    const done = execution.result.then(
      // With noThrowOnAbort an aborted execution resolves (with null).
      (output: unknown) => this.stop(record, this.aborted.has(name) ? 'ABORTED' : 'SUCCEEDED', { output }),
      (error: unknown) => this.stop(record, statusOf(error), { error: describeError(error) }),
    );
    this.executions_.set(name, { record, abort: execution.abort, done });
    if (this.options.onStateOutput) void this.traceStateOutputs(name, execution.eventLogs, this.options.onStateOutput);
    return record;
  }

  private readonly aborted = new Set<string>();

  /** Child executions of the Map Runs, by ARN (DescribeExecution answers for them; ListExecutions does not list them). */
  private readonly children = new Map<string, ChildExecution>();

  /**
   * A DISTRIBUTED Map item starting as a child execution of `parent`:
   * `arn:aws:states:<region>:<account>:execution:<machine>/<map run label>:<id>`,
   * the form AWS gives a Map Run's children (the resource of
   * docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html).
   */
  startChild(label: string, parent: string, input: unknown): ExecutionRecord {
    const name = randomUUID();
    const record: ExecutionRecord = { name, arn: `${this.executionArn('').slice(0, -1)}/${label}:${name}`, input, status: 'RUNNING', startedAt: new Date().toISOString() };
    this.children.set(record.arn, { record, parent });
    return record;
  }

  stopChild(arn: string, status: ExecutionStatus, output?: unknown): void {
    const child = this.children.get(arn);
    if (!child || child.record.status !== 'RUNNING') return;
    child.record.status = status;
    child.record.stoppedAt = new Date().toISOString();
    if (status === 'SUCCEEDED') child.record.output = output;
  }

  /** Reads the execution's event log for its states' outputs (only when asked: the log is kept until read). */
  private async traceStateOutputs(execution: string, events: AsyncGenerator<unknown>, onStateOutput: (output: StateOutputTrace) => void): Promise<void> {
    try {
      for await (const event of events) {
        const { type, state } = event as { type?: string; state?: { name?: string; output?: unknown } };
        if (type !== 'StateExited' || !state?.name) continue;
        onStateOutput({ execution, state: state.name, bytes: Buffer.byteLength(JSON.stringify(state.output ?? null), 'utf8') });
      }
    } catch {
      // The log ends with the execution, however it ends.
    }
  }

  private stop(record: ExecutionRecord, status: ExecutionStatus, outcome: { output?: unknown; error?: ExecutionRecord['error'] }): ExecutionRecord {
    record.status = status;
    record.stoppedAt = new Date().toISOString();
    if (status === 'SUCCEEDED') record.output = outcome.output;
    if (outcome.error) record.error = outcome.error;
    this.aborted.delete(record.name);
    // Stopped by close() (the bridge stopping): on AWS it would go on, so its name stays RUNNING for the next start.
    if (status !== 'RUNNING' && !(status === 'ABORTED' && this.shutDown.has(record.name))) this.names.closed(record.name, status, record.stoppedAt);
    // Whatever stopped it, nobody waits on its tokens any more.
    this.taskTokens.abortExecution(record.name);
    // ...and its Map Runs' children still running are aborted with it.
    for (const [arn, child] of this.children) if (child.parent === record.name) this.stopChild(arn, 'ABORTED');
    this.options.onExecutionStopped?.(record);
    return record;
  }

  /** DescribeExecution by name or ARN. */
  describe(nameOrArn: string): ExecutionRecord | undefined {
    const child = this.children.get(nameOrArn);
    if (child) return child.record;
    if (isChildArn(nameOrArn)) return undefined;
    const name = nameOf(nameOrArn);
    const running = this.executions_.get(name);
    if (running) return running.record;
    // Closed by an earlier run of the bridge less than 90 days ago (its status and dates are kept, not its output),
    // or left running by it and not resumed yet (on AWS it runs on).
    const kept = this.names.get(name);
    if (!kept) return undefined;
    return { name, arn: this.executionArn(name), input: kept.input, status: kept.status, startedAt: kept.startedAt, ...(kept.closedAt ? { stoppedAt: kept.closedAt } : {}) };
  }

  /** For the reconciler: is this execution still running here? */
  isAlive = async (executionArnOrName: string): Promise<boolean> => {
    return this.describe(executionArnOrName)?.status === 'RUNNING';
  };

  /** For the reconciler: the ARNs of every running execution (ListExecutions with statusFilter RUNNING). */
  listRunning = async (): Promise<ReadonlySet<string>> => new Set(this.running().map((record) => record.arn));

  /** Every execution of this engine (ListExecutions). */
  executions(): ExecutionRecord[] {
    return [...this.executions_.values()].map((e) => e.record);
  }

  running(): ExecutionRecord[] {
    return [...this.executions_.values()].map((e) => e.record).filter((r) => r.status === 'RUNNING');
  }

  /** Resolves when the named execution stops (undefined when it was never started). */
  async waitFor(nameOrArn: string): Promise<ExecutionRecord | undefined> {
    return this.executions_.get(nameOf(nameOrArn))?.done;
  }

  /** Resolves when nothing runs (executions started meanwhile are waited for too). */
  async idle(): Promise<void> {
    for (;;) {
      const running = [...this.executions_.values()].filter((e) => e.record.status === 'RUNNING');
      if (running.length === 0) return;
      await Promise.all(running.map((e) => e.done));
    }
  }

  /**
   * StopExecution: aborts one running execution (its status becomes ABORTED;
   * a handler already running finishes). Resolves with the stopped record, or
   * undefined when no execution of that name runs.
   */
  async stopExecution(nameOrArn: string): Promise<ExecutionRecord | undefined> {
    const execution = this.executions_.get(nameOf(nameOrArn));
    if (!execution || execution.record.status !== 'RUNNING') return undefined;
    this.aborted.add(execution.record.name);
    execution.abort();
    // Its waiting tasks are gone: a later SendTaskSuccess answers TaskDoesNotExist.
    this.taskTokens.abortExecution(execution.record.name);
    return execution.done;
  }

  /** StopExecution for every running execution, then waits for them to stop. */
  async close(): Promise<void> {
    this.closed = true;
    const running = [...this.executions_.values()].filter((e) => e.record.status === 'RUNNING');
    for (const e of running) this.shutDown.add(e.record.name);
    await Promise.all(running.map((e) => this.stopExecution(e.record.name)));
    for (const e of this.executions_.values()) this.taskTokens.abortExecution(e.record.name);
    // Let handlers already running finish before the services behind them stop.
    await Promise.allSettled([...this.inFlight]);
  }
}

/** `...:execution:<machine>/<label>:<id>`: a Map Run's child. */
function isChildArn(nameOrArn: string): boolean {
  return nameOrArn.startsWith('arn:') && (nameOrArn.split(':')[6] ?? '').includes('/');
}

function nameOf(nameOrArn: string): string {
  return nameOrArn.startsWith('arn:') ? nameOrArn.slice(nameOrArn.lastIndexOf(':') + 1) : nameOrArn;
}

function replaceValue(value: unknown, from: string, to: string): unknown {
  if (value === from) return to;
  if (Array.isArray(value)) return value.map((v) => replaceValue(v, from, to));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceValue(v, from, to)]));
  }
  return value;
}

/** `"x.$": "$$.Task.Token"` -> `"x": placeholder` (the library has no `$$.Task`). */
function rewriteTaskToken(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteTaskToken);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) =>
      k.endsWith('.$') && v === '$$.Task.Token' ? [k.slice(0, -2), TASK_TOKEN_PLACEHOLDER] : [k, rewriteTaskToken(v)],
    ),
  );
}

/**
 * The error, marked so that no Retry or Catch matches it: aws-local-stepfunctions
 * reads `isRetryable` and `isCatchable` on a state's error (its own
 * States.Runtime errors set both false), as on AWS no Retry or Catch, not even
 * States.ALL, matches a States.Runtime error ("Handling errors in Step
 * Functions workflows", concepts-error-handling). Thrown inside a Map's item,
 * it fails the item, then the Map state, then the execution.
 */
export function uncatchable(error: unknown): Error {
  const marked = error instanceof Error ? error : new Error(String(error));
  if (Object.hasOwn(marked, 'isCatchable')) return marked;
  Object.defineProperties(marked, { isRetryable: { value: false }, isCatchable: { value: false } });
  return marked;
}

function pick(values: Record<string, number>, keys: string[]): Record<string, number> {
  return Object.fromEntries(Object.entries(values).filter(([key]) => keys.includes(key)));
}

function statusOf(error: unknown): ExecutionStatus {
  if (error instanceof ExecutionAbortedError) return 'ABORTED';
  if (error instanceof ExecutionTimeoutError) return 'TIMED_OUT';
  return 'FAILED';
}

/** The error and cause of a failed execution (the library wraps the state's error in ExecutionError). */
function describeError(error: unknown): { Error: string; Cause: string } {
  const inner = error instanceof ExecutionError && error.cause instanceof Error ? error.cause : error;
  if (inner instanceof Error) {
    // A Fail state carries its Error/Cause on the error (FailStateError has name = Error, message = Cause).
    return { Error: inner.name, Cause: inner.message };
  }
  return { Error: 'Error', Cause: String(inner) };
}

/**
 * `ResultPath: "$"` means "the result replaces the input" (the ASL default),
 * but aws-local-stepfunctions 3.0 stores the result under a key named "$"
 * instead. Dropping the field gives the specified behaviour.
 */
function normaliseResultPaths(state: Record<string, unknown>): void {
  if (state.ResultPath === '$') delete state.ResultPath;
  for (const catcher of (state.Catch as Record<string, unknown>[] | undefined) ?? []) {
    if (catcher.ResultPath === '$') delete catcher.ResultPath;
  }
}

/** Wraps a Distributed Map's ItemSelector so that each item carries the number of items (see ITEM_COUNT). */
function countItems(state: Record<string, unknown>): void {
  const selector = state.ItemSelector ?? state.Parameters;
  delete state.Parameters;
  const itemsPath = typeof state.ItemsPath === 'string' ? state.ItemsPath : '$';
  state.ItemSelector = {
    ...(selector === undefined ? { [`${ITEM}.$`]: '$$.Map.Item.Value' } : { [ITEM]: selector }),
    [`${ITEM_COUNT}.$`]: `States.ArrayLength(${itemsPath})`,
  };
}

/**
 * Task and Wait state names anywhere in the definition (Map iterators
 * included), and for each Task the DISTRIBUTED Map states it runs in
 * (outermost first). Gives Task states without a timeout the Lambda's limit.
 */
function collectStates(
  definition: Record<string, unknown>,
  taskTimeoutSeconds: number,
): {
  tasks: string[];
  waits: string[];
  tokenStates: Set<string>;
  distributedMapsOf: Map<string, string[]>;
  distributedProcessorsOf: Map<object, Omit<DistributedProcessor, 'engine'>>;
} {
  const tasks: string[] = [];
  const waits: string[] = [];
  const tokenStates = new Set<string>();
  const distributedMapsOf = new Map<string, string[]>();
  /** Each DISTRIBUTED ItemProcessor and its Map Run label: the Map's Label, else its name made a label. */
  const distributedProcessorsOf = new Map<object, Omit<DistributedProcessor, 'engine'>>();
  const visit = (machine: unknown, distributedMaps: string[] = []): void => {
    const states = (machine as { States?: Record<string, Record<string, unknown>> } | undefined)?.States;
    if (!states) return;
    for (const [name, state] of Object.entries(states)) {
      normaliseResultPaths(state);
      if (state.Type === 'Task') {
        tasks.push(name);
        if (distributedMaps.length > 0) distributedMapsOf.set(name, distributedMaps);
        if (typeof state.Resource === 'string' && state.Resource.endsWith('.waitForTaskToken')) {
          tokenStates.add(name);
          state.Parameters = rewriteTaskToken(state.Parameters);
        }
        if (state.TimeoutSeconds === undefined && state.TimeoutSecondsPath === undefined) state.TimeoutSeconds = taskTimeoutSeconds;
      } else if (state.Type === 'Wait') {
        waits.push(name);
      } else if (state.Type === 'Map') {
        const processor = (state.ItemProcessor ?? state.Iterator) as { ProcessorConfig?: { Mode?: unknown } } | undefined;
        const distributed = processor?.ProcessorConfig?.Mode === 'DISTRIBUTED';
        // AWS generates a label when the Map has none; a label has no spaces or ARN separators.
        if (processor && distributed) {
          const toleratedCount = typeof state.ToleratedFailureCount === 'number' ? state.ToleratedFailureCount : undefined;
          const toleratedPercentage = typeof state.ToleratedFailurePercentage === 'number' ? state.ToleratedFailurePercentage : undefined;
          distributedProcessorsOf.set(processor, {
            label: typeof state.Label === 'string' ? state.Label : name.replace(/[^A-Za-z0-9_-]/g, '-'),
            mapState: name,
            // Neither given: none tolerated. (The ...Path forms are not read locally.)
            toleratedCount: toleratedCount ?? (toleratedPercentage === undefined ? 0 : undefined),
            ...(toleratedPercentage !== undefined && { toleratedPercentage }),
          });
          if (toleratedPercentage !== undefined) countItems(state);
        }
        visit(processor, distributed ? [...distributedMaps, name] : distributedMaps);
      } else if (state.Type === 'Parallel') {
        for (const branch of (state.Branches as unknown[] | undefined) ?? []) visit(branch, distributedMaps);
      }
    }
  };
  visit(definition);
  return { tasks, waits, tokenStates, distributedMapsOf, distributedProcessorsOf };
}
