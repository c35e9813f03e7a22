/**
 * Issue 26, "operators' truth": the figures an operator reads (credits,
 * progress, outputs) never mislead. Against a real ledger (the run's DynamoDB
 * Local) with Mapflow faked where a call would reach it.
 */
import { access, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobPart, LedgerRow } from '../../functions/core/model.ts';
import { Ledger } from '../../functions/ledger/ledger.ts';
import { jobPercent } from '../../functions/core/progress.ts';
import { pollProcessing } from '../../functions/jobs/steps/poll-processing.ts';
import type { StepContext } from '../../functions/jobs/context.ts';
import type { PartState } from '../../functions/jobs/workflow.ts';
import { DEFAULT_POLL_POLICY } from '../../functions/polling/poll-policy.ts';
import { describeProgress } from '../../packages/cli/src/format.ts';
import { finaliseJob } from '../../functions/jobs/finalize.ts';
import { queuedNote } from '../../functions/jobs/common.ts';
import { jobErrorFromTaskError } from '../../functions/jobs/outcome.ts';
import { DEFAULT_PREFIXES } from '../../functions/routing/index.ts';
import { watchJobs } from '../../packages/cli/src/watch.ts';
import { CONTROL_FILE } from '../../packages/cli/src/control.ts';
import { createServer as createHttpServer } from 'node:http';
import { runCostsCommand } from '../../packages/cli/src/costs.ts';
import { runJobsCommand } from '../../packages/cli/src/jobs.ts';
import { cancelJob, type OperatorBackend } from '../../packages/cli/src/operations.ts';
import { ENDPOINTS_FILE } from '../../packages/cli/src/start.ts';
import { copyJobOutputs, OutputConflict } from '../../packages/cli/src/outputs.ts';
import { startConsoleServer } from '../../packages/cli/src/console/server.ts';
import { startConsoleOnPort } from '../../packages/cli/src/console/command.ts';
import { DEFAULT_CONSOLE_PORT, MAPFLOW_ACCESS_FILE, readMapflowAccess, recordSimulatorAccess } from '../../packages/cli/src/state-dir.ts';
import { START_USAGE } from '../../packages/cli/src/start.ts';
import { createServer, type Server } from 'node:net';
import { useDynamoDbLocal } from '../support/dynamodb.ts';
import { CredentialStore } from '../../packages/local/src/auth/credentials.ts';
import { testTmp } from '../support/temp.ts';
import { runCli } from './helpers.ts';

const dynamodb = useDynamoDbLocal();
let ledger: Ledger;
let stateDir: string;

beforeAll(async () => {
  const table = await dynamodb.createLedgerTable();
  ledger = new Ledger(dynamodb.doc, table);
  stateDir = await mkdtemp(path.join(testTmp(), 'mfb-truth-'));
  // What a running `start` writes: the CLI reads the ledger through it.
  await writeFile(path.join(stateDir, ENDPOINTS_FILE), JSON.stringify({ dynamodb: dynamodb.endpoint, ledgerTable: table }));
  await CredentialStore.open(stateDir); // the credentials.json a running `start` issued
}, 120_000);
afterAll(async () => {
  await rm(stateDir, { recursive: true, force: true });
});

/** Runs a CLI command in process on this file's state folder and captures what it prints. */
const cli = (run: (args: string[]) => Promise<number>, args: string[]) => runCli(run, [...args, '--state-dir', stateDir]);

/** A split job of `total` parts in flight: `done` parts finished OK (results stored), one more running. */
async function splitJobInFlight(jobId: string, done: number, total = 97): Promise<void> {
  await ledger.register({ jobId, input: { bucket: 'b', key: `inbox/${jobId}.geojson`, etag: 'e', size: 1 }, kind: 'geojson', routeName: 'default' });
  await ledger.transition(jobId, 'IN_PROGRESS', { estimatedCost: 1117, partCount: total });
  for (let index = 0; index < done; index++) {
    await ledger.upsertPart(jobId, { index, name: `f${index}`, processingId: `${jobId}-p${index}`, status: 'OK', percentCompleted: 100, cost: 5, resultKey: `results/${jobId}/f${index}/result.geojson` });
  }
  await ledger.upsertPart(jobId, { index: done, name: `f${done}`, processingId: `${jobId}-p${done}`, status: 'IN_PROGRESS', percentCompleted: 40, cost: 5 });
}

function fakeBackend(): OperatorBackend & { deleted: string[] } {
  const deleted: string[] = [];
  return {
    deleted,
    ledger,
    releaseSlots: async () => {},
    publish: async () => {},
    startExecution: async () => ({}),
    stopExecution: async () => true,
    mapflow: async () => ({ deleteProcessing: async (id: string) => void deleted.push(id) }),
    resultPrefixOf: (key) => `results/${key.replace(/^inbox\//, '')}/`,
    now: () => new Date(),
  };
}

describe('1. credits charged are counted whatever the end', () => {
  it('a cancel keeps finished parts (processings and results) and records what they were charged', async () => {
    // Prepare: 9 of 97 parts finished at 5 credits each, a tenth running (charged at its start)
    await splitJobInFlight('split-cancel', 9);
    const backend = fakeBackend();
    // Act
    const outcome = await cancelJob(backend, 'split-cancel', { reason: 'wrong area' });
    // Assess: only the running processing is deleted; the charge is on the row
    expect(outcome.processingsDeleted).toEqual(['split-cancel-p9']);
    expect(outcome.processingsKept).toHaveLength(9);
    expect(backend.deleted).toEqual(['split-cancel-p9']);
    expect(outcome.creditsCharged).toBe(50);
    const row = (await ledger.get('split-cancel')) as LedgerRow;
    expect(row).toMatchObject({ status: 'CANCELLED', actualCost: 50, resultPrefix: 'results/split-cancel.geojson/' });
  });

  it('--delete-finished deletes the finished processings too', async () => {
    await splitJobInFlight('split-delete', 2, 5);
    const backend = fakeBackend();
    const outcome = await cancelJob(backend, 'split-delete', { deleteFinished: true });
    expect(outcome.processingsKept).toEqual([]);
    expect(backend.deleted.sort()).toEqual(['split-delete-p0', 'split-delete-p1', 'split-delete-p2']);
    expect((await ledger.get('split-delete'))?.actualCost).toBe(15);
  });

  it('jobs list/show, costs and the console show the charge, never the estimate, for a job cancelled part-way', async () => {
    // Prepare: a job cancelled part-way whose row has no actualCost (as the old cancel left it)
    await splitJobInFlight('old-cancel', 9);
    await ledger.transition('old-cancel', 'CANCELLED', { error: { code: 'CANCELLED', message: 'x' } });
    // Act
    const list = await cli(runJobsCommand, ['list']);
    const show = await cli(runJobsCommand, ['show', 'old-cancel']);
    const costs = await cli(runCostsCommand, ['--json']);
    const console_ = await startConsoleServer({ ledger, description: 'test' });
    const jobs = (await (await fetch(`${console_.url}api/jobs`)).json()) as { jobs: { jobId: string; cost: number; costIsEstimate: boolean }[] };
    await console_.close();
    // Assess
    expect(list.out).toMatch(/old-cancel\s.*CANCELLED\s.*50 credits(?! \(est)/);
    expect(show.out).toMatch(/cost\s+charged 50 credits.*estimated 1117 credits/);
    expect(show.out).toContain('part 0      f0: OK old-cancel-p0 5 credits');
    const report = JSON.parse(costs.out) as { total: { credits: number; cancelled: number; jobs: number; succeeded: number; failed: number; rejected: number; inFlight: number } };
    // split-cancel 50 + split-delete 15 + old-cancel 50
    expect(report.total.credits).toBe(115);
    expect(report.total.cancelled).toBe(3);
    const t = report.total;
    expect(t.succeeded + t.failed + t.rejected + t.cancelled + t.inFlight).toBe(t.jobs);
    expect(jobs.jobs.find((j) => j.jobId === 'old-cancel')).toMatchObject({ cost: 50, costIsEstimate: false });
  });

  it('a job REJECTED or FAILED after a spend counts what its parts were charged', async () => {
    const parts: JobPart[] = [{ index: 0, name: 'a', processingId: 'p-a', status: 'FAILED', cost: 7 }];
    for (const [jobId, status] of [['spent-rejected', 'REJECTED'], ['spent-failed', 'FAILED']] as const) {
      await ledger.register({ jobId, input: { bucket: 'b', key: `inbox/${jobId}.geojson`, etag: 'e', size: 1 }, kind: 'geojson', routeName: 'default', estimatedCost: 99, parts });
      await ledger.transition(jobId, status, {});
    }
    const costs = await cli(runCostsCommand, ['--json']);
    const report = JSON.parse(costs.out) as { total: { credits: number; rejected: number } };
    expect(report.total.credits).toBe(115 + 14);
    expect(report.total.rejected).toBe(1);
    const shown = await cli(runJobsCommand, ['show', 'spent-rejected']);
    expect(shown.out).toMatch(/cost\s+charged 7 credits/);
  });
});

/** A bucket in memory, answering the two calls copyJobOutputs makes. */
function fakeS3(objects: Record<string, string>): S3Client {
  return {
    send: async (command: { constructor: { name: string }; input: { Prefix?: string; Key?: string } }) => {
      if (command.constructor.name === 'ListObjectsV2Command') {
        return { Contents: Object.keys(objects).filter((k) => k.startsWith(command.input.Prefix ?? '')).map((Key) => ({ Key })) };
      }
      const body = objects[command.input.Key ?? ''];
      if (body === undefined) throw Object.assign(new Error('no such key'), { name: 'NoSuchKey' });
      return { Body: Readable.from([Buffer.from(body)]) };
    },
  } as unknown as S3Client;
}

function finalRow(jobId: string, createdAt: string): LedgerRow {
  return {
    jobId,
    input: { bucket: 'b', key: 'inbox/bern-quarters.geojson', etag: 'e', size: 1 },
    kind: 'geojson',
    routeName: 'default',
    status: 'SUCCEEDED',
    statusHistory: [],
    resultPrefix: 'results/bern-quarters.geojson/',
    createdAt,
    updatedAt: createdAt,
    entity: 'JOB',
  };
}

describe('2. outputs of different jobs never overwrite each other', () => {
  const key = 'results/bern-quarters.geojson/bern/job.json';

  it('a job of npm start and a local run of the same file land in folders of their own', async () => {
    // Prepare: two jobs (two ledgers) of the same input path
    const out = await mkdtemp(path.join(testTmp(), 'mfb-out-'));
    // Act
    const started = await copyJobOutputs(fakeS3({ [key]: '{"from":"start"}' }), 'b', finalRow('bern-quarters-aaa', '2026-11-26T09:00:00.000Z'), out);
    const ran = await copyJobOutputs(fakeS3({ [key]: '{"from":"run"}' }), 'b', finalRow('bern-quarters-bbb', '2026-11-26T10:00:00.000Z'), out, { persistent: false });
    // Assess
    expect(started.results).toEqual([path.join(out, 'bern-quarters-aaa', 'results', 'bern-quarters.geojson', 'bern', 'job.json')]);
    expect(ran.results[0]).not.toBe(started.results[0]);
    expect(await readFile(started.results[0] as string, 'utf8')).toBe('{"from":"start"}');
    expect(await readFile(ran.results[0] as string, 'utf8')).toBe('{"from":"run"}');
    await rm(out, { recursive: true, force: true });
  });

  it('the same job id from another ledger is refused, naming --overwrite, unless asked', async () => {
    // Prepare: npm start's copy of job X (its row still points there)
    const out = await mkdtemp(path.join(testTmp(), 'mfb-out-'));
    const [shown] = (await copyJobOutputs(fakeS3({ [key]: 'start' }), 'b', finalRow('same-id', '2026-11-26T09:00:00.000Z'), out)).results;
    // Act: a local run of the same bytes (same id, another ledger)
    const refused = copyJobOutputs(fakeS3({ [key]: 'run' }), 'b', finalRow('same-id', '2026-11-26T10:00:00.000Z'), out, { persistent: false });
    // Assess
    await expect(refused).rejects.toBeInstanceOf(OutputConflict);
    await expect(refused).rejects.toThrow(/--overwrite/);
    expect(await readFile(shown as string, 'utf8')).toBe('start');
    // The same run again (a copy of missing results at start-up) is not a conflict.
    await copyJobOutputs(fakeS3({ [key]: 'start' }), 'b', finalRow('same-id', '2026-11-26T09:00:00.000Z'), out);
    // A local run's copy may be replaced by the next local run; --overwrite replaces npm start's.
    await copyJobOutputs(fakeS3({ [key]: 'run' }), 'b', finalRow('same-id', '2026-11-26T10:00:00.000Z'), out, { persistent: false, overwrite: true });
    expect(await readFile(shown as string, 'utf8')).toBe('run');
    await copyJobOutputs(fakeS3({ [key]: 'run 2' }), 'b', finalRow('same-id', '2026-11-26T11:00:00.000Z'), out, { persistent: false });
    expect(await readFile(shown as string, 'utf8')).toBe('run 2');
    await rm(out, { recursive: true, force: true });
  });
});

describe('3. progress of a split job never goes backwards and says what it is', () => {
  /** Poll Processing of part `index` of a job, Mapflow answering IN_PROGRESS at `percent`. */
  async function poll(jobId: string, index: number, percent: number): Promise<{ messages: string[] }> {
    const published: { messages?: string[] }[] = [];
    const row = (await ledger.get(jobId)) as LedgerRow;
    const ctx = {
      ledger,
      config: { pollPolicy: DEFAULT_POLL_POLICY },
      now: () => new Date(),
      random: () => 0.5,
      slots: { release: async () => {} },
      events: { publish: async (_type: string, detail: { messages?: string[] }) => void published.push(detail) },
      logger: { info() {}, warn() {}, error() {}, debug() {} },
      mapflow: async () => ({
        getProcessing: async (id: string) => ({ id, status: 'IN_PROGRESS', percentCompleted: percent }),
        getProcessingAois: async () => [],
      }),
    } as unknown as StepContext;
    const state = {
      job: { jobId, input: row.input, kind: row.kind, routeName: row.routeName, createdAt: row.createdAt },
      part: { index, name: `f${index}` },
      processing: { processingId: `${jobId}-p${index}`, startedAt: row.createdAt },
      // Mapflow's status was UNPROCESSED at the last look: this poll sees it start (a Processing Started event).
      poll: { outcome: 'WAIT', status: 'UNPROCESSED', polls: 1, percentCompleted: 0, restarts: 0, waitSeconds: 1 },
    } as unknown as PartState;
    await pollProcessing(state, ctx);
    return { messages: published.flatMap((d) => d.messages ?? []) };
  }

  it('counts the parts not started yet as 0 %: 9 of 97 parts done is 9 %, not 94 %', async () => {
    // Prepare: 9 parts finished, the tenth running; 87 not started
    await splitJobInFlight('split-progress', 9);
    // Act: the tenth part is polled at 40 %
    const { messages } = await poll('split-progress', 9, 40);
    // Assess
    const row = (await ledger.get('split-progress')) as LedgerRow;
    expect(row.percentCompleted).toBe(9);
    expect(describeProgress(row)).toBe('9% of job, 9 of 97 parts done');
    // The event's message gives the part's own percent, labelled as the part's.
    expect(messages.join(' ')).toMatch(/part 10 of 97 'f9' .* at 40% \(part\)/);
    expect(jobPercent([{ percentCompleted: 100 }, { percentCompleted: 100 }], 97)).toBe(2);
  });

  it('never lowers the job percent (a restarted part, or parts polled out of order)', async () => {
    // Prepare: the job was already at 60 %
    await splitJobInFlight('split-monotonic', 1, 2);
    await ledger.update('split-monotonic', { percentCompleted: 60 });
    // Act: a part restarted at 5 % would make the mean lower
    await poll('split-monotonic', 1, 5);
    // Assess
    expect((await ledger.get('split-monotonic'))?.percentCompleted).toBe(60);
    await poll('split-monotonic', 1, 80);
    expect((await ledger.get('split-monotonic'))?.percentCompleted).toBe(90);
  });
});

describe('5. the console has a stable address', () => {
  it('defaults to a fixed port, and falls back to a free one with the S3 message only when not given', async () => {
    // Prepare: the port held by another program
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    const messages: string[] = [];
    const start = (port: number) => startConsoleServer({ ledger, description: 'test', port });
    try {
      // Act
      const strict = await startConsoleOnPort(start, taken, false, (m) => messages.push(m)).then(() => undefined, (error: unknown) => error);
      const fallback = await startConsoleOnPort(start, taken, true, (m) => messages.push(m));
      const port = Number(new URL(fallback.url).port);
      const answer = await fetch(`${fallback.url}api/info`);
      await fallback.close();
      // Assess
      expect(DEFAULT_CONSOLE_PORT).toBeGreaterThan(1024);
      expect(START_USAGE).toContain(`--console-port <port>       its port (default ${DEFAULT_CONSOLE_PORT}`);
      expect((strict as Error).message).toContain('--console-port');
      expect(port).not.toBe(taken);
      expect(answer.status).toBe(200);
      expect(messages).toEqual([`local bridge: port ${taken} is taken by another program, so the console listens on port ${port} this time (--console-port chooses one).`]);
    } finally {
      blocker.close();
    }
  });
});

describe('7. small frictions', () => {
  it('jobs show takes a unique prefix of the id or the file name, and says "did you mean" otherwise', async () => {
    // Prepare: the jobs of the tests above (split-cancel, split-delete, old-cancel, spent-rejected, ...)
    // Act
    const byPrefix = await cli(runJobsCommand, ['show', 'old-c']);
    const byFile = await cli(runJobsCommand, ['show', 'spent-rejected.geojson']);
    const ambiguous = await cli(runJobsCommand, ['show', 'split-']);
    const unknown = await cli(runJobsCommand, ['show', 'cancel']);
    // Assess
    expect(byPrefix.code).toBe(0);
    expect(byPrefix.out).toMatch(/^job\s+old-cancel$/m);
    expect(byFile.out).toMatch(/^job\s+spent-rejected$/m);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.err).toMatch(/'split-' matches \d+ jobs; did you mean split-/);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no job 'cancel' in .*; did you mean (split-cancel|old-cancel)/);
  });

  it('jobs retry and cancel resolve a prefix before they ask the running bridge', async () => {
    // Prepare: a control endpoint that records what it is asked (the running start's, faked)
    const asked: string[] = [];
    const server = createHttpServer((request, response) => {
      asked.push(request.url ?? '');
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ result: { jobId: 'split-progress', status: 'CANCELLED', executionStopped: true, processingsDeleted: [], processingsKept: [], processingErrors: [] } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    await writeFile(path.join(stateDir, CONTROL_FILE), JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, token: 't' }), { mode: 0o600 });
    try {
      // Act
      const cancelled = await cli(runJobsCommand, ['cancel', 'split-prog']);
      // Assess
      expect(cancelled.code, cancelled.err).toBe(0);
      expect(asked).toEqual(['/jobs/split-progress/cancel']);
    } finally {
      server.close();
      await rm(path.join(stateDir, CONTROL_FILE), { force: true });
    }
  });

  it('the FAILED line names the real job id in its jobs retry hint', async () => {
    // Prepare
    await ledger.register({ jobId: 'fail-hint', input: { bucket: 'b', key: 'inbox/fail-hint.geojson', etag: 'e', size: 1 }, kind: 'geojson', routeName: 'default' });
    const { error } = jobErrorFromTaskError({ Error: 'MapflowUnavailable', Cause: JSON.stringify({ errorType: 'MapflowUnavailable', errorMessage: 'down' }) });
    const ctx = {
      ledger,
      config: { prefixes: DEFAULT_PREFIXES },
      s3: { send: async () => ({}) },
      events: { publish: async () => {} },
      logger: { info() {}, warn() {}, error() {}, debug() {} },
      now: () => new Date(),
    } as unknown as StepContext;
    // Act
    await finaliseJob(ctx, { jobId: 'fail-hint', input: { bucket: 'b', key: 'inbox/fail-hint.geojson', etag: 'e', size: 1 }, status: 'FAILED', error });
    // Assess
    const row = (await ledger.get('fail-hint')) as LedgerRow;
    expect(row.error?.message).toContain('mapflow-bridge jobs retry fail-hint`');
    expect(row.error?.message).not.toContain('<jobId>');
  });

  it('a QUEUED line never says "(0 in use)"', () => {
    expect(queuedNote(0, 3)).not.toMatch(/\b0 in use/);
    expect(queuedNote(0, 3)).toContain('queued earlier');
    expect(queuedNote(3, 3)).toBe('waiting for a processing slot (3 of 3 in use)');
  });

  it('jobs watch prints its opening backlog in time order, with the time on every line', async () => {
    // Prepare: listRecent's order (newest created first) is not the order things happened in
    const row = (jobId: string, createdAt: string, updatedAt: string, status: LedgerRow['status'], percentCompleted?: number): LedgerRow => ({
      ...finalRow(jobId, createdAt),
      status,
      updatedAt,
      ...(percentCompleted !== undefined && { percentCompleted }),
    });
    const polls = [
      [row('b', '2026-11-26T10:00:02Z', '2026-11-26T10:00:03Z', 'IN_PROGRESS', 10), row('a', '2026-11-26T10:00:01Z', '2026-11-26T10:00:09Z', 'FAILED')],
      [row('b', '2026-11-26T10:00:02Z', '2026-11-26T10:00:12Z', 'IN_PROGRESS', 50), row('a', '2026-11-26T10:00:01Z', '2026-11-26T10:00:09Z', 'FAILED')],
      [row('b', '2026-11-26T10:00:02Z', '2026-11-26T10:00:15Z', 'SUCCEEDED', 100), row('a', '2026-11-26T10:00:01Z', '2026-11-26T10:00:09Z', 'FAILED')],
    ];
    let poll = 0;
    const lines: string[] = [];
    // Act
    await watchJobs({ listRecent: async () => polls[Math.min(poll++, polls.length - 1)] as LedgerRow[] }, { intervalMs: 0, limit: 50, json: false, untilIdle: true, say: (l) => lines.push(l) });
    // Assess
    expect(lines[0]).toMatch(/^10:00:03 .*IN_PROGRESS/);
    expect(lines[1]).toMatch(/^10:00:09 .*FAILED/);
    expect(lines[2]).toMatch(/^10:00:12 .*\[#+-*\]/);
    expect(lines.every((l) => /^\d\d:\d\d:\d\d /.test(l))).toBe(true);
  });
});

describe('4. start leaves doctor the simulator token, and only that', () => {
  it('writes the embedded simulator\'s URL and token readable by this user only; nothing for a given Mapflow', async () => {
    // Prepare
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-access-'));
    const env = { MAPFLOW_TOKEN: 'sim-token-0123456789abcdef', MAPFLOW_EMAIL: 'local@example.com' };
    // Act
    const written = await recordSimulatorAccess(dir, { simulator: {}, endpoints: { mapflow: 'http://127.0.0.1:1234/rest' } }, env);
    const given = await recordSimulatorAccess(path.join(dir, 'given'), { endpoints: { mapflow: 'https://api.mapflow.ai/rest' } }, env);
    // Assess
    expect(written).toBe(path.join(dir, MAPFLOW_ACCESS_FILE));
    expect((await stat(written as string)).mode & 0o777).toBe(0o600);
    expect(await readMapflowAccess(dir)).toEqual({ url: 'http://127.0.0.1:1234/rest', token: env.MAPFLOW_TOKEN, email: env.MAPFLOW_EMAIL, pid: process.pid });
    expect(given).toBeUndefined();
    await expect(access(path.join(dir, 'given', MAPFLOW_ACCESS_FILE))).rejects.toThrow();
    await rm(dir, { recursive: true, force: true });
  });
});
