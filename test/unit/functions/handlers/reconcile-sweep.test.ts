/**
 * The reconciler's inbox sweep on AWS (issue 24, point 1): an inbox object
 * older than 5 minutes without a ledger row is started as dispatch would
 * (execution name = job id, the same input), a younger one is left to its
 * notification, one with a row is left alone; a failing sweep is reported,
 * not thrown (the settling already done stands).
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { GetObjectTaggingCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { SFNClient, StartExecutionCommand, ExecutionAlreadyExists } from '@aws-sdk/client-sfn';
import { INBOX_SWEEP_MIN_AGE_SECONDS, sweepInboxOnSchedule } from '../../../../functions/handlers/reconcile.ts';
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

async function setup() {
  const table = await ddb.createLedgerTable();
  const config = loadConfig({ LEDGER_TABLE: table, STATE_MACHINE_ARN, BRIDGE_EVENTS_FILE: '/dev/null' });
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
});
