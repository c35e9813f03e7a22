/**
 * Issue 37 point 1: one execution the reconciler may not describe (AWS answers
 * AccessDeniedException, as it did for a Distributed Map child's ARN) must not
 * end the run: the other rows are still reconciled and their slots reclaimed,
 * and the failure is logged and counted in the ReconcileErrors metric.
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { GetObjectTaggingCommand, PutObjectCommand, PutObjectTaggingCommand, S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, ListExecutionsCommand, SFNClient, SFNServiceException } from '@aws-sdk/client-sfn';
import { reconcile, stepFunctionsLiveness } from '../../../../functions/handlers/reconcile.ts';
import { recordReconcileErrors } from '../../../../functions/runtime/metrics.ts';
import { loadConfig } from '../../../../functions/runtime/config.ts';
import { createBridgeContext } from '../../../../functions/runtime/context.ts';
import { createLogger } from '../../../../functions/runtime/logger.ts';
import { useDynamoDbLocal } from '../../../support/dynamodb.ts';
import { testTmp } from '../../../support/temp.ts';

vi.mock('../../../../functions/runtime/metrics.ts', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../../../functions/runtime/metrics.ts')>()),
  recordReconcileErrors: vi.fn(),
}));

const ddb = useDynamoDbLocal();
const s3 = mockClient(S3Client);
const sfn = mockClient(SFNClient);
afterAll(() => {
  s3.restore();
  sfn.restore();
});

const STATE_MACHINE_ARN = 'arn:aws:states:eu-west-1:123456789012:stateMachine:bridge';
const arn = (name: string) => `arn:aws:states:eu-west-1:123456789012:execution:bridge:${name}`;
/** A child execution of a Map Run, as AWS forms it: execution:<machine>/<map run label>:<id>. */
const childArn = (id: string) => `arn:aws:states:eu-west-1:123456789012:execution:bridge/Process-Parts-0a1b2c3d:${id}`;
const accessDenied = () =>
  new SFNServiceException({ name: 'AccessDeniedException', $fault: 'client', $metadata: { httpStatusCode: 400 }, message: 'User is not authorized to perform: states:DescribeExecution' });

async function setup() {
  const table = await ddb.createLedgerTable();
  const eventsFile = join(await mkdtemp(join(testTmp(), 'reconcile-denied-')), 'events.jsonl');
  const errors: unknown[] = [];
  const logger = createLogger({ serviceName: 'reconcile-test', logLevel: 'SILENT' });
  vi.spyOn(logger, 'error').mockImplementation((...args: unknown[]) => void errors.push(args));
  const ctx = createBridgeContext({
    config: loadConfig({ LEDGER_TABLE: table, BRIDGE_EVENTS_FILE: eventsFile, STATE_MACHINE_ARN }),
    logger,
    overrides: { doc: ddb.doc, s3: new S3Client({ region: 'us-east-1' }) },
  });
  return { ctx, errors };
}

describe('reconcile when one execution may not be described', () => {
  beforeEach(() => {
    s3.reset();
    sfn.reset();
    vi.mocked(recordReconcileErrors).mockClear();
    s3.on(PutObjectCommand).resolves({});
    s3.on(GetObjectTaggingCommand).resolves({ TagSet: [] });
    s3.on(PutObjectTaggingCommand).resolves({});
  });

  it('goes on with the other rows, reclaims their slots, logs the denied one and counts it', async () => {
    // Prepare: a dead job with two slots, a slot held under a Map child's ARN that is denied, a running job
    const { ctx, errors } = await setup();
    await ctx.ledger.register({ jobId: 'dead', input: { bucket: 'drop', key: 'inbox/fields/dead.geojson', etag: 'e', size: 5 }, kind: 'geojson', routeName: 'default' });
    await ctx.ledger.update('dead', { executionArn: arn('dead') });
    await ctx.ledger.transition('dead', 'IN_PROGRESS');
    await ctx.slots.acquire('dead#0', arn('dead'));
    await ctx.slots.acquire('split#1', childArn('child-1'));
    await ctx.slots.acquire('ghost#0', arn('ghost'));
    await ctx.slots.acquire('alive#0', arn('alive'));
    sfn.on(ListExecutionsCommand).resolves({ executions: [{ executionArn: arn('alive') } as never] });
    sfn.on(DescribeExecutionCommand).resolves({ status: 'ABORTED' });
    sfn.on(DescribeExecutionCommand, { executionArn: childArn('child-1') }).rejects(accessDenied());
    const sfnClient = new SFNClient({ region: 'eu-west-1' });

    // Act
    const summary = await reconcile(ctx, stepFunctionsLiveness({ sfn: () => sfnClient }, STATE_MACHINE_ARN));

    // Assess
    expect(summary.lost).toEqual(['dead']);
    expect(summary.reclaimedSlots.sort()).toEqual(['ghost#0']);
    expect((await ctx.slots.holders()).map((h) => h.holder).sort()).toEqual(['alive#0', 'split#1']);
    expect(summary.livenessErrors).toEqual([{ executionArn: childArn('child-1'), message: expect.stringContaining('not authorized') }]);
    expect(errors).toHaveLength(1);
    expect(recordReconcileErrors).toHaveBeenCalledWith(1);
  });

  it('works without the listing when ListExecutions itself is denied', async () => {
    // Prepare
    const { ctx } = await setup();
    await ctx.slots.acquire('ghost#0', arn('ghost'));
    sfn.on(ListExecutionsCommand).rejects(accessDenied());
    sfn.on(DescribeExecutionCommand).resolves({ status: 'FAILED' });
    const sfnClient = new SFNClient({ region: 'eu-west-1' });

    // Act
    const summary = await reconcile(ctx, stepFunctionsLiveness({ sfn: () => sfnClient }, STATE_MACHINE_ARN));

    // Assess
    expect(summary.reclaimedSlots).toEqual(['ghost#0']);
    expect(summary.listedRunning).toBeUndefined();
    expect(summary.livenessErrors).toEqual([{ executionArn: '(ListExecutions)', message: expect.stringContaining('not authorized') }]);
    expect(recordReconcileErrors).toHaveBeenCalledWith(1);
  });
});
