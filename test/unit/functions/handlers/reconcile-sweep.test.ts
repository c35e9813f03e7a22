/**
 * The reconciler's inbox sweep on AWS (issue 24, point 1): an inbox object
 * older than 5 minutes without a ledger row is started as dispatch would
 * (execution name = job id, the same input), a younger one is left to its
 * notification, one with a row is left alone; a failing sweep is reported,
 * not thrown (the settling already done stands). An object whose execution
 * closed before Register Job wrote its row (its name taken for 90 days:
 * ExecutionAlreadyExists for ever) is ended FAILED EXECUTION_ENDED_UNREGISTERED,
 * once (issue 37 point 4); one whose execution still runs is left alone.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { GetObjectTaggingCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand, ExecutionAlreadyExists } from '@aws-sdk/client-sfn';
import { EXECUTION_ENDED_UNREGISTERED, INBOX_SWEEP_MIN_AGE_SECONDS, sweepInboxOnSchedule } from '../../../../functions/handlers/reconcile.ts';
import type { LocalEventRecord } from '../../../../functions/events/publisher.ts';
import { testTmp } from '../../../support/temp.ts';
import { jobIdFor } from '../../../../functions/routing/index.ts';
import { loadConfig } from '../../../../functions/runtime/config.ts';
import { createBridgeContext } from '../../../../functions/runtime/context.ts';
import { createLogger } from '../../../../functions/runtime/logger.ts';
import { useDynamoDbLocal } from '../../../support/dynamodb.ts';

const ddb = useDynamoDbLocal();
const s3 = mockClient(S3Client);
const sfn = mockClient(SFNClient);
afterAll(() => {
  s3.restore();
  sfn.restore();
});
const STATE_MACHINE_ARN = 'arn:aws:states:eu-west-1:123456789012:stateMachine:bridge';

async function setup(eventsFile = '/dev/null') {
  const table = await ddb.createLedgerTable();
  const config = loadConfig({ LEDGER_TABLE: table, STATE_MACHINE_ARN, BRIDGE_EVENTS_FILE: eventsFile });
  return createBridgeContext({
    config,
    logger: createLogger({ serviceName: 'reconcile-sweep-test', logLevel: 'SILENT' }),
    overrides: { doc: ddb.doc, s3: new S3Client({ region: 'us-east-1' }) },
  });
}

describe('reconciler inbox sweep', () => {
  beforeEach(() => {
    s3.reset();
    sfn.reset();
    s3.on(GetObjectTaggingCommand).resolves({ TagSet: [] });
  });

  it('starts an old object without a row as dispatch would, and leaves a young one and one with a row', async () => {
    // Prepare
    const ctx = await setup();
    const old = new Date(Date.now() - (INBOX_SWEEP_MIN_AGE_SECONDS + 60) * 1000);
    s3.on(ListObjectsV2Command).resolves({
      IsTruncated: false,
      Contents: [
        { Key: 'inbox/lost.geojson', ETag: '"aaaa"', Size: 10, LastModified: old },
        { Key: 'inbox/done.geojson', ETag: '"bbbb"', Size: 11, LastModified: old },
        { Key: 'inbox/new.geojson', ETag: '"cccc"', Size: 12, LastModified: new Date() },
      ],
    });
    const done = { bucket: 'drop', key: 'inbox/done.geojson', etag: 'bbbb', size: 11 };
    await ctx.ledger.register({ jobId: jobIdFor(done), input: done, kind: 'geojson', routeName: 'default' });
    sfn.on(StartExecutionCommand).resolves({ executionArn: 'arn' });

    // Act
    const summary = await sweepInboxOnSchedule(ctx, 'drop');

    // Assess
    const lost = { bucket: 'drop', key: 'inbox/lost.geojson', etag: 'aaaa', size: 10 };
    expect(summary).toMatchObject({ listed: 3, dispatched: ['inbox/lost.geojson'], tooYoung: 1, complete: true });
    const starts = sfn.commandCalls(StartExecutionCommand).map((call) => call.args[0].input);
    expect(starts).toEqual([{ stateMachineArn: STATE_MACHINE_ARN, name: jobIdFor(lost), input: JSON.stringify({ jobId: jobIdFor(lost), input: lost }) }]);
    expect(s3.commandCalls(ListObjectsV2Command)[0]!.args[0].input).toMatchObject({ Bucket: 'drop', Prefix: 'inbox/' });
  });

  it('takes an execution that already exists (a late notification) as the same job, and reports a failing listing', async () => {
    // Prepare
    const ctx = await setup();
    const old = new Date(Date.now() - 3_600_000);
    s3.on(ListObjectsV2Command).resolvesOnce({ IsTruncated: false, Contents: [{ Key: 'inbox/late.geojson', ETag: '"dddd"', Size: 5, LastModified: old }] }).rejects(new Error('AccessDenied'));
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));

    // Act
    const first = await sweepInboxOnSchedule(ctx, 'drop');
    const second = await sweepInboxOnSchedule(ctx, 'drop');

    // Assess
    expect(first).toMatchObject({ dispatched: ['inbox/late.geojson'], complete: true });
    expect(first.error).toBeUndefined();
    expect(second).toMatchObject({ dispatched: [], complete: false, error: 'AccessDenied' });
  });

  it.each(['ABORTED', 'TIMED_OUT', 'FAILED'])('ends FAILED, once, an object whose execution closed %s before Register Job wrote its row', async (closed) => {
    // Prepare: the execution of lost.geojson's job exists (ExecutionAlreadyExists) and is closed
    const eventsFile = join(await mkdtemp(join(testTmp(), 'reconcile-sweep-')), 'events.jsonl');
    const ctx = await setup(eventsFile);
    const old = new Date(Date.now() - 3_600_000);
    s3.on(ListObjectsV2Command).resolves({ IsTruncated: false, Contents: [{ Key: 'inbox/lost.geojson', ETag: '"eeee"', Size: 7, LastModified: old }] });
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));
    sfn.on(DescribeExecutionCommand).resolves({ status: closed as 'ABORTED' });
    const lost = { bucket: 'drop', key: 'inbox/lost.geojson', etag: 'eeee', size: 7 };
    const jobId = jobIdFor(lost);

    // Act
    const first = await sweepInboxOnSchedule(ctx, 'drop');
    const second = await sweepInboxOnSchedule(ctx, 'drop');

    // Assess: the row is FAILED with the code and a retry hint naming the job, the event is out, the report written
    expect(first).toMatchObject({ dispatched: ['inbox/lost.geojson'], endedUnregistered: [jobId] });
    expect(sfn.commandCalls(DescribeExecutionCommand)[0]!.args[0].input).toEqual({ executionArn: `arn:aws:states:eu-west-1:123456789012:execution:bridge:${jobId}` });
    const row = await ctx.ledger.get(jobId);
    expect(row).toMatchObject({ status: 'FAILED', input: lost, error: { code: EXECUTION_ENDED_UNREGISTERED } });
    expect(row?.error?.message).toContain(`mapflow-bridge jobs retry ${jobId}`);
    expect(row?.finalEventPending).toBeFalsy();
    const events = (await readFile(eventsFile, 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as LocalEventRecord);
    expect(events).toEqual([expect.objectContaining({ detailType: 'Job Failed', detail: expect.objectContaining({ jobId, status: 'FAILED' }) })]);
    expect(s3.commandCalls(PutObjectCommand).map((call) => call.args[0].input.Key)).toEqual(['failed/lost.geojson/report.json']);
    // ...and the next run finds a row: nothing started, described or published again
    expect(second).toMatchObject({ dispatched: [], endedUnregistered: [] });
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(1);
    expect(sfn.commandCalls(DescribeExecutionCommand)).toHaveLength(1);
  });

  it('leaves an object whose execution still runs without a row (Register Job may still write it)', async () => {
    // Prepare
    const ctx = await setup();
    s3.on(ListObjectsV2Command).resolves({ IsTruncated: false, Contents: [{ Key: 'inbox/slow.geojson', ETag: '"ffff"', Size: 8, LastModified: new Date(Date.now() - 3_600_000) }] });
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));
    sfn.on(DescribeExecutionCommand).resolves({ status: 'RUNNING' });

    // Act
    const summary = await sweepInboxOnSchedule(ctx, 'drop');

    // Assess
    expect(summary).toMatchObject({ dispatched: ['inbox/slow.geojson'], endedUnregistered: [] });
    expect(await ctx.ledger.get(jobIdFor({ bucket: 'drop', key: 'inbox/slow.geojson', etag: 'ffff' }))).toBeUndefined();
  });
});
