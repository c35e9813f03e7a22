/**
 * What the local bridge runs: the cloud assembly (cache.ts, template.ts),
 * played on this machine as AWS would run it.
 *
 *   state machine    the template's definition on the local engine; each Task
 *                    state invokes the function its Resource / FunctionName names
 *   Lambda           every bridge function from its asset (functions.ts), with
 *                    the template's environment, timeout, memory, concurrency
 *   trigger          S3 -> EventBridge rule -> SQS -> dispatch batches (trigger.ts)
 *   schedule         the reconcile rule's scheduled event
 *   Step Functions, EventBridge, Secrets Manager
 *                    JSON-protocol endpoints on 127.0.0.1 (services.ts), reached
 *                    through AWS_ENDPOINT_URL_<SERVICE>, as are S3 and DynamoDB
 *
 * Nothing in the bundles knows it runs locally: the only differences from AWS
 * are the endpoint variables, the credentials and MAPFLOW_BASE_URL (the
 * Mapflow the bridge talks to, the simulator by default).
 */
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { LOCAL_AWS } from '../local-account.ts';
import { UNTRUSTED_INPUT_STEPS } from '../crash-resumes.ts';
import { LocalEngine, type ExecutionRecord, type StateOutputTrace, type TaskTrace } from '../engine/engine.ts';
import { DataLimitExceeded, LambdaFunctionError, STATE_PAYLOAD_LIMIT_BYTES } from '../engine/lambda.ts';
import { LocalTaskTokens } from '../engine/task-tokens.ts';
import { ExecutionNames } from '../engine/execution-names.ts';
import type { S3NotificationRecord } from '../s3/server.ts';
import type { AuthorizeHook, RunningEndpoint } from './aws-endpoint.ts';
import { EnvironmentBudget, LAMBDA_UNKNOWN_ENV, LocalFunction, asStepFunctionsReports, defaultEnvironmentBudgetMb } from './functions.ts';
import { retryAfterNoSpace, type DiskWatch } from '../disk-watch.ts';
import { startEventBridgeEndpoint, startSecretsManagerEndpoint, startStepFunctionsEndpoint } from './services.ts';
import { AssemblyError, principalsOf, type AssemblyFunctionSpec, type AssemblyModel, type PolicyDocument, type Principal, type ScheduleSpec } from './template.ts';
import { LocalTrigger, scheduledEvent, type DuplicateDelivery } from './trigger.ts';
import { MapRunAccessDeniedError, StateMachineRole, TaskAccessDeniedError, mapRunCallsOf, taskCallsOf } from '../auth/state-machine-role.ts';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The credentials a principal's process gets (the hook of local IAM: one key pair per role). */
export type CredentialsFor = (principal: { name: string; roleArn: string; policies: PolicyDocument[] }) => AwsCredentials;

export interface AssemblyRuntimeOptions {
  model: AssemblyModel;
  /** The local S3 and DynamoDB endpoints (the other services are started here). */
  s3Endpoint: string;
  dynamodbEndpoint: string;
  /** The Mapflow the bundles call, and the credentials the template's secret holds. */
  mapflow: { url: string; token: string; email?: string };
  eventsFile: string;
  /** The state folder's disk: the events file and the executions' names wait for space while it is full (disk-watch.ts). */
  disk?: DiskWatch;
  /** Where each function's output goes (`<logDir>/<function>.log`). */
  logDir?: string;
  /**
   * The file that keeps the executions' names 90 days after they close, across
   * restarts (engine/execution-names.ts); without one they live in memory.
   */
  executionNamesFile?: string;
  /** Also hands every function's output here. */
  functionOutput?: (chunk: Buffer) => void;
  /** V8's compile cache for the bundles (cheaper cold starts). */
  compileCacheDir?: string;
  /** Default: the local bridge's shared credentials for every principal. */
  credentialsFor?: CredentialsFor;
  /** Told when any function's invocation starts; the function it returns when it ends. */
  onInvoke?: (event: unknown, bridgeFunction: string) => () => void;
  /**
   * Task states see a timeout or an out-of-memory as `Lambda.Unknown`, as
   * Step Functions may report them (asStepFunctionsReports in functions.ts).
   * Default: the environment variable MAPFLOW_BRIDGE_LAMBDA_UNKNOWN=1.
   */
  lambdaUnknown?: boolean;
  defaultCredentials: AwsCredentials;
  /** Checks every request at the endpoints started here before it is served (local IAM). */
  authorize?: AuthorizeHook;
  /**
   * Judge every Task's call (its Lambda invoke), and each DISTRIBUTED Map
   * state's StartExecution of its child executions, against the state
   * machine's role from the template before it is made, failing a refused one
   * as Step Functions does (local IAM, packages/local/src/auth/state-machine-role.ts).
   * Default false.
   */
  enforceStateMachineRole?: boolean;
  waitOverridesMs?: Record<string, number>;
  retryIntervalMs?: number;
  maxEnvironments?: number;
  /** MiB the environments of all functions may hold at once, each its MemorySize while invoked (default defaultEnvironmentBudgetMb(), functions.ts). */
  environmentBudgetMb?: number;
  /** MiB of it only the light steps' threads may hold (default half: functions.ts, defaultLightReserveMb). */
  lightReserveMb?: number;
  onTask?: (trace: TaskTrace) => void;
  onStateOutput?: (output: StateOutputTrace) => void;
  onExecutionStopped?: (execution: ExecutionRecord) => void;
  onDuplicateStart?: (name: string, input: unknown) => void | Promise<void>;
  /** Fault injection (--inject-faults duplicate-delivery): which S3 notifications reach dispatch twice (trigger.ts). */
  duplicateDelivery?: DuplicateDelivery;
  /**
   * Fault injection (--inject-faults lambda-throttle): which Task invocations Lambda refuses with
   * Lambda.TooManyRequestsException before the function runs, as it does over the concurrency limit.
   */
  lambdaThrottle?: { draw(kind: 'lambdaThrottle'): boolean; count(kind: 'lambdaThrottle'): void };
  log: (message: string) => void;
}

export interface AssemblyRuntime {
  engine: LocalEngine;
  functions: ReadonlyMap<string, LocalFunction>;
  /** Each bridge function and the state machine with their resolved policies. */
  principals: Principal[];
  /** The state machine's role judging its Task calls and Map Runs (with enforceStateMachineRole). */
  stateMachineRole?: StateMachineRole;
  endpoints: { sfn: string; eventBridge: string; secretsManager: string };
  /** An s3rver notification: through the trigger to dispatch. */
  onS3Record(record: S3NotificationRecord): void;
  /** Messages visible or being dispatched. */
  readonly pendingDispatches: number;
  dispatchIdle(): Promise<void>;
  /** The reconcile function with its scheduled event (rejects with the function's error). */
  reconcileNow(): Promise<void>;
  /** The template's scheduled rule that targets the reconcile function (its rate, Lambda's retries). */
  readonly reconcileSchedule: ScheduleSpec | undefined;
  /**
   * Starts one environment of each function, one after the other in the
   * order a job reaches them (dispatch, then the definition's Task states), so
   * a first job meets warm functions instead of a cold start at every step.
   */
  prewarm(): Promise<void>;
  close(): Promise<void>;
}

export async function startAssemblyRuntime(options: AssemblyRuntimeOptions): Promise<AssemblyRuntime> {
  const { model, disk } = options;
  const taskTokens = new LocalTaskTokens();
  const functions = new Map<string, LocalFunction>();
  const byArn = new Map(model.functions.map((fn) => [fn.arn, fn]));
  const byName = new Map(model.functions.map((fn) => [fn.functionName, fn]));

  const lambdaUnknown = options.lambdaUnknown ?? process.env[LAMBDA_UNKNOWN_ENV] === '1';
  // Each Task state invokes the function its definition names.
  const taskResources: Record<string, (input: unknown) => Promise<unknown>> = {};
  for (const task of taskStatesOf(model.stateMachine.definition)) {
    const spec = byArn.get(task.functionRef) ?? byName.get(task.functionRef);
    if (!spec) throw new LambdaFunctionError('Lambda.ResourceNotFoundException', `Task state '${task.state}' names ${task.functionRef}, which is no function of the template`);
    taskResources[task.state] = async (input: unknown) => {
      const fn = functions.get(spec.logicalId) as LocalFunction;
      if (options.lambdaThrottle?.draw('lambdaThrottle')) {
        options.lambdaThrottle.count('lambdaThrottle');
        throw new LambdaFunctionError('Lambda.TooManyRequestsException', 'Rate Exceeded. (Service: Lambda, Status Code: 429, injected by --inject-faults lambda-throttle)');
      }
      const result = await fn.invoke(input).catch((error: unknown) => Promise.reject(asStepFunctionsReports(error, lambdaUnknown)));
      const bytes = Buffer.byteLength(JSON.stringify(result ?? null), 'utf8');
      if (bytes > STATE_PAYLOAD_LIMIT_BYTES) throw new DataLimitExceeded(task.state, bytes);
      // The lambda:invoke integration (without a callback) returns the invocation, its result in Payload.
      return task.integration === 'invoke' ? { ExecutedVersion: '$LATEST', Payload: result, StatusCode: 200 } : result;
    };
  }
  const principals = principalsOf(model);
  const stateMachineRole = options.enforceStateMachineRole ? stateMachineRoleOf(model, principals) : undefined;
  const calls = taskCallsOf(model.stateMachine.definition);
  // A DISTRIBUTED Map's children are executions of this state machine: StartExecution on its ARN in the template.
  const mapRuns = mapRunCallsOf(model.stateMachine.definition, model.stateMachine.arn);
  const machineRole = principals.find((principal) => principal.name === 'state-machine');
  const engine = new LocalEngine({
    ...(machineRole ? { roleArn: machineRole.roleArn } : {}),
    ...(stateMachineRole
      ? {
          authorizeTask: async (state: string) => {
            const call = calls.get(state);
            if (!call) return;
            await stateMachineRole.authorize(call).catch((error: unknown) => {
              if (error instanceof TaskAccessDeniedError) options.log(`local bridge: refused Task '${state}': ${error.name}: ${error.message}`);
              throw error;
            });
          },
          authorizeMapRun: async (state: string) => {
            const call = mapRuns.get(state);
            if (!call) return;
            await stateMachineRole.authorizeMapRun(call).catch((error: unknown) => {
              if (error instanceof MapRunAccessDeniedError) options.log(`local bridge: refused Map Run of '${state}': ${error.name}: ${error.message}`);
              throw error;
            });
          },
        }
      : {}),
    definition: model.stateMachine.definition,
    checkDefinition: false,
    taskTokens,
    taskResources,
    stateMachineName: model.stateMachine.name,
    ...(options.executionNamesFile ? { executionNames: new ExecutionNames({ file: options.executionNamesFile, ...(disk ? { whenFree: () => retryAfterNoSpace(disk, "the executions' names") } : {}) }) } : {}),
    ...(options.waitOverridesMs ? { waitOverridesMs: options.waitOverridesMs } : {}),
    ...(options.retryIntervalMs !== undefined ? { retryIntervalMs: options.retryIntervalMs } : {}),
    ...(options.onTask ? { onTask: options.onTask } : {}),
    ...(options.onStateOutput ? { onStateOutput: options.onStateOutput } : {}),
    ...(options.onExecutionStopped ? { onExecutionStopped: options.onExecutionStopped } : {}),
  });

  const started: RunningEndpoint[] = [];
  const authorize = options.authorize;
  try {
    const [sfn, eventBridge, secretsManager] = await Promise.all([
      startStepFunctionsEndpoint({ engine, taskTokens, ...(options.onDuplicateStart ? { onDuplicateStart: options.onDuplicateStart } : {}), ...(authorize ? { authorize } : {}) }),
      startEventBridgeEndpoint({ eventsFile: options.eventsFile, buses: model.eventBuses, ...(authorize ? { authorize } : {}), ...(options.disk ? { disk: options.disk } : {}) }),
      startSecretsManagerEndpoint({
        secrets: model.secrets.map((secret) => ({
          ...secret,
          value: () => JSON.stringify({ token: options.mapflow.token, ...(options.mapflow.email ? { email: options.mapflow.email } : {}) }),
        })),
        ...(authorize ? { authorize } : {}),
      }),
    ]);
    started.push(sfn, eventBridge, secretsManager);

    const credentialsFor = options.credentialsFor ?? (() => options.defaultCredentials);
    // One memory budget for all the functions' environments, each counting its MemorySize while invoked
    // and its idle bound while warm, with a share the light steps keep (functions.ts, EnvironmentBudget).
    const budgetMb = options.environmentBudgetMb ?? defaultEnvironmentBudgetMb();
    const budget = new EnvironmentBudget(budgetMb, ...(options.lightReserveMb !== undefined ? [options.lightReserveMb] : []));
    for (const spec of model.functions) {
      const principal = principals.find((p) => p.name === spec.bridgeFunction) ?? { name: spec.bridgeFunction, roleArn: '', policies: [] };
      const credentials = credentialsFor(principal);
      functions.set(
        spec.logicalId,
        new LocalFunction({
          spec,
          environment: functionEnvironment(spec, {
            s3: options.s3Endpoint,
            dynamodb: options.dynamodbEndpoint,
            sfn: sfn.endpoint,
            eventBridge: eventBridge.endpoint,
            secretsManager: secretsManager.endpoint,
            mapflowUrl: options.mapflow.url,
            credentials,
          }),
          ...(options.logDir ? { logDir: options.logDir, onLogError: options.log } : {}),
          ...(options.functionOutput ? { output: options.functionOutput } : {}),
          ...(options.compileCacheDir ? { compileCacheDir: options.compileCacheDir } : {}),
          budget,
          onOutsideKill: options.log,
          // The functions that decode the input's bytes run in child processes, their memory bounded (heap and off-heap).
          isolation: UNTRUSTED_INPUT_STEPS.has(spec.bridgeFunction) ? 'process' : 'thread',
          ...(options.onInvoke ? { onInvoke: options.onInvoke } : {}),
          ...(options.maxEnvironments !== undefined ? { maxEnvironments: options.maxEnvironments } : {}),
        }),
      );
    }

    const trigger = model.trigger
      ? new LocalTrigger({
          spec: model.trigger,
          dispatch: functions.get(model.trigger.functionLogicalId) as LocalFunction,
          log: options.log,
          ...(options.duplicateDelivery ? { duplicateDelivery: options.duplicateDelivery } : {}),
        })
      : undefined;
    const schedule = model.schedules[0];
    let closing = false;

    return {
      engine,
      functions,
      principals,
      ...(stateMachineRole ? { stateMachineRole } : {}),
      endpoints: { sfn: sfn.endpoint, eventBridge: eventBridge.endpoint, secretsManager: secretsManager.endpoint },
      onS3Record: (record) => trigger?.onS3Record(record),
      get pendingDispatches() {
        return trigger?.pending ?? 0;
      },
      dispatchIdle: async () => trigger?.idle(),
      reconcileSchedule: schedule,
      reconcileNow: async () => {
        if (!schedule) return;
        await (functions.get(schedule.functionLogicalId) as LocalFunction).invoke(scheduledEvent(schedule));
      },
      prewarm: async () => {
        const order = [model.trigger?.functionLogicalId, ...taskStatesOf(model.stateMachine.definition).map((task) => (byArn.get(task.functionRef) ?? byName.get(task.functionRef))?.logicalId)];
        for (const logicalId of new Set(order)) {
          if (closing) return;
          if (logicalId) await functions.get(logicalId)?.prewarm();
        }
      },
      close: async () => {
        closing = true;
        await closeWithinGrace(
          // The executions stop first (no Catch acts on what their tasks answer after), then their handlers get a grace.
          Promise.all([trigger?.close(), engine.close()]),
          () => Promise.all([...functions.values()].map((fn) => fn.close())),
        );
        await Promise.all(started.map((endpoint) => endpoint.close()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((endpoint) => endpoint.close()));
    throw error;
  }
}

/**
 * How long a stop lets the handlers already running finish before their
 * environments are stopped, ms. A Store Results waiting on a slow result
 * download (45 s on the live service) or a step waiting for room in the
 * budget made Ctrl-C take 30-95 s (issue 39); a step cut short here is
 * resumed at the next start (its execution was stopped first, so no Catch
 * ends its job), and every step is safe to repeat.
 */
export const CLOSE_GRACE_MS = 2_000;

/**
 * Waits for `draining` (the trigger and the engine: executions stopped, then
 * their handlers) at most `graceMs`, then stops the functions (the handlers
 * still running fail, their waiting invocations give up) and waits for the rest.
 */
export async function closeWithinGrace(draining: Promise<unknown>, stopFunctions: () => Promise<unknown>, graceMs = CLOSE_GRACE_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const drained = draining.then(
    () => true,
    () => true,
  );
  const inTime = await Promise.race([drained, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
  clearTimeout(timer);
  await stopFunctions();
  if (!inTime) await drained;
}

/**
 * The state machine's role from the template. A state machine always has one
 * on AWS (RoleArn is required): a template without it cannot be enforced.
 */
function stateMachineRoleOf(model: AssemblyModel, principals: Principal[]): StateMachineRole {
  const role = principals.find((principal) => principal.name === 'state-machine');
  if (!role) throw new AssemblyError(`${model.stateMachine.logicalId}: its RoleArn names no AWS::IAM::Role of the template, so its calls cannot be judged`);
  return new StateMachineRole(role);
}

/**
 * A function's whole environment: the template's variables, what the Lambda
 * runtime adds, its credentials, and the endpoints of the local services.
 */
export function functionEnvironment(
  spec: AssemblyFunctionSpec,
  local: { s3: string; dynamodb: string; sfn: string; eventBridge: string; secretsManager: string; mapflowUrl: string; credentials: AwsCredentials },
): Record<string, string> {
  return {
    ...spec.environment,
    // The one setting that is not the template's: the Mapflow this bridge talks to.
    MAPFLOW_BASE_URL: local.mapflowUrl,
    // What the Lambda runtime sets.
    AWS_REGION: LOCAL_AWS.region,
    AWS_DEFAULT_REGION: LOCAL_AWS.region,
    AWS_LAMBDA_FUNCTION_NAME: spec.functionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${spec.functionName}`,
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    LAMBDA_TASK_ROOT: spec.assetDir,
    TZ: ':UTC',
    LANG: 'en_US.UTF-8',
    AWS_ACCESS_KEY_ID: local.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: local.credentials.secretAccessKey,
    ...(local.credentials.sessionToken ? { AWS_SESSION_TOKEN: local.credentials.sessionToken } : {}),
    // The SDK's standard per-service endpoint variables (serviceId upper-cased, spaces as '_').
    AWS_ENDPOINT_URL_S3: local.s3,
    AWS_ENDPOINT_URL_DYNAMODB: local.dynamodb,
    AWS_ENDPOINT_URL_SFN: local.sfn,
    AWS_ENDPOINT_URL_EVENTBRIDGE: local.eventBridge,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: local.secretsManager,
  };
}

/** Every Task state (Map iterators included) with the function it invokes and how. */
export function taskStatesOf(definition: Record<string, unknown>): { state: string; functionRef: string; integration: 'direct' | 'invoke' | 'callback' }[] {
  const found: { state: string; functionRef: string; integration: 'direct' | 'invoke' | 'callback' }[] = [];
  const walk = (states: Record<string, Record<string, unknown>> | undefined): void => {
    for (const [name, state] of Object.entries(states ?? {})) {
      if (state.Type === 'Task') {
        const resource = String(state.Resource ?? '');
        const parameters = (state.Parameters ?? {}) as Record<string, unknown>;
        if (resource.startsWith('arn:aws:states:::lambda:invoke')) {
          found.push({ state: name, functionRef: String(parameters.FunctionName ?? ''), integration: resource.endsWith('.waitForTaskToken') ? 'callback' : 'invoke' });
        } else {
          found.push({ state: name, functionRef: resource, integration: 'direct' });
        }
      }
      const processor = (state.ItemProcessor ?? state.Iterator) as { States?: Record<string, Record<string, unknown>> } | undefined;
      walk(processor?.States);
      for (const branch of (state.Branches as { States: Record<string, Record<string, unknown>> }[] | undefined) ?? []) walk(branch.States);
    }
  };
  walk(definition.States as Record<string, Record<string, unknown>>);
  return found;
}

/** For log lines: where the function's output went. */
export function functionLogFile(logDir: string, spec: AssemblyFunctionSpec): string {
  return path.join(logDir, `${spec.functionName}.log`);
}

export type { IncomingMessage };
