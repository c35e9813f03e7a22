/**
 * Test harness of the task handlers: real local services (the Mapflow
 * simulator, s3rver, DynamoDB Local) and an in-process driver that walks a
 * job through the steps the way the state machine does (lib/private/workflow.ts):
 * results and errors pass through JSON like Lambda payloads, a thrown error
 * becomes `{Error, Cause}` at `$.error`, transient errors are retried, and
 * waits are compressed.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetObjectCommand, GetObjectTaggingCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { EventDetailType, InputObject } from '../../functions/core/model.ts';
import type { JobEventDetail } from '../../functions/events/types.ts';
import type { PartOutcome, PartState, PlanPart, RegisterResult, TaskError, WorkflowState } from '../../functions/jobs/workflow.ts';
import { DEFAULT_POLL_POLICY, type PollPolicy } from '../../functions/polling/poll-policy.ts';
import { makeStepContext, type StepContext, type StepLogger } from '../../functions/jobs/context.ts';
import { registerJob } from '../../functions/jobs/steps/register-job.ts';
import { inspectGeotiff } from '../../functions/jobs/steps/inspect-geotiff.ts';
import { ensureMosaic } from '../../functions/jobs/steps/ensure-mosaic.ts';
import { uploadImage } from '../../functions/jobs/steps/upload-image.ts';
import { planProcessing } from '../../functions/jobs/steps/plan-processing.ts';
import { acquireSlot } from '../../functions/jobs/steps/acquire-slot.ts';
import { createProcessing } from '../../functions/jobs/steps/create-processing.ts';
import { pollProcessing } from '../../functions/jobs/steps/poll-processing.ts';
import { restartProcessing } from '../../functions/jobs/steps/restart-processing.ts';
import { storeResults } from '../../functions/jobs/steps/store-results.ts';
import { finishPart } from '../../functions/jobs/steps/finish-part.ts';
import { finishJob } from '../../functions/jobs/steps/finish-job.ts';
import { failJob } from '../../functions/jobs/steps/fail-job.ts';
import { releaseJobSlots } from '../../functions/jobs/steps/release-job-slots.ts';
import { Ledger } from '../../functions/ledger/ledger.ts';
import { ledgerTableSchema } from '../../functions/ledger/schema.ts';
import { ConcurrencySlots } from '../../functions/ledger/slots.ts';
import { MapflowClient } from '../../functions/mapflow/index.ts';
import { DEFAULT_PREFIXES, jobIdFor, normaliseEtag, type Route } from '../../functions/routing/index.ts';
import { sharedDynamoDbEndpoint } from './shared-dynamodb.ts';
import { startLocalS3, type LocalS3 } from '../../packages/local/src/s3/server.ts';
import { localS3Client } from '../../packages/local/src/s3/client.ts';
import { LOCAL_CREDENTIALS } from '../../functions/runtime/aws.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../packages/simulator/src/index.ts';
import { testTmp } from './temp.ts';
import { afterAll, afterEach, beforeAll } from 'vitest';

export const BUCKET = 'bridge-test';
export const TOKEN = 'test-token-0123456789-very-secret';
export const EMAIL = 'tester@example.com';
/** Real GeoTIFFs and GeoJSONs written by others, with their licences (samples/README.md). */
export const TESTDATA = new URL('../../samples/', import.meta.url);
export const SAMPLES = new URL('../../packages/local/samples/', import.meta.url);

/** The AWS side: s3rver, started once per test file, and the run's shared DynamoDB Local. */
export interface AwsServices {
  s3: S3Client;
  doc: DynamoDBDocumentClient;
  close(): Promise<void>;
}

export async function startAwsServices(): Promise<AwsServices> {
  const dir = await mkdtemp(join(testTmp(), 'handlers-s3-'));
  let s3Server: LocalS3 | undefined;
  let dynamodbEndpoint: string;
  try {
    [s3Server, dynamodbEndpoint] = await Promise.all([startLocalS3({ directory: dir, buckets: [BUCKET] }), sharedDynamoDbEndpoint()]);
  } catch (err) {
    await s3Server?.close();
    throw err;
  }
  const dynamoClient = new DynamoDBClient({ endpoint: dynamodbEndpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  const servers = { s3Server };
  return {
    s3: localS3Client(s3Server.endpoint, s3Server.credentials),
    doc: DynamoDBDocumentClient.from(dynamoClient, { marshallOptions: { removeUndefinedValues: true } }),
    async close() {
      dynamoClient.destroy();
      await servers.s3Server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

let tableCounter = 0;

/** Everything one test needs: a simulator, a fresh ledger table, the step context, the events published. */
export interface Bench {
  ctx: StepContext;
  readonly sim: RunningSimulator;
  readonly client: MapflowClient;
  /** Restarts the simulator on the same data (dataDir) with other options, e.g. faults. */
  restartSimulator(options: Partial<SimulatorOptions>): Promise<void>;
  ledger: Ledger;
  events: { detailType: EventDetailType; detail: JobEventDetail }[];
  logs: { level: string; message: string; extra?: Record<string, unknown> }[];
  close(): Promise<void>;
}

export interface BenchOptions {
  routes?: Route[];
  simulator?: Partial<SimulatorOptions>;
  pollPolicy?: Partial<PollPolicy>;
  maxConcurrentProcessings?: number;
}

export async function startBench(aws: AwsServices, options: BenchOptions = {}): Promise<Bench> {
  const tableName = `ledger-${process.pid}-${++tableCounter}-${Date.now()}`;
  await aws.doc.send(new CreateTableCommand(ledgerTableSchema(tableName)));
  const dataDir = await mkdtemp(join(testTmp(), 'handlers-sim-'));
  // Decoding inline: these files drive the bridge's steps; the decoding process is the simulator's own tests' and the e2e suites'.
  const base = { token: TOKEN, email: EMAIL, processingSeconds: 1, seed: 7, dataDir, decoder: 'inline' as const };
  const connect = (url: string) => new MapflowClient({ baseUrl: url, token: TOKEN, email: EMAIL, retry: { baseDelayMs: 5, maxDelayMs: 20 }, timeoutMs: 10_000 });
  let sim = await startSimulator({ ...base, ...options.simulator });
  let client = connect(sim.url);
  const ledger = new Ledger(aws.doc, tableName);
  const max = options.maxConcurrentProcessings ?? 3;
  const events: Bench['events'] = [];
  const logs: Bench['logs'] = [];
  const logger: StepLogger = {
    info: (message, extra) => logs.push({ level: 'info', message, extra }),
    warn: (message, extra) => logs.push({ level: 'warn', message, extra }),
    error: (message, extra) => logs.push({ level: 'error', message, extra }),
  };
  const ctx = makeStepContext({
    config: {
      ledgerTable: tableName,
      routes: { routes: options.routes ?? [{ name: 'default', prefix: '' }] },
      prefixes: { ...DEFAULT_PREFIXES },
      pollPolicy: { ...DEFAULT_POLL_POLICY, initialSeconds: 1, maxSeconds: 2, maxPolls: 200, ...options.pollPolicy },
      maxConcurrentProcessings: max,
    },
    s3: aws.s3,
    ledger,
    slots: new ConcurrencySlots(aws.doc, tableName, max),
    events: {
      publish: async (detailType, detail) => {
        events.push({ detailType, detail: JSON.parse(JSON.stringify(detail)) as JobEventDetail });
      },
    },
    doc: aws.doc,
    mapflow: async () => client,
    logger,
  });
  return {
    ctx,
    get sim() {
      return sim;
    },
    get client() {
      return client;
    },
    async restartSimulator(next) {
      await sim.close();
      sim = await startSimulator({ ...base, ...next });
      client = connect(sim.url);
    },
    ledger,
    events,
    logs,
    async close() {
      await sim.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface BenchFixture {
  /** The services of the file (set once its beforeAll ran). */
  readonly aws: AwsServices;
  /** Starts a bench on them; it is closed after the test. */
  open(options?: BenchOptions): Promise<Bench>;
}

/**
 * The hooks of a test file that runs benches: the AWS services started once
 * for the file and closed after it, each bench closed after its test.
 * `defaults` shapes the options of every `open`.
 */
export function useBenches(defaults: (options: BenchOptions) => BenchOptions = (options) => options): BenchFixture {
  let aws: AwsServices | undefined;
  let bench: Bench | undefined;
  beforeAll(async () => {
    aws = await startAwsServices();
  });
  afterAll(async () => {
    await aws?.close();
  });
  afterEach(async () => {
    await bench?.close();
    bench = undefined;
  });
  return {
    get aws() {
      if (!aws) throw new Error('useBenches: the AWS services start in beforeAll');
      return aws;
    },
    async open(options = {}) {
      bench = await startBench(this.aws, defaults(options));
      return bench;
    },
  };
}

/** Puts an input object under the inbox and returns what dispatch would pass. */
export async function dropInput(s3: S3Client, key: string, body: Buffer | string): Promise<ExecutionStart> {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const out = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: bytes }));
  const input: InputObject = { bucket: BUCKET, key, etag: normaliseEtag(out.ETag ?? ''), size: bytes.length };
  return { jobId: jobIdFor(input), input };
}

export async function dropFile(s3: S3Client, key: string, file: URL): Promise<ExecutionStart> {
  return dropInput(s3, key, await readFile(file));
}

export interface ExecutionStart {
  jobId: string;
  input: InputObject;
}

export async function readText(s3: S3Client, key: string): Promise<string | undefined> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return await out.Body!.transformToString();
  } catch (err) {
    if ((err as Error).name === 'NoSuchKey') return undefined;
    throw err;
  }
}

export async function readJsonObject<T = Record<string, unknown>>(s3: S3Client, key: string): Promise<T | undefined> {
  const text = await readText(s3, key);
  return text === undefined ? undefined : (JSON.parse(text) as T);
}

export async function tagsOf(s3: S3Client, key: string): Promise<Record<string, string>> {
  const out = await s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: key }));
  return Object.fromEntries((out.TagSet ?? []).map((t) => [t.Key!, t.Value!]));
}

// ---------------------------------------------------------------------------
// The driver: the flow of lib/private/workflow.ts, in process.

/** Errors the state machine retries (lib/private/defaults.ts TRANSIENT_ERRORS). */
const RETRIED = new Set(['MapflowUnavailable', 'MapflowRateLimited', 'MapflowOutcomeUnknown']);

/** What Step Functions' Catch writes for a Lambda error. */
export function taskErrorOf(err: unknown): TaskError {
  const e = err as { name?: string; message?: string };
  const name = e?.name ?? 'Error';
  return { Error: name, Cause: JSON.stringify({ errorType: name, errorMessage: e?.message ?? String(err) }) };
}

const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value ?? null)) as T;

export interface TaskCall {
  state: string;
  error?: string;
}

export interface DriverOptions {
  /** Milliseconds slept per second of a Wait state (default 100: ten times faster than real). */
  msPerSecond?: number;
  retries?: number;
}

export class Driver {
  readonly calls: TaskCall[] = [];
  constructor(
    private readonly ctx: StepContext,
    private readonly options: DriverOptions = {},
  ) {}

  /** One Task: payload and result through JSON, transient errors retried like the state machine's Retry. */
  async task<S, R>(state: string, fn: (s: S, ctx: StepContext) => Promise<R>, payload: S): Promise<R> {
    const retries = this.options.retries ?? 3;
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await fn(roundTrip(payload), this.ctx);
        this.calls.push({ state });
        return roundTrip(result);
      } catch (err) {
        this.calls.push({ state, error: (err as Error).name });
        if (RETRIED.has((err as Error).name) && attempt < retries) continue;
        throw err;
      }
    }
  }

  async wait(seconds: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, Math.min(seconds, 5) * (this.options.msPerSecond ?? 100)));
  }

  /** Runs a whole job; returns the final state (Fail Job's or Finish Job's). */
  async runJob(start: ExecutionStart & { executionArn?: string }): Promise<WorkflowState> {
    const state: WorkflowState = { jobId: start.jobId, input: start.input };
    try {
      state.job = await this.task('Register Job', registerJob, { jobId: start.jobId, input: start.input, executionArn: start.executionArn ?? `arn:aws:states:local:0:execution:jobs:${start.jobId}` });
      if (state.job.alreadyFinal) return state;
      if (state.job.kind === 'geotiff') {
        state.image = await this.task('Inspect GeoTIFF', inspectGeotiff, state);
        state.mosaic = await this.task('Ensure Mosaic', ensureMosaic, state);
        state.upload = await this.task('Upload Image', uploadImage, state);
        if (!state.job.processImages) {
          state.finish = await this.task('Finish Job', finishJob, state);
          return state;
        }
      }
      state.plan = await this.task('Plan Processing', planProcessing, state);
      state.partOutcomes = await Promise.all(state.plan.parts.map((part) => this.runPart(state.job!, part)));
      state.finish = await this.task('Finish Job', finishJob, state);
      return state;
    } catch (err) {
      state.error = taskErrorOf(err);
      state.finish = await this.task('Fail Job', failJob, state);
      await this.task('Release Job Slots', releaseJobSlots, state);
      return state;
    }
  }

  /** One item of the Process Parts Map (ItemSelector {job: $.job, part}). */
  async runPart(job: RegisterResult, part: PlanPart): Promise<PartOutcome> {
    const state: PartState = { job, part };
    try {
      for (;;) {
        state.slot = await this.task('Acquire Slot', acquireSlot, state);
        if (state.slot.acquired) break;
        await this.wait(state.slot.waitSeconds);
      }
      state.processing = await this.task('Create Processing', createProcessing, state);
      for (;;) {
        state.poll = await this.task('Poll Processing', pollProcessing, state);
        const outcome = state.poll.outcome;
        if (outcome === 'WAIT') {
          await this.wait(state.poll.waitSeconds);
        } else if (outcome === 'RESTART') {
          state.restart = await this.task('Restart Processing', restartProcessing, state);
          await this.wait(state.poll.waitSeconds);
        } else if (outcome === 'OK') {
          state.results = await this.task('Store Results', storeResults, state);
          break;
        } else if (outcome === 'FAILED') {
          state.results = await this.task('Store Results', storeResults, state);
          break;
        } else if (outcome === 'TIMEOUT') {
          break;
        } else {
          throw new Error(`unknown outcome ${String(outcome)}`);
        }
      }
    } catch (err) {
      state.error = taskErrorOf(err);
    }
    return this.task('Finish Part', finishPart, state);
  }
}
