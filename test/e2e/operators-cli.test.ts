/**
 * The operator commands against a real local bridge: jobs retry / cancel (via
 * the control endpoint of the process that runs the bridge, as `npm start`
 * serves it), export, watch and costs; and the deployed (--stack) paths of
 * retry and cancel with CloudFormation and Step Functions mocked and the
 * ledger in DynamoDB Local.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { SFNClient, StartExecutionCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerRow } from '../../functions/core/model.ts';
import { bridgeContext } from '../../functions/runtime/context.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import type { LocalEvent } from '../../packages/local/src/events/file.ts';
import { runCostsCommand } from '../../packages/cli/src/costs.ts';
import { startControlServer, type ControlServer } from '../../packages/cli/src/control.ts';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { runJobsCommand } from '../../packages/cli/src/jobs.ts';
import { ENDPOINTS_FILE } from '../../packages/cli/src/start.ts';
import { runCli, squareAoi, startTestBridge, tempFile } from './helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

let stateDir: string;
let bridge: LocalBridge;
let control: ControlServer;
const events: LocalEvent[] = [];
const waiters: { match: (e: LocalEvent) => boolean; resolve: (e: LocalEvent) => void }[] = [];

function nextEvent(match: (e: LocalEvent) => boolean): Promise<LocalEvent> {
  const seen = events.find(match);
  if (seen) return Promise.resolve(seen);
  return new Promise((resolve) => waiters.push({ match, resolve }));
}

const jobs = (args: string[]) => runCli(runJobsCommand, [...args, '--state-dir', stateDir]);

async function drop(name: string, content: string): Promise<string> {
  const { jobId } = await bridge.putInbox(await tempFile(name, content), name);
  return jobId;
}

let succeeded: string;
let failed: string;
let rejected: string;

beforeAll(async () => {
  stateDir = await mkdtemp(path.join(testTmp(), 'mfb-operators-'));
  bridge = await startTestBridge({
    stateDir,
    ...(await sharedLedgerOptions('operators')),
    simulator: { processingSeconds: 6, seed: 7 },
    onEvent: (event) => {
      events.push(event);
      for (const waiter of waiters.splice(0)) {
        if (waiter.match(event)) waiter.resolve(event);
        else waiters.push(waiter);
      }
    },
  });
  // What `start` writes: the endpoints (for the ledger) and the control endpoint (for retry/cancel).
  await writeFile(path.join(stateDir, ENDPOINTS_FILE), JSON.stringify({ ...bridge.endpoints, ledgerTable: bridge.ledgerTable }));
  control = await startControlServer(bridge, stateDir);

  succeeded = await drop('fields.geojson', squareAoi());
  failed = await drop('will-fail.geojson', squareAoi({ west: 7.45, mapflow: { meta: { simulate: 'fail:dataloader.TileNotReadable' } } }));
  rejected = await drop('broken.geojson', '{"type": "FeatureCollection", "features": [');
  await Promise.all([succeeded, failed, rejected].map((id) => bridge.waitForJob(id, { timeoutMs: 240_000 })));
}, 300_000);

afterAll(async () => {
  await control?.close();
  await bridge?.close();
  await rm(stateDir, { recursive: true, force: true });
}, 120_000);

describe('jobs retry (local)', () => {
  it('refuses SUCCEEDED and REJECTED jobs with the reason', async () => {
    // Prepare: the jobs of beforeAll are final
    // Act
    const ok = await jobs(['retry', succeeded]);
    const bad = await jobs(['retry', rejected, '--json']);
    // Assess
    expect(ok.code).toBe(1);
    expect(ok.err).toContain('SUCCEEDED');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toMatchObject({ error: { code: 'NOT_RETRYABLE' } });
    expect(bad.err).toMatch(/REJECTED \(INVALID_GEOJSON|REJECTED \([A-Z_]+:/);
    expect((await bridge.ledger.get(succeeded))?.retriedBy).toBeUndefined();
  });

  it('runs a FAILED job again as <id>-r2, linked both ways, with a Job Received event', async () => {
    expect((await bridge.ledger.get(failed))?.status).toBe('FAILED');
    const { code, out } = await jobs(['retry', failed, '--json']);
    expect(code).toBe(0);
    const outcome = JSON.parse(out) as { jobId: string; retryOf: string; attempt: number };
    expect(outcome).toMatchObject({ jobId: `${failed}-r2`, retryOf: failed, attempt: 2 });

    const retried = await bridge.waitForJob(outcome.jobId, { timeoutMs: 120_000 });
    // The input still carries the simulated failure, so the second attempt fails the same way.
    expect(retried).toMatchObject({ status: 'FAILED', retryOf: failed, attempt: 2 });
    expect((await bridge.ledger.get(failed))?.retriedBy).toBe(outcome.jobId);
    await nextEvent((e) => e.detailType === 'Job Received' && e.detail.jobId === outcome.jobId);

    const again = await jobs(['retry', failed]);
    expect(again.code).toBe(1);
    expect(again.err).toContain(`already retried as ${outcome.jobId}`);
    const shown = await jobs(['show', outcome.jobId]);
    expect(shown.out).toContain(`retry of    ${failed} (attempt 2)`);
  }, 180_000);
});

describe('jobs retry of a job that failed after its processing finished', () => {
  it('takes the finished processing over: no second processing, no credits spent twice, SUCCEEDED', async () => {
    // Prepare: a job whose processing ran to OK, then recorded FAILED as a kill during Store Results leaves it
    const jobId = await drop('stored-late.geojson', squareAoi({ west: 7.47 }));
    const done = await bridge.waitForJob(jobId, { timeoutMs: 120_000 });
    const processingId = done?.parts?.[0]?.processingId;
    // (The ledger's own API only moves a job forward: the row is rewritten as such a run leaves it.)
    const doc = (bridge.ledger as unknown as { doc: DynamoDBDocumentClient }).doc;
    await doc.send(new UpdateCommand({
      TableName: bridge.ledgerTable,
      Key: { jobId },
      UpdateExpression: 'SET #status = :failed, #error = :error',
      ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
      ExpressionAttributeValues: { ':failed': 'FAILED', ':error': { code: 'RUNTIME_EXIT_ERROR', message: 'Store Results was killed' } },
    }));
    const createdBefore = bridge.simulator?.stats().processingsCreated;

    // Act
    const { code, out } = await jobs(['retry', jobId, '--json']);
    const retried = await bridge.waitForJob((JSON.parse(out) as { jobId: string }).jobId, { timeoutMs: 120_000 });

    // Assess
    expect(code).toBe(0);
    expect(processingId).toBeDefined();
    expect(retried).toMatchObject({ status: 'SUCCEEDED', retryOf: jobId });
    expect(retried?.parts?.[0]?.processingId).toBe(processingId);
    expect(bridge.simulator?.stats().processingsCreated).toBe(createdBefore);
  }, 240_000);
});

describe('jobs cancel (local)', () => {
  it('stops the execution, deletes the Mapflow processing, frees the slot, records CANCELLED and emits an event', async () => {
    // Prepare: a job that is being processed
    const jobId = await drop('to-cancel.geojson', squareAoi({ west: 7.46 }));
    const started = await nextEvent((e) => e.detail.jobId === jobId && e.detailType === 'Processing Started');
    const processingId = started.detail.processingIds?.[0];
    expect(processingId).toBeTruthy();
    // Act
    const { code, out } = await jobs(['cancel', jobId, '--reason', 'wrong area', '--json']);
    // Assess
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ jobId, status: 'CANCELLED', executionStopped: true, processingsDeleted: [processingId], processingsKept: [], processingErrors: [] });
    const row = await bridge.ledger.get(jobId);
    expect(row).toMatchObject({ status: 'CANCELLED', error: { code: 'CANCELLED', message: 'wrong area' } });
    expect(row?.statusHistory.at(-1)?.status).toBe('CANCELLED');
    expect(bridge.engine.describe(jobId)?.status).toBe('ABORTED');
    const cancelled = await nextEvent((e) => e.detail.jobId === jobId && e.detailType === 'Job Cancelled');
    expect(cancelled.detail.status).toBe('CANCELLED');
    const slots = await bridgeContext(process.env).slots.holders();
    expect(slots.filter((h) => h.holder.startsWith(jobId))).toEqual([]);
    const mapflow = await bridgeContext(process.env).mapflow();
    await expect(mapflow.getProcessing(processingId as string)).rejects.toMatchObject({ status: 404 });
    // A final job cannot be cancelled.
    const again = await jobs(['cancel', jobId]);
    expect(again.code).toBe(1);
    expect(again.err).toContain('already ended CANCELLED');
  }, 120_000);
});

describe('jobs export, watch and costs (local)', () => {
  it('exports every job as CSV and JSON lines, and nothing created after --since', async () => {
    const rows = (await bridge.ledger.listRecent({ limit: 100 })) as LedgerRow[];
    const csv = await jobs(['export']);
    expect(csv.code).toBe(0);
    const lines = csv.out.trimEnd().split('\r\n');
    expect(lines[0]).toMatch(/^jobId,status,kind,route,bucket,key,/);
    expect(lines).toHaveLength(rows.length + 1);
    expect(lines.find((l) => l.startsWith(`${succeeded},SUCCEEDED,geojson,default,`))).toBeDefined();
    const jsonl = await jobs(['export', '--format', 'jsonl']);
    const parsed = jsonl.out.trimEnd().split('\n').map((l) => JSON.parse(l) as LedgerRow);
    expect(parsed.map((r) => r.jobId).sort()).toEqual(rows.map((r) => r.jobId).sort());
    const none = await jobs(['export', '--since', '2999-01-01']);
    expect(none.out.trimEnd().split('\r\n')).toHaveLength(1);
    expect(none.err).toContain('0 job(s) exported');
  });

  it('watch --until-idle --json prints every job once and stops', async () => {
    await bridge.waitForJobs({ timeoutMs: 120_000 });
    const { code, out } = await jobs(['watch', '--until-idle', '--json', '--interval', '0.2']);
    expect(code).toBe(0);
    const lines = out.trimEnd().split('\n').map((l) => JSON.parse(l) as { jobId: string; status: string; change: string });
    const rows = await bridge.ledger.listRecent({ limit: 50 });
    expect(lines.map((l) => l.jobId).sort()).toEqual(rows.map((r) => r.jobId).sort());
    expect(lines.find((l) => l.jobId === succeeded)).toMatchObject({ status: 'SUCCEEDED', change: 'status' });
  }, 180_000);

  it('costs adds up what Mapflow charged, by route, day and model', async () => {
    const rows = await bridge.ledger.listRecent({ limit: 100 });
    const charged = rows.reduce((sum, r) => sum + (r.actualCost ?? 0), 0);
    expect(charged).toBeGreaterThan(0);
    const byRoute = await runCli(runCostsCommand, ['--by', 'route', '--json', '--state-dir', stateDir]);
    expect(byRoute.code).toBe(0);
    const report = JSON.parse(byRoute.out) as { total: { jobs: number; credits: number; succeeded: number }; lines: { key: string }[] };
    expect(report.total.jobs).toBe(rows.length);
    expect(report.total.credits).toBeCloseTo(charged, 2);
    expect(report.lines.map((l) => l.key)).toEqual(['default']);
    const byDay = await runCli(runCostsCommand, ['--state-dir', stateDir]);
    expect(byDay.out).toMatch(new RegExp(`^DAY\\s+JOBS\\s+SUCCEEDED\\s+FAILED\\s+REJECTED\\s+CANCELLED\\s+IN FLIGHT\\s+CREDITS CHARGED`));
    expect(byDay.out).toContain(new Date().toISOString().slice(0, 10));
    const byModel = await runCli(runCostsCommand, ['--by', 'model', '--json', '--state-dir', stateDir]);
    expect((JSON.parse(byModel.out) as { lines: { key: string }[] }).lines[0]?.key).toMatch(/Buildings/);
    const bad = await runCli(runCostsCommand, ['--by', 'week']);
    expect(bad.code).toBe(2);
  });
});

describe('jobs retry and cancel on a deployed stack (--stack)', () => {
  // Mocked only here: the local bridge's own Step Functions calls (slot admission) must stay real before.
  const mocks = () => ({ cfn: mockClient(CloudFormationClient), sfn: mockClient(SFNClient) });
  let cfn: ReturnType<typeof mocks>['cfn'];
  let sfn: ReturnType<typeof mocks>['sfn'];
  beforeAll(() => {
    ({ cfn, sfn } = mocks());
  });
  const stateMachineArn = 'arn:aws:states:us-east-1:123456789012:stateMachine:MapflowBridgeWorkflow';
  afterEach(() => {
    cfn.reset();
    sfn.reset();
  });
  afterAll(() => {
    cfn.restore();
    sfn.restore();
  });

  it('retries through StartExecution and cancels through StopExecution, the ledger read from the stack outputs', async () => {
    // Prepare: the "deployed" ledger is the local bridge's table
    cfn.on(DescribeStacksCommand, { StackName: 'MapflowBridge' }).resolves({
      Stacks: [{ StackName: 'MapflowBridge', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: [
        { OutputKey: 'LedgerTableName', OutputValue: bridge.ledgerTable },
        { OutputKey: 'StateMachineArn', OutputValue: stateMachineArn },
      ] }],
    });
    const retryId = `${failed}-r3`;
    sfn.on(StartExecutionCommand).resolves({ executionArn: `arn:aws:states:us-east-1:123456789012:execution:MapflowBridgeWorkflow:${retryId}`, startDate: new Date() });
    sfn.on(StopExecutionCommand).resolves({ stopDate: new Date() });
    const deployed = (args: string[]) => runCli(runJobsCommand, [...args, '--stack', 'MapflowBridge', '--region', 'us-east-1']);

    // Act: retry the second attempt (FAILED) of the job
    const retried = await deployed(['retry', `${failed}-r2`, '--json']);
    // Assess
    expect(retried.code).toBe(0);
    expect(JSON.parse(retried.out)).toMatchObject({ jobId: retryId, retryOf: `${failed}-r2`, attempt: 3 });
    const start = sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input;
    expect(start?.stateMachineArn).toBe(stateMachineArn);
    expect(start?.name).toBe(retryId);
    expect(JSON.parse(start?.input ?? '{}')).toMatchObject({ jobId: retryId, input: { key: 'inbox/will-fail.geojson' } });
    expect(await bridge.ledger.get(retryId)).toMatchObject({ status: 'RECEIVED', retryOf: `${failed}-r2`, attempt: 3 });

    // Act: cancel it (no execution runs it here: StopExecution is mocked)
    const cancelled = await deployed(['cancel', retryId]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.out).toContain(`Job ${retryId} CANCELLED: execution stopped`);
    const stop = sfn.commandCalls(StopExecutionCommand)[0]?.args[0].input;
    expect(stop?.executionArn).toBe(`arn:aws:states:us-east-1:123456789012:execution:MapflowBridgeWorkflow:${retryId}`);
    expect((await bridge.ledger.get(retryId))?.status).toBe('CANCELLED');
    await nextEvent((e) => e.detail.jobId === retryId && e.detailType === 'Job Cancelled');

    // --table alone cannot start or stop executions.
    const tableOnly = await runCli(runJobsCommand, ['retry', failed, '--table', bridge.ledgerTable]);
    expect(tableOnly.code).toBe(2);
    expect(tableOnly.err).toContain('needs --stack');
  }, 60_000);

  it('says the local bridge is not running when there is no control endpoint', async () => {
    const empty = await mkdtemp(path.join(testTmp(), 'mfb-operators-none-'));
    const { code, err } = await runCli(runJobsCommand, ['cancel', 'x-1', '--state-dir', empty]);
    expect(code).toBe(1);
    expect(err).toContain("the local bridge is not running");
    await rm(empty, { recursive: true, force: true });
    expect(JSON.parse(await readFile(path.join(stateDir, 'control.json'), 'utf8'))).toMatchObject({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
  });
});
