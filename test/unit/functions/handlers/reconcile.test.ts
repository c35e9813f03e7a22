import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { GetObjectTaggingCommand, PutObjectCommand, PutObjectTaggingCommand, S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, ExecutionDoesNotExist, ListExecutionsCommand, SFNClient } from '@aws-sdk/client-sfn';
import { executionArnFor, reconcile, stepFunctionsLiveness } from '../../../../functions/handlers/reconcile.ts';
import type { LocalEventRecord } from '../../../../functions/events/publisher.ts';
import { loadConfig } from '../../../../functions/runtime/config.ts';
import { createBridgeContext } from '../../../../functions/runtime/context.ts';
import { createLogger } from '../../../../functions/runtime/logger.ts';
import { useDynamoDbLocal } from '../../../support/dynamodb.ts';
import { testTmp } from '../../../support/temp.ts';

const ddb = useDynamoDbLocal();
const s3 = mockClient(S3Client);
const sfn = mockClient(SFNClient);
// The mocks patch the SDK clients' prototypes: put them back for the next file in this worker (vitest.config.ts, project 'shared').
afterAll(() => {
  s3.restore(); sfn.restore();
});
const STATE_MACHINE_ARN = 'arn:aws:states:eu-west-1:123456789012:stateMachine:bridge';
const arn = (name: string) => `arn:aws:states:eu-west-1:123456789012:execution:bridge:${name}`;

async function setup(env: Record<string, string> = {}) {
  const table = await ddb.createLedgerTable();
  const eventsFile = join(await mkdtemp(join(testTmp(), 'reconcile-')), 'events.jsonl');
  const config = loadConfig({ LEDGER_TABLE: table, BRIDGE_EVENTS_FILE: eventsFile, ...env });
  const ctx = createBridgeContext({
    config,
    logger: createLogger({ serviceName: 'reconcile-test', logLevel: 'SILENT' }),
    overrides: { doc: ddb.doc, s3: new S3Client({ region: 'us-east-1' }) },
  });
  const events = async () =>
    (await readFile(eventsFile, 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LocalEventRecord);
  return { ctx, events };
}

async function addJob(ctx: ReturnType<typeof createBridgeContext>, jobId: string, status: 'RECEIVED' | 'IN_PROGRESS' | 'SUCCEEDED', executionArn?: string) {
  await ctx.ledger.register({ jobId, input: { bucket: 'drop', key: `inbox/fields/${jobId}.geojson`, etag: 'e', size: 5 }, kind: 'geojson', routeName: 'default' });
  if (executionArn) await ctx.ledger.update(jobId, { executionArn });
  if (status !== 'RECEIVED') await ctx.ledger.transition(jobId, status);
}

describe('reconcile', () => {
  beforeEach(() => {
    s3.reset();
    sfn.reset();
    s3.on(PutObjectCommand).resolves({});
    s3.on(GetObjectTaggingCommand).resolves({ TagSet: [] });
    s3.on(PutObjectTaggingCommand).resolves({});
  });

  it('finishes a job whose execution died: FAILED, report, event, tag, slots freed', async () => {
    // Prepare
    const { ctx, events } = await setup();
    await addJob(ctx, 'lost-1', 'IN_PROGRESS', arn('lost-1'));
    await ctx.slots.acquire('lost-1#0', arn('lost-1'));
    await ctx.slots.acquire('lost-1#1', arn('lost-1'));
    // Act
    const summary = await reconcile(ctx, async () => false);
    // Assess
    expect(summary).toMatchObject({ checked: 1, lost: ['lost-1'], errors: [] });
    const row = await ctx.ledger.get('lost-1');
    expect(row).toMatchObject({ status: 'FAILED', error: { code: 'EXECUTION_LOST' }, reportKey: 'failed/fields/lost-1.geojson/report.json' });
    expect(row?.finalEventPending).toBeUndefined(); // the event and the tag are out: nothing owed
    const report = s3.commandCalls(PutObjectCommand)[0].args[0].input;
    expect(report).toMatchObject({ Bucket: 'drop', Key: 'failed/fields/lost-1.geojson/report.json' });
    expect(JSON.parse(String(report.Body))).toMatchObject({ jobId: 'lost-1', status: 'FAILED', code: 'EXECUTION_LOST', lastStatus: 'IN_PROGRESS', executionArn: arn('lost-1') });
    expect(await events()).toEqual([expect.objectContaining({ detailType: 'Job Failed', detail: expect.objectContaining({ jobId: 'lost-1', status: 'FAILED' }) })]);
    expect(s3.commandCalls(PutObjectTaggingCommand)[0].args[0].input.Tagging?.TagSet).toContainEqual({ Key: 'mapflow-bridge:status', Value: 'FAILED' });
    expect(await ctx.slots.holders()).toEqual([]);
  });

  it('leaves running jobs and finished jobs alone', async () => {
    // Prepare
    const { ctx, events } = await setup();
    await addJob(ctx, 'running', 'IN_PROGRESS', arn('running'));
    await addJob(ctx, 'done', 'SUCCEEDED', arn('done'));
    await ctx.slots.acquire('running#0', arn('running'));
    const asked: string[] = [];
    // Act
    const summary = await reconcile(ctx, async (executionArn) => {
      asked.push(executionArn);
      return executionArn === arn('running');
    });
    // Assess
    expect(summary).toMatchObject({ checked: 1, lost: [], reclaimedSlots: [] });
    expect(asked).toEqual([arn('running')]);
    expect((await ctx.ledger.get('running'))?.status).toBe('IN_PROGRESS');
    expect((await ctx.ledger.get('done'))?.status).toBe('SUCCEEDED');
    expect(await events()).toEqual([]);
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
  });

  it('gives a job with no known execution a grace period, then declares it lost', async () => {
    // Prepare
    const { ctx } = await setup();
    await addJob(ctx, 'orphan', 'RECEIVED');
    const inAnHour = () => new Date(Date.now() + 3600_000);
    // Act
    const early = await reconcile(ctx, async () => false, { graceSeconds: 900 });
    const late = await reconcile(ctx, async () => false, { graceSeconds: 900, now: inAnHour });
    // Assess
    expect(early.lost).toEqual([]);
    expect(late.lost).toEqual(['orphan']);
    expect((await ctx.ledger.get('orphan'))?.error?.message).toMatch(/No workflow execution was found/);
  });

  it('derives the execution ARN from STATE_MACHINE_ARN when the row has none', async () => {
    // Prepare
    const { ctx } = await setup({ STATE_MACHINE_ARN });
    await addJob(ctx, 'named-job', 'RECEIVED');
    const asked: string[] = [];
    // Act
    await reconcile(ctx, async (executionArn) => {
      asked.push(executionArn);
      return true;
    });
    // Assess
    expect(asked).toEqual([arn('named-job')]);
    expect(executionArnFor(STATE_MACHINE_ARN, 'x')).toBe(arn('x'));
  });

  it('reclaims slots held by dead executions even without a job row', async () => {
    // Prepare
    const { ctx } = await setup();
    await ctx.slots.acquire('ghost#0', arn('ghost'));
    await ctx.slots.acquire('alive#0', arn('alive'));
    // Act
    const summary = await reconcile(ctx, async (executionArn) => executionArn === arn('alive'));
    // Assess
    expect(summary.reclaimedSlots).toEqual(['ghost#0']);
    expect((await ctx.slots.holders()).map((h) => h.holder)).toEqual(['alive#0']);
  });

  it('keeps going when one job cannot be checked, and retries it next time', async () => {
    // Prepare
    const { ctx } = await setup();
    await addJob(ctx, 'flaky', 'IN_PROGRESS', arn('flaky'));
    await addJob(ctx, 'dead', 'IN_PROGRESS', arn('dead'));
    // Act
    const summary = await reconcile(ctx, async (executionArn) => {
      if (executionArn === arn('flaky')) throw new Error('throttled');
      return false;
    }).catch((error: unknown) => error);
    // Assess
    expect(summary).toMatchObject({ lost: ['dead'], errors: [{ jobId: 'flaky', message: 'throttled' }] });
    expect((await ctx.ledger.get('flaky'))?.status).toBe('IN_PROGRESS');
  });
});

describe('reconcile with a backlog', () => {
  beforeEach(() => {
    s3.reset();
    s3.on(PutObjectCommand).resolves({});
    s3.on(GetObjectTaggingCommand).resolves({ TagSet: [] });
    s3.on(PutObjectTaggingCommand).resolves({});
  });

  it('asks one by one only about the jobs missing from the list of running executions', async () => {
    // Prepare: 40 jobs in flight, two of whose executions have gone
    const { ctx } = await setup();
    const ids = Array.from({ length: 40 }, (_, i) => `job-${String(i).padStart(2, '0')}`);
    for (const id of ids) await addJob(ctx, id, 'IN_PROGRESS', arn(id));
    const gone = new Set(['job-07', 'job-31']);
    const asked: string[] = [];
    // Act
    const summary = await reconcile(ctx, {
      listRunning: async () => new Set(ids.filter((id) => !gone.has(id)).map(arn)),
      isAlive: async (executionArn) => {
        asked.push(executionArn);
        return false;
      },
    });
    // Assess
    expect(asked.sort()).toEqual([arn('job-07'), arn('job-31')]);
    expect(summary).toMatchObject({ checked: 40, lost: expect.arrayContaining(['job-07', 'job-31']), executionChecks: 2, listedRunning: 38, deferred: 0 });
    expect(summary.lost).toHaveLength(2);
  });

  it('spends at most maxExecutionChecks DescribeExecution calls a run and leaves the rest, untouched, for the next run', async () => {
    // Prepare: five jobs whose executions are gone, each holding a slot
    const { ctx } = await setup();
    const ids = ['d1', 'd2', 'd3', 'd4', 'd5'];
    for (const id of ids) {
      await addJob(ctx, id, 'IN_PROGRESS', arn(id));
      await ctx.slots.acquire(`${id}#0`, arn(id));
    }
    let asked = 0;
    const liveness = {
      isAlive: async () => {
        asked++;
        return false;
      },
    };
    // Act
    const first = await reconcile(ctx, liveness, { maxExecutionChecks: 2 });
    const askedInFirst = asked;
    const heldAfterFirst = (await ctx.slots.holders()).map((h) => h.holder).sort();
    const second = await reconcile(ctx, liveness, { maxExecutionChecks: 2 });
    const third = await reconcile(ctx, liveness, { maxExecutionChecks: 2 });
    // Assess
    expect(askedInFirst).toBe(2);
    expect(first).toMatchObject({ executionChecks: 2, deferred: 3, errors: [] });
    expect(first.lost).toHaveLength(2);
    // Slots of executions nobody asked about stay held: only the lost jobs' slots were freed.
    expect(heldAfterFirst).toEqual(ids.filter((id) => !first.lost.includes(id)).map((id) => `${id}#0`).sort());
    expect(second).toMatchObject({ executionChecks: 2, deferred: 1 });
    expect(third).toMatchObject({ executionChecks: 1, deferred: 0 });
    expect([...first.lost, ...second.lost, ...third.lost].sort()).toEqual(ids);
    expect(await ctx.slots.holders()).toEqual([]);
  });
});

describe('stepFunctionsLiveness', () => {
  beforeEach(() => sfn.reset());
  const ctx = { sfn: () => new SFNClient({ region: 'eu-west-1' }) };

  it('is alive while RUNNING or PENDING_REDRIVE, dead when closed or unknown', async () => {
    // Prepare
    sfn.on(DescribeExecutionCommand, { executionArn: arn('a') }).resolves({ status: 'RUNNING' });
    sfn.on(DescribeExecutionCommand, { executionArn: arn('b') }).resolves({ status: 'PENDING_REDRIVE' });
    sfn.on(DescribeExecutionCommand, { executionArn: arn('c') }).resolves({ status: 'ABORTED' });
    sfn.on(DescribeExecutionCommand, { executionArn: arn('d') }).rejects(new ExecutionDoesNotExist({ message: 'no', $metadata: {} }));
    const alive = stepFunctionsLiveness(ctx).isAlive;
    // Act
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((n) => alive(arn(n))));
    // Assess
    expect(results).toEqual([true, true, false, false]);
  });

  it('does not guess on other errors', async () => {
    // Prepare
    sfn.on(DescribeExecutionCommand).rejects(Object.assign(new Error('denied'), { name: 'AccessDeniedException' }));
    // Act
    const attempt = stepFunctionsLiveness(ctx).isAlive(arn('x'));
    // Assess
    await expect(attempt).rejects.toThrow('denied');
  });

  it('lists running executions a page of 1,000 at a time, filtered to RUNNING, on the state machine', async () => {
    // Prepare: two pages
    sfn.on(ListExecutionsCommand, { nextToken: undefined }).resolves({ executions: [{ executionArn: arn('a') } as never, { executionArn: arn('b') } as never], nextToken: 'page-2' });
    sfn.on(ListExecutionsCommand, { nextToken: 'page-2' }).resolves({ executions: [{ executionArn: arn('c') } as never] });
    const liveness = stepFunctionsLiveness(ctx, STATE_MACHINE_ARN);
    // Act
    const running = await liveness.listRunning?.();
    // Assess
    expect([...(running ?? [])]).toEqual([arn('a'), arn('b'), arn('c')]);
    const requests = sfn.commandCalls(ListExecutionsCommand).map((call) => call.args[0].input);
    expect(requests).toEqual([
      expect.objectContaining({ stateMachineArn: STATE_MACHINE_ARN, statusFilter: 'RUNNING', maxResults: 1000 }),
      expect.objectContaining({ stateMachineArn: STATE_MACHINE_ARN, statusFilter: 'RUNNING', maxResults: 1000, nextToken: 'page-2' }),
    ]);
  });

  it('has no listing without the state machine ARN', () => {
    expect(stepFunctionsLiveness(ctx).listRunning).toBeUndefined();
  });
});
