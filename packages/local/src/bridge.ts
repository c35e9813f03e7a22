/**
 * The whole bridge on one machine: the cloud assembly `cdk deploy` would
 * upload (each function from its bundle, the state machine from the
 * template, see packages/local/src/assembly), on embedded services.
 *
 *   Mapflow      -> the simulator (packages/simulator/src), or a given Mapflow URL + token
 *   S3 + trigger -> s3rver; its object-created notifications go through the template's rule and queue to dispatch
 *   DynamoDB     -> DynamoDB Local (the ledger table is created when missing)
 *   Step Functions, EventBridge, Secrets Manager -> local endpoints (packages/local/src/assembly/services.ts)
 *   reconciler   -> the reconcile function on the schedule's event
 *   IAM          -> the gate (packages/local/src/auth): every endpoint answers only requests signed
 *                   with credentials the bridge issued (credentials.json in the state
 *                   folder for the user; one key pair per role for the functions), and
 *                   judges each against the signer's policies from the template
 *
 * This process keeps a few settings in process.env for the operator tools
 * (jobs retry / cancel); startLocalBridge sets them and restores them on
 * close, so one bridge runs per process at a time.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { isFinalStatus, JOB_STATUSES, type ExecutionInput, type InputObject, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import type { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
import type { PollPolicy } from 'mapflow-bridge/functions/polling/poll-policy.ts';
import { localPollPolicy } from './poll-policy.ts';
import { jobIdFor, parseRoutes, type Route } from 'mapflow-bridge/functions/routing/index.ts';
import { printable } from 'mapflow-bridge/functions/core/text.ts';
// Only light modules above and here; the rest (the SDK, the engine, the handlers, the simulator)
// comes from ./bridge-modules.ts once the JVM and s3rver are starting.
import { ensureLedgerTable, startDynamoDbLocal, type DynamoDbLocal } from './dynamodb/index.ts';
import { validDynamoDbEndpoint } from './dynamodb/endpoint.ts';
import type { RunningSimulator, SimulatorOptions } from '@mapflow-bridge/simulator';
import type { ExecutionRecord, LocalEngine, StateOutputTrace, TaskTrace } from './engine/engine.ts';
import { EXECUTION_NAMES_FILE } from './engine/execution-names.ts';
import type { EventFollower, LocalEvent } from './events/file.ts';
import type { DropFolder } from './s3/drop-folder.ts';
import { LocalS3StartError, startLocalS3, type LocalS3, type LocalS3Options, type S3NotificationRecord } from './s3/server.ts';
import { lockStateDir, sweepAbandonedStateDirs } from './state-lock.ts';
import { supervise, type SupervisorOptions } from './supervisor.ts';
import { repairEventsFile } from './events/file.ts';
import { LOCAL_AWS } from './local-account.ts';
import type { AssemblyModel, LocalNames, Principal } from './assembly/template.ts';
import type { AuthorizeHook } from './assembly/aws-endpoint.ts';
import type { AssemblyRuntime, CredentialsFor } from './assembly/runtime.ts';
import type { LocalAssemblySettings } from './assembly/cache.ts';
// Node builtins only: the cache folder is known before the heavier modules load (s3rver starts first).
import { definitionCacheDir } from './assembly/local-definition-cache.ts';
import { LocalSchedule, rateExpressionMs, scheduleScaleOf } from './assembly/schedule.ts';
import { onStandstill } from './assembly/standstill.ts';
import { watchDisk, type DiskWatch } from './disk-watch.ts';
import { CredentialStore, type IssuedCredentials } from './auth/credentials.ts';
import { dynamodbFaults, FaultInjector, formatFaults, INJECT_FAULTS_ENV, type FaultKind, type FaultSettings } from './faults.ts';
import type { IncomingSignedRequest, Refusal } from './auth/gate.ts';
import { clearResumeCounts, MAX_UNCLEAN_RESUMES, planResumes, PROCESS_CRASHED, readResumeCounts, readStepsInFlight, recordCrashes, StepsInFlight, takeCrashRecord, writeResumeCounts, type CrashRecord } from './crash-resumes.ts';

export const LOCAL_BUCKET = 'mapflow-bridge-local';
export const LOCAL_LEDGER_TABLE = 'mapflow-bridge-ledger';
export const LOCAL_EMAIL = 'local@mapflow-bridge.invalid';
/** The state machine's name in its local ARN (arn:aws:states:us-east-1:000000000000:stateMachine:mapflow-bridge). */
export const LOCAL_STATE_MACHINE_NAME = 'mapflow-bridge';

/** How long s3rver and DynamoDB Local may take to answer (their exit is noticed at once). */
const SERVICE_START_TIMEOUT_MS = 180_000;

export { LOCAL_POLL_POLICY, localPollPolicy } from './poll-policy.ts';

export interface MapflowTarget {
  /** Base URL, e.g. https://api.mapflow.ai/rest or a remote simulator's /rest URL. */
  url: string;
  token: string;
  email?: string;
}

export interface LocalBridgeOptions {
  /**
   * Where the services keep their state (s3/, dynamodb/, simulator/, drop/,
   * uploaded/, events.jsonl). Kept on close. Without it, a temporary directory
   * is used and removed on close (DynamoDB then runs in memory).
   */
  stateDir?: string;
  bucket?: string;
  ledgerTable?: string;
  /** Use this Mapflow (real, or a simulator elsewhere) instead of starting the embedded simulator. */
  mapflow?: MapflowTarget;
  /**
   * Keep the ledger in this DynamoDB (a DynamoDB Local you run, in Docker for
   * example) instead of starting DynamoDB Local: no Java needed. The ledger
   * table is created there when missing, and kept; the bridge never stops it.
   * Default: DynamoDB Local started by the bridge (in memory without a
   * stateDir, else on disk under it).
   */
  dynamodbEndpoint?: string;
  /** Options of the embedded simulator (token and email are chosen here). */
  simulator?: Omit<Partial<SimulatorOptions>, 'token' | 'email' | 'dataDir'>;
  /** Routes JSON (functions/routing); default the built-in routes. */
  routes?: string;
  /**
   * Credit budget of every route that sets none (`--credit-budget`). Default:
   * none given, so the routes' own default applies (DEFAULT_CREDIT_BUDGET,
   * 100 credits) as it does deployed, against the simulator too: what runs
   * locally is what deploys. A budget a route sets is kept.
   */
  creditBudget?: number;
  pollPolicy?: Partial<PollPolicy>;
  maxConcurrentProcessings?: number;
  /** Watch <stateDir>/drop and upload what appears there (default true). */
  dropFolder?: boolean;
  /** How long a dropped file must stay unchanged before it is uploaded (default 3 s, see drop-folder.ts). */
  dropStableMs?: number;
  /**
   * Port of the local S3 (default 0: a free one). With `s3PortFallback`, a
   * taken port is replaced by a free one and the log says so; without it, a
   * taken port fails the start.
   */
  s3Port?: number;
  s3PortFallback?: boolean;
  /** Tests: hold each local S3 notification this long, as a loaded machine does (see LocalS3Options). */
  s3NotificationDelayMs?: number;
  /**
   * Named in the state folder's lock (see state-lock.ts) so a second bridge on
   * the same folder can say who holds it. Default 'a local bridge'.
   */
  command?: string;
  /** Wait state name -> milliseconds (tests). */
  waitOverridesMs?: Record<string, number>;
  /**
   * MiB the functions' environments may hold at once, each its MemorySize while
   * invoked (default: half the machine's memory, from 2,048 to 4,096; packages/local/src/assembly/functions.ts),
   * and the share of it only the light steps may hold (default half). `--memory-budget` of `start` and `local run`.
   */
  environmentBudget?: { totalMb: number; lightReserveMb?: number };
  /** Pause before every Retry in ms (tests); default the definition's. */
  retryIntervalMs?: number;
  /**
   * Reconciler period in ms, instead of the template's schedule; 0 disables the
   * timed runs (`reconcileNow()` still runs one). Default: the template's rule
   * (`rate(15 minutes)`) divided by `scheduleScale`.
   */
  reconcileIntervalMs?: number;
  /**
   * The local factor of the template's schedule: the rule's rate and Lambda's
   * asynchronous retry delays are divided by it (4: the reconciler every 3.75
   * minutes). Default: env MAPFLOW_BRIDGE_SCHEDULE_SCALE, else 1 (AWS's times).
   * docs/local.md, "The reconciler's schedule".
   */
  scheduleScale?: number;
  /** Operational messages (default: stderr). */
  log?: (message: string) => void;
  /** Every event the bridge publishes, as it is published. */
  onEvent?: (event: LocalEvent) => void;
  /** Every execution that stops. */
  onExecutionStopped?: (execution: ExecutionRecord) => void;
  /** Called when a Task invocation ends, timed (benchmarks: packages/bench/admission.ts). */
  onTask?: (trace: TaskTrace) => void;
  /** Told the size of every state's output as it exits (tests: outputs stay small whatever the input). */
  onStateOutput?: (output: StateOutputTrace) => void;
  /**
   * Run this synthesized cloud assembly (a `cdk.out` folder holding a
   * MapflowBridge, e.g. your own app's) instead of synthesizing the bridge
   * with the options above; `templateFile` names the stack when the assembly
   * holds several. Its routes, poll policy and slots are the template's.
   */
  assembly?: { dir: string; templateFile?: string };
  /**
   * The credentials each function's process gets. Default: a key pair of its
   * own per role, whose every AWS call the endpoints judge against that
   * role's policies from the template (local IAM, see packages/local/src/auth).
   */
  credentialsFor?: CredentialsFor;
  /**
   * Every function writes its output (logs, EMF metrics) to
   * `<stateDir>/logs/<function>.log`, as CloudWatch Logs keeps it; this also
   * gets it (`local run --verbose`).
   */
  functionOutput?: (chunk: Buffer) => void;
  /**
   * Start one environment of every function in the background once the
   * bridge is up (`npm start`: the first job meets warm functions). Default
   * false: each function starts on its first invocation, as a Lambda does.
   */
  prewarm?: boolean;
  /**
   * Checks every request at the local Step Functions, EventBridge and Secrets
   * Manager endpoints. Default: the gate (signed by issued credentials, and
   * allowed by the signer's policies).
   */
  authorize?: AuthorizeHook;
  /**
   * New inputs wait for this before their executions start (a bridge that
   * started degraded holds them until Mapflow answers; see cli/preflight.ts).
   */
  dispatchAfter?: Promise<unknown>;
  /**
   * Start again the executions of jobs the ledger shows unfinished (they were
   * in flight when the bridge stopped; executions live in memory). Default:
   * true with a stateDir. Every task is safe to run again.
   */
  resumeUnfinished?: boolean;
  /**
   * DynamoDB Local or s3rver died and could not be started again (restarts
   * exhausted, or one failed): the bridge should stop; the message says so
   * and what to run. Default: the message is logged (the caller decides).
   */
  onServiceLost?: (message: string) => void;
  /** The command that starts this bridge again, named when a service is lost (`npx mapflow-bridge start --state-dir ...`). */
  restartCommand?: string;
  /**
   * How many times DynamoDB Local and s3rver are each started again within 10
   * minutes before the bridge gives up (supervisor.ts). Default: env
   * MAPFLOW_BRIDGE_SERVICE_RESTARTS, else 3; 0 gives up at the first death.
   */
  serviceRestarts?: number;
  /**
   * Inject AWS's occasional faults at these rates (`--inject-faults`, packages/local/src/faults.ts):
   * TransactionConflict on TransactWriteItems, a lagging global secondary index, S3 notifications
   * delivered twice, Task invocations throttled. Default: none. The settings and their seed are logged at start.
   */
  injectFaults?: FaultSettings;
}

/** The environment variable of LocalBridgeOptions.serviceRestarts. */
export const SERVICE_RESTARTS_ENV = 'MAPFLOW_BRIDGE_SERVICE_RESTARTS';

/** One phase of a start, in ms since this process started (performance.now()). */
export interface StartupPhase {
  name: string;
  startMs: number;
  endMs: number;
}

export interface StartupTimeline {
  /** When startLocalBridge was called: what came before is process start and module loading. */
  entryMs: number;
  /** When it returned (the bridge ready). */
  readyMs: number;
  /** 'hit': the definition came from the disk cache; 'miss': synthesized (and stored); 'off': cache disabled. */
  definitionCache: 'hit' | 'miss' | 'off';
  /** In the order they ended; phases that overlap ran side by side. */
  phases: StartupPhase[];
}

export interface LocalBridge {
  /** How the start went, phase by phase (packages/bench/startup.ts prints it). */
  readonly startup: StartupTimeline;
  readonly endpoints: { s3: string; dynamodb: string; mapflow: string };
  /** The user's full-access credentials for the endpoints (stored 0600 in <stateDir>/credentials.json with a stateDir). */
  readonly credentials: IssuedCredentials;
  /** Who may sign requests to the endpoints: `addPrincipal` issues a role's credentials. */
  readonly credentialStore: CredentialStore;
  readonly bucket: string;
  readonly ledgerTable: string;
  readonly stateDir: string;
  /** Files copied here (any sub-folder = route prefix) are uploaded to inbox/<same path>. */
  readonly dropDir: string;
  readonly eventsFile: string;
  readonly s3: S3Client;
  readonly ledger: Ledger;
  readonly engine: LocalEngine;
  /**
   * What runs: the cloud assembly's folder and template (read and resolved),
   * each bridge function (by logical id) as it runs from its asset, and each
   * principal's resolved policies (the hook of local IAM).
   */
  readonly assembly: { dir: string; model: AssemblyModel; functions: AssemblyRuntime['functions']; principals: Principal[] };
  /** The embedded simulator (undefined with a given Mapflow). */
  readonly simulator?: RunningSimulator;
  /** The process ids of the services this bridge started as child processes (after a restart, the new ones). */
  servicePids(): { dynamodb?: number; s3?: number };
  /** The faults injected so far, by kind (all 0 without `injectFaults`). */
  readonly injectedFaults: Readonly<Record<FaultKind, number>>;
  /** Streams a local file to `inbox/<relativeKey>`; the job id is the one dispatch will use. */
  putInbox(file: string, relativeKey: string): Promise<{ object: InputObject; jobId: string }>;
  /**
   * Starts the job of a local file whose key the bridge refuses (keyProblem),
   * without uploading it: it ends REJECTED INVALID_KEY with a report. `file`
   * may be raw bytes (a name that is not UTF-8).
   */
  rejectInbox(file: string | Buffer, relativeKey: string): Promise<{ object: InputObject; jobId: string }>;
  /**
   * Resolves when nothing is left to do: drop folder empty, every upload the
   * local S3 answered before (or during) the call notified and dispatched, no
   * execution running.
   */
  waitForJobs(options?: { timeoutMs?: number }): Promise<void>;
  /** The ledger row of a job once it is final (or the last row seen when its execution ended without one). */
  waitForJob(jobId: string, options?: { timeoutMs?: number }): Promise<LedgerRow | undefined>;
  /** Runs the reconciler once (also on its timer). */
  reconcileNow(): Promise<void>;
  close(): Promise<void>;
}

export class LocalBridgeTimeout extends Error {
  constructor(what: string, ms: number) {
    super(`Timed out after ${Math.round(ms / 1000)} s waiting for ${what}.`);
    this.name = 'LocalBridgeTimeout';
  }
}

/** The temporary state folders of bridges without --state-dir (`local run`, tests): `<tmpdir>/mapflow-bridge-XXXXXX`. */
export const TEMPORARY_STATE_PREFIX = 'mapflow-bridge-';

export async function startLocalBridge(options: LocalBridgeOptions = {}): Promise<LocalBridge> {
  const start = await openStateFolder(options);
  try {
    const storage = startStorage(start);
    const modules = await loadBridgeModules(start);
    const mapflowAndLedger = startMapflowAndLedger(start, modules, storage);
    const assembly = await loadCloudAssembly(start, modules);
    const up = await servicesUp(start, storage, mapflowAndLedger, assembly);
    const functions = await startFunctions(start, modules, up);
    setOperatorEnvironment(start, up, functions.runtime);
    // Before any execution of this process starts: none of them can be mid-way through its own final event.
    await publishFinalEventsOwed(start, functions);
    const context = await connectTrigger(start, functions.runtime);
    await followEventsForCaller(start, modules);
    const reconcileNow = startReconciler(start, functions.runtime);
    await resumeUnfinished(start, functions, context);
    const drop = await watchDrop(start, modules, functions.s3, functions.engine);
    return bridgeHandle(start, modules, up, functions, reconcileNow, drop);
  } catch (error) {
    await start.stopAll();
    if (!start.persistent) await rm(start.stateDir, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  }
}

/** What the phases of a start share: its options, log and timeline, the state folder, names and credentials, and the stops of what has started. */
interface BridgeStart {
  readonly options: LocalBridgeOptions;
  readonly log: (message: string) => void;
  readonly entryMs: number;
  readonly phases: StartupPhase[];
  /** Times one phase of the start (ms since process start) for the start-up timeline. */
  timed<T>(name: string, work: () => Promise<T>): Promise<T>;
  /** Times a service's start and registers its stop as soon as it is up, so a failed start stops the others. */
  started<T extends { close(): Promise<void> }>(name: string, service: () => Promise<T>): Promise<T>;
  /** Everything started so far, stopped in reverse order on close or on a failed start. */
  readonly stops: { name: string; stop: () => Promise<unknown> }[];
  stopAll(): Promise<void>;
  /** A stateDir was given: kept on close (a temporary one is removed). */
  readonly persistent: boolean;
  readonly stateDir: string;
  readonly bucket: string;
  readonly ledgerTable: string;
  readonly dropDir: string;
  readonly localNames: LocalNames;
  readonly eventsFile: string;
  readonly credentialStore: CredentialStore;
  readonly dynamodbGateSecret: string;
  /** With options.injectFaults: draws and counts the injected faults. */
  readonly faults?: FaultInjector;
  readonly onRefused: (refusal: Refusal, request: IncomingSignedRequest) => void;
  /** The trigger: s3rver's notifications go here; they queue up until the dispatcher is ready. */
  readonly trigger: { notifications: S3NotificationRecord[]; onRecord: (record: S3NotificationRecord) => void };
  /** The free space of the state folder's disk. */
  readonly disk: DiskWatch;
}

type BridgeModules = typeof import('./bridge-modules.ts');

/** State folder and lock, the sweep of abandoned ones, the names, and the credentials the endpoints accept. */
async function openStateFolder(options: LocalBridgeOptions): Promise<BridgeStart> {
  // Names and messages from files reach these lines: no control character goes to a terminal raw.
  const sink = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const log = (message: string) => sink(printable(message));
  const entryMs = performance.now();
  const phases: StartupPhase[] = [];
  // Times one phase of the start (ms since process start) for the start-up timeline.
  const timed = <T>(name: string, work: () => Promise<T>): Promise<T> => {
    const startMs = performance.now();
    return work().then((value) => {
      phases.push({ name, startMs, endMs: performance.now() });
      return value;
    });
  };
  const persistent = options.stateDir !== undefined;
  const stateDir = path.resolve(options.stateDir ?? (await mkdtemp(path.join(tmpdir(), TEMPORARY_STATE_PREFIX))));
  await mkdir(stateDir, { recursive: true });
  // One bridge per state folder: taken before anything starts, released last.
  // A temporary folder is locked too, so that a later bridge can tell it was abandoned (kill -9) and remove it.
  // A reader of the ledger (jobs list with no bridge running) holds it for seconds: wait for it rather than refuse.
  const lock = await timed('state folder lock', () => lockStateDir(stateDir, options.command ?? 'a local bridge', { waitForReaderMs: 60_000 }));
  // Everything started so far, stopped in reverse order on close or on a failed start.
  const stops: { name: string; stop: () => Promise<unknown> }[] = [];
  const stopAll = async (): Promise<void> => {
    for (const { name, stop } of stops.reverse()) {
      await stop().catch((error: unknown) => log(`local bridge: stopping ${name} failed: ${(error as Error).message}`));
    }
    stops.length = 0;
  };
  stops.push({ name: 'the state folder lock', stop: () => lock.release() });
  const started = <T extends { close(): Promise<void> }>(name: string, service: () => Promise<T>): Promise<T> =>
    timed(name, service).then((running) => {
      stops.push({ name, stop: () => running.close() });
      return running;
    });

  try {
  if (!persistent) {
    for (const dir of await timed('sweep of abandoned state folders', () => sweepAbandonedStateDirs(tmpdir(), TEMPORARY_STATE_PREFIX))) log(`local bridge: removed ${dir}, left by a bridge that was killed`);
  }
  const bucket = options.bucket ?? LOCAL_BUCKET;
  const ledgerTable = options.ledgerTable ?? LOCAL_LEDGER_TABLE;
  const dropDir = path.join(stateDir, 'drop');
  // What the template's bucket, ledger and state machine are called here (packages/local/src/assembly/template.ts).
  const localNames: LocalNames = { bucket, ledgerTable, stateMachineName: LOCAL_STATE_MACHINE_NAME };
  const eventsFile = path.join(stateDir, 'events.jsonl');
  // A stop mid-append (kill -9, a full disk) can leave half a line, which would swallow the next event appended.
  const torn = await repairEventsFile(eventsFile);
  if (torn > 0) log(`local bridge: removed a half-written last line (${torn} bytes) from ${eventsFile}, left by a stop mid-write; an event it held is published again if its job still owes it`);
  // Issued once per state folder (0600), in memory for a temporary one.
  const credentialStore = persistent ? await timed('credentials', () => CredentialStore.open(stateDir, (message) => log(`local bridge: ${message}`))) : CredentialStore.inMemory();
  // Only the gate may reach the DynamoDB Local this bridge starts (it accepts any key).
  const dynamodbGateSecret = randomBytes(24).toString('hex');
  // A refused request is a misconfigured client, a role without a statement, or something worse: say which.
  const onRefused = (refusal: Refusal, request: IncomingSignedRequest) =>
    log(`local bridge: refused ${request.method} ${request.url.split('?')[0]}: ${refusal.code}: ${refusal.message}`);
    // The trigger: notifications queue up here until the dispatcher is ready.
    const notifications: S3NotificationRecord[] = [];
    const trigger = { notifications, onRecord: (record: S3NotificationRecord) => void notifications.push(record) };
    const faults = options.injectFaults ? new FaultInjector(options.injectFaults) : undefined;
    // The seed, so that a failing run can be run again with the same draws.
    if (faults) {
      log(`local bridge: injecting faults ${formatFaults(faults.settings)} (--inject-faults / ${INJECT_FAULTS_ENV}; the same seed draws the same again)`);
      // Stopped last: what was injected over the whole run.
      stops.push({ name: 'the fault count', stop: async () => log(`local bridge: faults injected (seed ${faults.settings.seed}): ${Object.entries(faults.injected).map(([kind, n]) => `${kind} ${n}`).join(', ')}`) });
    }
    // A full disk under the state folder is said in one line, and its end in another (disk-watch.ts).
    const disk = watchDisk(stateDir, log);
    stops.push({ name: 'the disk watch', stop: async () => disk.stop() });
    return {
      options, log, entryMs, phases, timed, started, stops, stopAll, persistent, stateDir,
      bucket, ledgerTable, dropDir, localNames, eventsFile, credentialStore, dynamodbGateSecret, onRefused, trigger, disk,
      ...(faults ? { faults } : {}),
  };
  } catch (error) {
    await stopAll();
    if (!persistent) await rm(stateDir, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  }
}

/** DynamoDB Local as the bridge holds it: `ready` resolves once it answers (at once, unless it is being restarted). */
type SupervisedDynamoDb = DynamoDbLocal & { ready(): Promise<void> };

/** How the services' supervisor speaks and gives up (supervisor.ts). */
function supervision(start: BridgeStart): Pick<SupervisorOptions<unknown>, 'log' | 'onGiveUp' | 'restartCommand' | 'maxRestarts'> {
  const { options, log } = start;
  const fromEnv = Number(process.env[SERVICE_RESTARTS_ENV]);
  const maxRestarts = options.serviceRestarts ?? (process.env[SERVICE_RESTARTS_ENV] && Number.isInteger(fromEnv) && fromEnv >= 0 ? fromEnv : 3);
  return {
    log,
    maxRestarts,
    onGiveUp: (message) => (options.onServiceLost ? options.onServiceLost(message) : log(message)),
    ...(options.restartCommand ? { restartCommand: options.restartCommand } : {}),
  };
}

/** DynamoDB Local (or the given DynamoDB) and s3rver, started side by side; awaited in servicesUp. */
function startStorage(start: BridgeStart): { dynamodbStart: Promise<SupervisedDynamoDb>; s3Start: Promise<LocalS3> } {
  const { options, log, started, persistent, stateDir, bucket, credentialStore, dynamodbGateSecret, onRefused, trigger } = start;
    // The three services start side by side (DynamoDB Local's JVM is the slowest);
    // each registers its stop as soon as it is up, so a failed start stops the others.
    const dynamodbStart: Promise<SupervisedDynamoDb> = options.dynamodbEndpoint
      ? Promise.resolve({ endpoint: validDynamoDbEndpoint(options.dynamodbEndpoint), close: async () => undefined, ready: async () => undefined })
      : started('DynamoDB Local', async () => {
          // Generous start limits: a JVM on a busy 2-core machine can take a minute; a service that dies is seen at once.
          // Its temporary files in the state folder: a bridge killed with -9 leaves nothing else behind.
          // Supervised: a JVM that dies is named and started again on the same port and data (supervisor.ts).
          let port: number | undefined;
          const dbPath = path.join(stateDir, 'dynamodb');
          const supervised = await supervise<DynamoDbLocal>({
            name: 'DynamoDB Local (the ledger)',
            where: (jvm) => `${jvm.endpoint}, ${persistent ? `data in ${dbPath}` : 'in memory: its data is lost'}`,
            start: async (onExit) => {
              const jvm = await startDynamoDbLocal({
                ...(persistent ? { dbPath } : { inMemory: true }),
                ...(port !== undefined ? { port } : {}),
                javaTmpDir: path.join(stateDir, 'dynamodb-tmp'),
                startTimeoutMs: SERVICE_START_TIMEOUT_MS,
                gateSecret: dynamodbGateSecret,
                onUnexpectedExit: onExit,
              });
              port = Number(new URL(jvm.endpoint).port);
              return jvm;
            },
            ...supervision(start),
          });
          return { endpoint: supervised.current().endpoint, get pid() { return supervised.current().pid; }, close: () => supervised.close(), ready: () => supervised.ready() };
        });
    const s3Start = started('s3rver', async (): Promise<LocalS3> => {
      const s3Options = {
        directory: path.join(stateDir, 's3'),
        buckets: [bucket],
        onRecord: (record: S3NotificationRecord) => trigger.onRecord(record),
        credentials: credentialStore,
        onRefused,
        // While the state folder's disk is full, writes wait for space instead of failing jobs (disk-watch.ts).
        disk: start.disk,
        startTimeoutMs: SERVICE_START_TIMEOUT_MS,
        // s3rver's modules from V8's code cache, beside the functions' (below): every start after the first.
        compileCacheDir: path.join(definitionCacheDir(), 'v8'),
        ...(options.s3NotificationDelayMs ? { notificationDelayMs: options.s3NotificationDelayMs } : {}),
      };
      // Supervised: an s3rver that dies is named and started again on the same port and folder (supervisor.ts).
      let port: number | undefined;
      const supervised = await supervise<LocalS3>({
        name: 's3rver (the local S3)',
        where: (s3) => `${s3.endpoint}, objects in ${s3Options.directory}`,
        start: async (onExit) => {
          const s3 =
            port === undefined
              ? await startS3OnPort({ ...s3Options, onUnexpectedExit: onExit }, options.s3Port ?? 0, options.s3PortFallback ?? false, log)
              : await startLocalS3({ ...s3Options, port, onUnexpectedExit: onExit });
          port = s3.port;
          return s3;
        },
        ...supervision(start),
      });
      const first = supervised.current();
      return {
        endpoint: first.endpoint,
        port: first.port,
        get pid() {
          return supervised.current().pid;
        },
        credentials: first.credentials,
        store: first.store,
        flushNotifications: async () => {
          await supervised.ready();
          return supervised.current().flushNotifications();
        },
        setVersioning: async (name, status) => {
          await supervised.ready();
          return supervised.current().setVersioning(name, status);
        },
        close: () => supervised.close(),
      };
    });
    dynamodbStart.catch(() => undefined); // awaited below, after the services
    s3Start.catch(() => undefined);
  return { dynamodbStart, s3Start };
}

/** The JVM and s3rver are starting: now this process loads the rest of the bridge. */
function loadBridgeModules(start: BridgeStart): Promise<BridgeModules> {
  return start.timed('bridge modules loaded', () => import('./bridge-modules.ts'));
}

/** The embedded simulator (unless a Mapflow is given), the gate in front of DynamoDB, and the ledger table. */
function startMapflowAndLedger(
  start: BridgeStart,
  { startSimulator, startJsonGateProxy, DynamoDBClient, DynamoDBDocumentClient }: BridgeModules,
  { dynamodbStart }: { dynamodbStart: Promise<SupervisedDynamoDb> },
): { simulatorStart: Promise<RunningSimulator | undefined>; simulatorToken: string; dynamodbGateStart: Promise<{ endpoint: string }>; ledgerReady: Promise<DynamoDBDocumentClient> } {
  const { options, timed, started, stateDir, ledgerTable, credentialStore, dynamodbGateSecret, onRefused, faults } = start;
    // Mapflow: the embedded simulator unless a target is given.
    // A fresh token per start: it only guards the loopback simulator, and is never shown.
    const simulatorToken = randomBytes(24).toString('hex');
    const simulatorStart = options.mapflow
      ? Promise.resolve(undefined)
      : started(
          'the Mapflow simulator',
          () => startSimulator({
            processingSeconds: 5,
            ...options.simulator,
            token: simulatorToken,
            email: LOCAL_EMAIL,
            // In the state folder even when it is temporary: a bridge killed with -9 leaves one
            // folder, which the next bridge sweeps, not a simulator folder of its own besides.
            dataDir: path.join(stateDir, 'simulator'),
          }),
        );
    // The ledger table as soon as DynamoDB Local answers, side by side with whatever still starts.
    // DynamoDB Local accepts any key: every client, the functions' included, goes through the gate in front of it.
    const dynamodbGateStart = dynamodbStart.then((dynamodb) =>
      // While the JVM restarts (supervisor.ts), the gate holds requests until it answers again.
      started('the DynamoDB gate', () => startJsonGateProxy({ service: 'dynamodb', target: dynamodb.endpoint, store: credentialStore, onRefused, forwardHeaders: { 'x-mapflow-bridge-gate': dynamodbGateSecret }, targetReady: () => dynamodb.ready(), disk: start.disk, ...(faults ? { intercept: dynamodbFaults(faults) } : {}) })),
    );
    dynamodbGateStart.catch(() => undefined); // awaited below, after the services
    const ledgerReady = Promise.all([dynamodbStart, dynamodbGateStart]).then(async ([dynamodb, gate]) => {
      const doc = DynamoDBDocumentClient.from(
        new DynamoDBClient({ endpoint: gate.endpoint, region: 'us-east-1', credentials: credentialStore.user }),
        { marshallOptions: { removeUndefinedValues: true } },
      );
      // Created at once, an existing one kept (one request: each costs on a fresh JVM).
      await timed('ledger table', () => ensureLedgerTable(gate.endpoint, ledgerTable, credentialStore.user)).catch((error: unknown) => {
        if (!options.dynamodbEndpoint) throw error;
        throw new Error(`Cannot keep the ledger in the DynamoDB at ${dynamodb.endpoint}: ${describe(error)}. Is it running?`, { cause: error });
      });
      return doc;
    });
    ledgerReady.catch(() => undefined); // awaited below, after the services
  return { simulatorStart, simulatorToken, dynamodbGateStart, ledgerReady };
}

type LoadedAssembly = { assembly: { model: AssemblyModel; cache: StartupTimeline['definitionCache'] } } | { synthError: unknown };

/**
 * Meanwhile, in this process: the cloud assembly `cdk deploy` would upload, synthesized with this
 * bridge's settings, from the disk cache when its sources are unchanged (packages/local/src/assembly/cache.ts);
 * a miss synthesizes (CPU-bound, in this process) and bundles the handlers once per change of the sources.
 * A failure is kept for servicesUp, which throws it once the services have settled.
 */
async function loadCloudAssembly(start: BridgeStart, { loadLocalAssembly, readAssembly, checkDefinition }: BridgeModules): Promise<LoadedAssembly> {
  const { options, log, timed, phases, stops, localNames } = start;
    try {
    const assembly = await timed('cloud assembly', async () => {
        const loaded = await (options.assembly
          ? Promise.resolve({ dir: options.assembly.dir, templateFile: options.assembly.templateFile, cache: 'off' as const, dispose: async () => undefined })
          : loadLocalAssembly(
              localAssemblySettings(options),
              // A fresh assembly's definition gets aws-local-stepfunctions' ASL check before it is cached,
              // so a warm start builds the engine without that CPU work.
              { check: async (dir, templateFile) => checkDefinition((await readAssembly(dir, localNames, templateFile)).stateMachine.definition), log },
            ));
        stops.push({ name: 'the cloud assembly', stop: () => loaded.dispose() });
        const model = await readAssembly(loaded.dir, localNames, loaded.templateFile);
        // An assembly given from outside (a consumer's cdk.out) has not been checked yet.
        if (options.assembly) checkDefinition(model.stateMachine.definition);
        return { model, cache: loaded.cache };
      });
      const phase = phases.at(-1);
      if (phase?.name === 'cloud assembly') phase.name = `cloud assembly (cache ${assembly.cache})`;
    return { assembly };
    } catch (error) {
    return { synthError: error };
    }
}

/** Every service up (or the first failure thrown), the assembly loaded, and the Mapflow the functions call. */
async function servicesUp(
  start: BridgeStart,
  { dynamodbStart, s3Start }: ReturnType<typeof startStorage>,
  { simulatorStart, simulatorToken, dynamodbGateStart, ledgerReady }: ReturnType<typeof startMapflowAndLedger>,
  loaded: LoadedAssembly,
) {
  const { options } = start;
    const services = await Promise.allSettled([simulatorStart, dynamodbStart, dynamodbGateStart, s3Start, ledgerReady]);
    const failure = services.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failure) throw failure.reason;
  if ('synthError' in loaded) throw loaded.synthError;
  const { assembly } = loaded;
    const simulator = await simulatorStart;
    const dynamodb = await dynamodbStart;
    const dynamodbGate = await dynamodbGateStart;
    const s3rver: LocalS3 = await s3Start;
    // The template's bucket is versioned (the stack's default): so is the local one, before any function runs.
    if (assembly.model.dataBucketVersioned) await s3rver.setVersioning(start.bucket, 'Enabled');
    const mapflow: Required<MapflowTarget> = options.mapflow
      ? { email: '', ...options.mapflow }
      : { url: (simulator as RunningSimulator).url, token: simulatorToken, email: LOCAL_EMAIL };
    const doc = await ledgerReady;
  return { assembly, simulator, dynamodb, dynamodbGate, s3rver, mapflow, doc };
}

type ServicesUp = Awaited<ReturnType<typeof servicesUp>>;

/** The functions of the assembly, each from its bundle, and the services they call. */
async function startFunctions(start: BridgeStart, { Ledger, localS3Client, servicesGate, startAssemblyRuntime }: BridgeModules, up: ServicesUp) {
  const { options, log, timed, stops, persistent, stateDir, ledgerTable, eventsFile, credentialStore, onRefused } = start;
  const { assembly, s3rver, dynamodbGate, mapflow, doc } = up;
    const ledger = new Ledger(doc, ledgerTable);
    const s3 = localS3Client(s3rver.endpoint, credentialStore.user);
    const compileCacheRoot = definitionCacheDir();
    // Read before this run's first step overwrites it: which jobs were mid-step when the last run stopped, and
    // whether that run recorded its own death (an uncaught error). Only a recorded death counts against a job:
    // a kill from outside (kill -9, a double Ctrl-C, the machine's OOM killer) leaves no record and blames no file.
    const crash = persistent ? takeCrashRecord(stateDir) : undefined;
    const midStep = persistent ? readStepsInFlight(stateDir) : undefined;
    const runningAtStop = persistent ? new Set(crash ? crash.jobs.filter((jobId) => midStep?.has(jobId) ?? true) : []) : undefined;
    const stepsInFlight = new StepsInFlight(stateDir);
    // At once: a kill during the rest of the start must not count those jobs a second time.
    if (persistent) {
      stepsInFlight.reset();
      const unhook = recordCrashes(stateDir, () => stepsInFlight.jobs());
      stops.push({ name: 'the crash record', stop: async () => unhook() });
    }
    const inboxPrefix = assembly.model.functions.find((fn) => fn.environment.INBOX_PREFIX)?.environment.INBOX_PREFIX ?? 'inbox/';

    // The functions of the assembly, each from its bundle, and the services they call.
    const runtime = await timed('assembly runtime', () =>
      startAssemblyRuntime({
        model: (assembly as { model: AssemblyModel }).model,
        s3Endpoint: s3rver.endpoint,
        dynamodbEndpoint: dynamodbGate.endpoint,
        mapflow,
        eventsFile,
        disk: start.disk,
        logDir: path.join(stateDir, 'logs'),
        // The executions' names, 90 days after they close, across restarts (a temporary state folder goes with its bridge).
        ...(persistent ? { executionNamesFile: path.join(stateDir, EXECUTION_NAMES_FILE) } : {}),
        compileCacheDir: path.join(compileCacheRoot, 'v8'),
        defaultCredentials: credentialStore.user,
        // Local IAM: each role signs with a key pair of its own, judged against its policies from the template.
        credentialsFor: options.credentialsFor ?? ((principal) => credentialStore.addPrincipal(principal.name, principal.roleArn, principal.policies)),
        ...(options.functionOutput ? { functionOutput: options.functionOutput } : {}),
        // Which jobs have a step running, in the state folder: a crash then counts against them only.
        ...(persistent ? { onInvoke: (event: unknown, bridgeFunction: string) => stepsInFlight.begin(event, bridgeFunction) } : {}),
        // Local IAM for the state machine too: every Task's Lambda invoke and the Distributed Map's StartExecution are judged against its role.
        enforceStateMachineRole: true,
        authorize: options.authorize ?? servicesGate({ store: credentialStore, stateMachineArn: (assembly as { model: AssemblyModel }).model.stateMachine.arn, onRefused }),
        ...(options.waitOverridesMs ? { waitOverridesMs: options.waitOverridesMs } : {}),
        ...(options.retryIntervalMs !== undefined ? { retryIntervalMs: options.retryIntervalMs } : {}),
        ...(options.environmentBudget ? { environmentBudgetMb: options.environmentBudget.totalMb } : {}),
        ...(options.environmentBudget?.lightReserveMb !== undefined ? { lightReserveMb: options.environmentBudget.lightReserveMb } : {}),
        ...(options.onTask ? { onTask: options.onTask } : {}),
        ...(options.onStateOutput ? { onStateOutput: options.onStateOutput } : {}),
        ...(start.faults && start.faults.settings.duplicateDelivery > 0 ? { duplicateDelivery: start.faults } : {}),
        ...(start.faults && start.faults.settings.lambdaThrottle > 0 ? { lambdaThrottle: start.faults } : {}),
        onExecutionStopped: (execution) => {
          // A job that ends FAILED or REJECTED stops in the 'Job Failed' state (JobFailed):
          // its ledger row says why. Anything else is an execution that broke.
          if (execution.status !== 'SUCCEEDED' && execution.status !== 'ABORTED' && execution.error?.Error !== 'JobFailed') {
            log(`local bridge: execution ${execution.name} ${execution.status}: ${execution.error?.Error ?? ''} ${execution.error?.Cause ?? ''}`);
          }
          options.onExecutionStopped?.(execution);
        },
        onDuplicateStart: (name, started) =>
          // A re-drop of a finished job's exact file is recognised (exactly once) and ends at
          // Register Job without an event; on a terminal, say so rather than stay silent.
          ledger.get(name).then((row) => {
            const input = (started as ExecutionInput | undefined)?.input;
            if (row && isFinalStatus(row.status) && input && row.input.key === input.key) {
              log(
                `${input.key.slice(inboxPrefix.length)}: same file as job ${name}, already ${row.status}: not run again. ` +
                  'To run it again, drop it under a new name or change the file.',
              );
            }
          }, () => undefined),
        log,
      }),
    );
    stops.push({ name: 'the functions and their services', stop: () => runtime.close() });
    // Said once per standstill, so a user who pressed Ctrl-Z (or whose laptop slept) sees why timers jumped.
    const unwatch = onStandstill((ms) =>
      log(`local bridge: stood still for ${(ms / 1000).toFixed(1)} s (stopped, e.g. Ctrl-Z or SIGSTOP, or starved of CPU); that time does not count against the functions' timeouts`),
    );
    stops.push({ name: 'the standstill watch', stop: async () => unwatch() });
    // After the start, in the background: one warm environment per function, in the order a job needs them.
    if (options.prewarm) void runtime.prewarm().catch(() => undefined);
  return { ledger, s3, runningAtStop, crash, runtime, engine: runtime.engine };
}

type BridgeFunctions = Awaited<ReturnType<typeof startFunctions>>;

/**
 * The operator tools of this process (jobs retry / cancel through the control endpoint) read
 * this environment; the functions never see it (each runs on the template's, see packages/local/src/assembly).
 */
function setOperatorEnvironment(start: BridgeStart, { s3rver, dynamodbGate, mapflow }: ServicesUp, runtime: AssemblyRuntime): void {
  const { options, stops, ledgerTable, eventsFile, credentialStore } = start;
  const routesJson = withCreditBudget(options.routes, options.creditBudget);
    const restoreEnv = setEnvironment({
      BRIDGE_SFN_ENDPOINT: runtime.endpoints.sfn,
      LEDGER_TABLE: ledgerTable,
      BRIDGE_S3_ENDPOINT: s3rver.endpoint,
      BRIDGE_DYNAMODB_ENDPOINT: dynamodbGate.endpoint,
      BRIDGE_EVENTS_FILE: eventsFile,
      MAPFLOW_BASE_URL: mapflow.url,
      MAPFLOW_TOKEN: mapflow.token,
      MAPFLOW_EMAIL: mapflow.email || undefined,
      MAPFLOW_SECRET_ARN: undefined,
      ROUTES: routesJson,
      POLL_POLICY: JSON.stringify(localPollPolicy(options)),
      MAX_CONCURRENT_PROCESSINGS: options.maxConcurrentProcessings?.toString(),
      POWERTOOLS_METRICS_DISABLED: 'true',
      AWS_REGION: LOCAL_AWS.region,
      AWS_ACCESS_KEY_ID: credentialStore.user.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentialStore.user.secretAccessKey,
      AWS_SESSION_TOKEN: undefined,
      AWS_PROFILE: undefined,
    });
    stops.push({ name: 'the environment', stop: async () => restoreEnv() });
}

/**
 * The trigger: s3rver's notifications go through the template's rule and queue to dispatch,
 * once Mapflow answers when the bridge started degraded (options.dispatchAfter); then the inbox
 * objects whose notification died with a killed bridge. Returns the context of this process's
 * own reads and repairs.
 */
async function connectTrigger(start: BridgeStart, runtime: AssemblyRuntime) {
  const { options, log, timed, bucket, trigger } = start;
    const dispatch = (record: S3NotificationRecord): void => runtime.onS3Record(record);
    if (options.dispatchAfter) {
      const held: S3NotificationRecord[] = [];
    trigger.onRecord = (record) => held.push(record);
      void options.dispatchAfter
        .catch(() => undefined)
        .then(() => {
        trigger.onRecord = dispatch;
          held.splice(0).forEach(dispatch);
        });
    } else {
    trigger.onRecord = dispatch;
    }
  trigger.notifications.splice(0).forEach((record) => trigger.onRecord(record));
    // The context of this process's own reads and repairs (the inbox sweep, ending a job that kept
    // crashing the bridge): on this process's environment above, never a function's.
    const { bridgeContext } = await import('mapflow-bridge/functions/runtime/context.ts');
    const context = bridgeContext(process.env);
    // Inbox objects whose notification died with a killed bridge (packages/local/src/inbox-sweep.ts).
  await timed('inbox sweep', async () => (await import('./inbox-sweep.ts')).sweepInboxOnStart(context, bucket, (record) => trigger.onRecord(record), log));
  return context;
}

/** Events, followed live for the caller. */
async function followEventsForCaller(start: BridgeStart, { followEvents }: BridgeModules): Promise<void> {
  const { options, timed, stops, eventsFile } = start;
  if (!options.onEvent) return;
  const follower: EventFollower = await timed('event follower', () => followEvents(eventsFile, options.onEvent as (event: LocalEvent) => void));
  stops.push({ name: 'the event follower', stop: () => follower.close() });
}

/**
 * Reconciler: settles jobs whose execution is gone (e.g. after a restart). It
 * runs at the template's schedule (scaled by the local factor), invoked
 * asynchronously with Lambda's retries, as EventBridge invokes it on AWS
 * (packages/local/src/assembly/schedule.ts).
 */
function startReconciler(start: BridgeStart, runtime: AssemblyRuntime): () => Promise<void> {
  const { options, log, stops } = start;
  // The reconcile function with the schedule's event, synchronously: the caller sees its error.
  const reconcileNow = async (): Promise<void> => runtime.reconcileNow();
  const spec = runtime.reconcileSchedule;
  if (!spec || options.reconcileIntervalMs === 0) return reconcileNow;
  const scale = scheduleScaleOf(options.scheduleScale);
  const templateMs = rateExpressionMs(spec.expression);
  if (options.reconcileIntervalMs === undefined && templateMs === undefined) {
    log(`local bridge: the reconcile rule's schedule ${spec.expression} is not a rate(); the reconciler runs only on request (reconcileIntervalMs sets a period)`);
    return reconcileNow;
  }
  const schedule = new LocalSchedule({
    // An explicit period is taken as it is; the template's is divided by the factor.
    periodMs: options.reconcileIntervalMs ?? (templateMs as number),
    scale: options.reconcileIntervalMs === undefined ? scale : 1,
    invoke: reconcileNow,
    retryAttempts: spec.asyncRetryAttempts,
    log,
  });
  schedule.start();
  // First in the stop order after reversal: no reconcile while services stop.
  stops.push({ name: 'the reconciler', stop: () => schedule.stop() });
  return reconcileNow;
}

/**
 * Jobs that ended just as the last run was killed, their final event not out yet (packages/local/src/final-events.ts):
 * published now, on the same condition as the resume of unfinished jobs (this start owns what the last one left).
 */
async function publishFinalEventsOwed(start: BridgeStart, { ledger }: BridgeFunctions): Promise<void> {
  const { options, log, timed, persistent, eventsFile } = start;
  if (!(options.resumeUnfinished ?? persistent)) return;
  const owed = await timed('final events owed', async () => {
    const [{ publishFinalEventsOwed: publish }, { bridgeContext }] = await Promise.all([import('./final-events.ts'), import('mapflow-bridge/functions/runtime/context.ts')]);
    const context = bridgeContext(process.env);
    return publish(ledger, context.events, eventsFile, { s3: context.s3 });
  });
  if (owed.published.length > 0) log(`local bridge: published the final event of ${owed.published.length} job(s) that ended as the bridge stopped: ${owed.published.join(', ')}`);
}

/**
 * The jobs the ledger shows unfinished go on, except those that kept crashing the bridge (ended FAILED);
 * then the other executions the last run left running.
 */
async function resumeUnfinished(start: BridgeStart, { ledger, engine, runningAtStop, crash }: BridgeFunctions, context: ReturnType<typeof import('mapflow-bridge/functions/runtime/context.ts').bridgeContext>): Promise<void> {
  const { options, log, timed, stops, persistent, stateDir } = start;
  if (!(options.resumeUnfinished ?? persistent)) {
    abandonInterrupted(engine, log, 'resuming is off');
    return;
  }
      const { resumed, gaveUp } = await timed('unfinished jobs resumed', () =>
        resumeUnfinishedJobs(ledger, engine, stateDir, runningAtStop, async (row, uncleanStops) => {
          const { finishJobAsFailed } = await import('mapflow-bridge/functions/handlers/reconcile.ts');
          return finishJobAsFailed(context, row, undefined, new Date(), {
            code: PROCESS_CRASHED,
            message:
              `The bridge's own process died ${uncleanStops} times in a row of an error no code caught, each time while a step that decodes this job's input ran ` +
              `(the job was ${row.status}; the last error: ${(crash as CrashRecord | undefined)?.reason ?? 'unknown'}), so it was not resumed again: that is taken as the file's doing. ` +
              'A kill or Ctrl-C never counts. `npx mapflow-bridge jobs retry <jobId>` runs it again; if it ends the same way, keep the file out of the inbox and report it.',
          });
        }),
      );
      // Cleared on a clean stop: what is left at the next start means the bridge did not close.
      stops.push({ name: 'the unclean-stop counts', stop: async () => clearResumeCounts(stateDir) });
      if (resumed.length > 0) log(`local bridge: resumed ${resumed.length} unfinished job(s): ${resumed.join(', ')}`);
      for (const jobId of gaveUp) log(`local bridge: ${jobId} was in flight through ${MAX_UNCLEAN_RESUMES} unclean stops in a row; ended FAILED (${PROCESS_CRASHED}) instead of resumed`);
  resumeInterrupted(engine, log);
}

/** The executions the last run left running and this start did not resume: closed ABORTED (nothing runs them any more). */
function abandonInterrupted(engine: LocalEngine, log: (message: string) => void, why: string): void {
  const abandoned = engine.abandonInterrupted();
  if (abandoned.length > 0) log(`local bridge: ${abandoned.length} execution(s) the last run left running were not resumed (${why}): ended ABORTED: ${abandoned.join(', ')}`);
}

/**
 * The other executions the last run left running go on too, with the input
 * they started with: those killed before Register Job wrote their row, and
 * those whose job had ended (Register Job then finds the final row and ends
 * them). On AWS none of them stopped.
 */
function resumeInterrupted(engine: LocalEngine, log: (message: string) => void): void {
  const resumed = engine.names.interrupted().filter((name) => engine.names.get(name)?.input !== undefined && engine.resumeExecution(name).outcome === 'resumed');
  if (resumed.length > 0) log(`local bridge: resumed ${resumed.length} execution(s) left running by the last run: ${resumed.join(', ')}`);
  abandonInterrupted(engine, log, 'their input was not kept');
}

/** The drop folder: what is copied into <stateDir>/drop goes up to inbox/<same path> (unless dropFolder is false). */
async function watchDrop(start: BridgeStart, { watchDropFolder }: BridgeModules, s3: S3Client, engine: LocalEngine): Promise<DropFolder | undefined> {
  const { options, log, timed, stops, stateDir, bucket, dropDir } = start;
  if (!(options.dropFolder ?? true)) return undefined;
  const drop = await timed('drop folder watched', () => watchDropFolder({
        dir: dropDir,
        uploadedDir: path.join(stateDir, 'uploaded'),
        ...(options.dropStableMs !== undefined ? { stableMs: options.dropStableMs } : {}),
        s3,
        bucket,
        // The watcher moves a dropped file to uploaded/ once it is in S3; say where both went.
        onUploaded: (upload) => {
          const relative = path.relative(process.cwd(), upload.file);
          const moved = relative && !relative.startsWith('..') ? relative : upload.file;
          log(`uploaded ${upload.key} to s3://${bucket}/ (the file moved to ${moved})`);
          // A file of another type is a job too: it ends REJECTED UNSUPPORTED_FILE_TYPE, in the events like any other.
        },
        // A name the bridge refuses is not uploaded: its job starts to be REJECTED INVALID_KEY, with a report.
        reject: async ({ file, key, etag, size, problem }) => {
          const { jobId } = await startRejection(engine, { bucket, key, etag, size });
          log(`not uploaded: ${path.relative(process.cwd(), file) || file}: its key ${key} has ${problem}; job ${jobId} ends REJECTED INVALID_KEY (the file moved to ${path.join(stateDir, 'uploaded')})`);
        },
        onError: (file, error) =>
          log(`local bridge: cannot upload ${file}: ${describe(error)}${start.disk.full ? ' (the disk holding the state folder is full)' : ''}${(error as Error)?.name === 'KeyRefused' ? '' : ' (retrying in 10 s)'}`),
        onWaiting: (file, why) => log(`waiting for ${path.relative(process.cwd(), file) || file} to ${why === 'open' ? 'be closed by the program writing it' : 'stop changing'}; it goes up once unchanged for ${(options.dropStableMs ?? 3_000) / 1000} s and closed`),
      }));
  stops.push({ name: 'the drop folder', stop: () => drop.close() });
  return drop;
}

/** The running bridge, as the caller holds it. */
function bridgeHandle(
  start: BridgeStart,
  { Upload }: BridgeModules,
  { assembly, simulator, dynamodb, dynamodbGate, s3rver, mapflow }: ServicesUp,
  { ledger, s3, runtime, engine }: BridgeFunctions,
  reconcileNow: () => Promise<void>,
  drop: DropFolder | undefined,
): LocalBridge {
  const { entryMs, phases, stopAll, persistent, stateDir, bucket, ledgerTable, dropDir, eventsFile, credentialStore } = start;
  const definitionCache = assembly.cache;
    const dispatchIdle = (): Promise<void> => runtime.dispatchIdle();

    const bridge: LocalBridge = {
      startup: { entryMs, readyMs: performance.now(), definitionCache, phases },
      endpoints: { s3: s3rver.endpoint, dynamodb: dynamodbGate.endpoint, mapflow: mapflow.url },
      credentials: { accessKeyId: credentialStore.user.accessKeyId, secretAccessKey: credentialStore.user.secretAccessKey },
      credentialStore,
      bucket,
      ledgerTable,
      stateDir,
      dropDir,
      eventsFile,
      s3,
      ledger,
      engine,
      assembly: { dir: assembly.model.assemblyDir, model: assembly.model, functions: runtime.functions, principals: runtime.principals },
      ...(simulator ? { simulator } : {}),
      injectedFaults: start.faults?.injected ?? { dynamodbConflict: 0, gsiLag: 0, duplicateDelivery: 0, lambdaThrottle: 0 },
      servicePids: () => ({
        ...(dynamodb.pid !== undefined ? { dynamodb: dynamodb.pid } : {}),
        ...(s3rver.pid !== undefined ? { s3: s3rver.pid } : {}),
      }),

      async putInbox(file, relativeKey) {
        const key = `inbox/${relativeKey.replace(/^\/+/, '')}`;
        const size = (await stat(file)).size;
        const result = await new Upload({ client: s3, params: { Bucket: bucket, Key: key, Body: createReadStream(file) } }).done();
        const object: InputObject = { bucket, key, ...(result.VersionId ? { versionId: result.VersionId } : {}), etag: (result.ETag ?? '').replace(/"/g, ''), size };
        return { object, jobId: jobIdFor(object) };
      },

      async rejectInbox(file, relativeKey) {
        const hash = createHash('md5');
        for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
        const size = (await stat(file)).size;
        return startRejection(engine, { bucket, key: `inbox/${relativeKey.replace(/^\/+/, '')}`, etag: hash.digest('hex'), size });
      },

      async waitForJobs({ timeoutMs = 600_000 } = {}) {
        await withTimeout('the jobs to finish', timeoutMs, async () => {
          // Until a full round finds nothing new: uploads make notifications, which start executions.
          for (;;) {
            await drop?.idle();
            // Uploads already answered may not be notified yet: let their notifications arrive.
            await s3rver.flushNotifications();
            await dispatchIdle();
            await engine.idle();
            if (runtime.pendingDispatches === 0 && engine.running().length === 0) return;
          }
        });
      },

      async waitForJob(jobId, { timeoutMs = 600_000 } = {}) {
        return withTimeout(`job ${jobId}`, timeoutMs, async () => {
          for (;;) {
            await s3rver.flushNotifications();
            await dispatchIdle();
            await engine.waitFor(jobId);
            const row = await ledger.get(jobId);
            if (row && isFinalStatus(row.status)) return row;
            const execution = engine.describe(jobId);
            if (execution && execution.status !== 'RUNNING') return row;
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        });
      },

      reconcileNow,

      async close() {
        await stopAll();
        if (!persistent) await rm(stateDir, { recursive: true, force: true });
      },
    };
    return bridge;

}

/**
 * Starts the local S3 on `port`; when that port is taken and `fallback` is
 * set, on a free port instead, saying so (saved AWS CLI commands then need the
 * new endpoint).
 */
export async function startS3OnPort(
  options: Omit<LocalS3Options, 'port'>,
  port: number,
  fallback: boolean,
  log: (message: string) => void,
): Promise<LocalS3> {
  try {
    return await startLocalS3({ ...options, port });
  } catch (error) {
    const taken = error instanceof LocalS3StartError && /EADDRINUSE/.test(error.message);
    if (!taken) throw error;
    if (!fallback || port === 0) {
      throw new LocalS3StartError(`port ${port} for the local S3 is taken by another program; give another with --s3-port.`, { cause: error });
    }
    const running = await startLocalS3({ ...options, port: 0 });
    log(`local bridge: port ${port} is taken by another program, so the local S3 listens on port ${running.port} this time (--s3-port chooses one).`);
    return running;
  }
}

/**
 * Resumes the execution of every job whose ledger row is not final (the
 * execution the last run was running, under its own name: on AWS it never
 * stopped), except those in flight through MAX_UNCLEAN_RESUMES unclean stops
 * in a row (packages/local/src/crash-resumes.ts), which `giveUp` ends. A job
 * whose execution had closed (stopped, timed out) is not started again under
 * that name, as on AWS: the reconciler ends it (EXECUTION_LOST).
 */
async function resumeUnfinishedJobs(
  ledger: Ledger,
  engine: LocalEngine,
  stateDir: string,
  runningAtStop: ReadonlySet<string> | undefined,
  giveUp: (row: LedgerRow, uncleanStops: number) => Promise<unknown>,
): Promise<{ resumed: string[]; gaveUp: string[] }> {
  const rows: LedgerRow[] = [];
  for (const status of JOB_STATUSES.filter((s) => !isFinalStatus(s))) rows.push(...(await ledger.listByStatus(status, { limit: 1_000 })));
  const plan = planResumes(rows.map((row) => row.jobId), readResumeCounts(stateDir), MAX_UNCLEAN_RESUMES, runningAtStop);
  writeResumeCounts(stateDir, plan.counts);
  const gaveUp: string[] = [];
  for (const { jobId, uncleanStops } of plan.giveUp) {
    await giveUp(rows.find((row) => row.jobId === jobId)!, uncleanStops);
    // Ended outside its execution, as an operator's StopExecution would: its name closes.
    engine.abandonInterrupted([jobId]);
    gaveUp.push(jobId);
  }
  const resumed: string[] = [];
  for (const jobId of plan.resume) {
    const row = rows.find((r) => r.jobId === jobId)!;
    const input: ExecutionInput = { jobId: row.jobId, input: row.input };
    // The execution the last run was running goes on under its own name (on AWS it never stopped). One that
    // closed (aborted, timed out) keeps its name closed, as on AWS: the reconciler ends its job (EXECUTION_LOST).
    // A name never recorded (a state folder older than the names file) starts as new.
    if (engine.names.isInterrupted(row.jobId)) {
      if (engine.resumeExecution(row.jobId, input).outcome === 'resumed') resumed.push(row.jobId);
    } else if ((await engine.start(row.jobId, input)) === 'started') resumed.push(row.jobId);
  }
  return { resumed, gaveUp };
}

/** Sets (or, with undefined, removes) variables; returns a function that restores them. */
function setEnvironment(values: Record<string, string | undefined>): () => void {
  const previous = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  const apply = (from: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(from)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(values);
  return () => apply(previous);
}

async function withTimeout<T>(what: string, ms: number, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new LocalBridgeTimeout(what, ms)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts the job of an object that is not in the local S3 (its name cannot be
 * stored there): Register Job reads only its key, and rejects it (INVALID_KEY).
 * The same input, job id and path as an uploaded file's.
 */
async function startRejection(engine: LocalEngine, object: InputObject): Promise<{ object: InputObject; jobId: string }> {
  const jobId = jobIdFor(object);
  const input: ExecutionInput = { jobId, input: object };
  await engine.start(jobId, input);
  return { object, jobId };
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * The settings the local bridge synthesizes its assembly with (the template
 * then carries them): tests and benches load the same assembly ahead
 * (`loadLocalAssembly(localAssemblySettings(options))`) to keep a cold
 * synthesis out of what they measure.
 */
export function localAssemblySettings(
  options: Pick<LocalBridgeOptions, 'mapflow' | 'routes' | 'creditBudget' | 'pollPolicy' | 'maxConcurrentProcessings'>,
): LocalAssemblySettings {
  const routesJson = withCreditBudget(options.routes, options.creditBudget);
  return {
    pollPolicy: localPollPolicy(options),
    ...(options.maxConcurrentProcessings !== undefined ? { maxConcurrentProcessings: options.maxConcurrentProcessings } : {}),
    ...(routesJson !== undefined ? { routes: parseRoutes(routesJson).routes } : {}),
  };
}

/**
 * The routes the bridge's functions run with: the template's ROUTES (with
 * `--assembly`, another app's), else the built-in routes, as the handlers read them.
 */
export function runningRoutes(bridge: Pick<LocalBridge, 'assembly'>): Route[] {
  const json = bridge.assembly.model.functions.map((spec) => spec.environment.ROUTES).find((routes) => routes !== undefined);
  return parseRoutes(json).routes;
}

/** Copies a file (used by the start command to drop the bundled samples). */
export async function copyInto(file: string, dir: string, name = path.basename(file)): Promise<string> {
  await mkdir(dir, { recursive: true });
  const target = path.join(dir, name);
  await copyFile(file, target);
  return target;
}

/**
 * The routes (the given ones, or the built-in ones) with `creditBudget` on
 * every route that sets none; unchanged without one (the routes' default applies).
 */
function withCreditBudget(routesJson: string | undefined, creditBudget: number | undefined): string | undefined {
  if (creditBudget === undefined) return routesJson;
  const { routes } = parseRoutes(routesJson);
  return JSON.stringify({ routes: routes.map((route) => ({ creditBudget, ...route })) });
}
