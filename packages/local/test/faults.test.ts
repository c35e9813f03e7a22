/**
 * Issue 37 (6, 10): --inject-faults. Its syntax (an unknown key or a bad rate
 * refused); the DynamoDB gate answering TransactWriteItems with AWS's
 * TransactionCanceledException / TransactionConflict, which the AWS SDK v3
 * parses as it would on AWS; a global secondary index that has not caught up
 * yet (recent writes missing from a Query on the index, the table itself
 * current); and an S3 notification delivered twice, the copy in a batch of
 * its own dispatched beside the first.
 */
import type { SQSEvent } from 'aws-lambda';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalTrigger } from '../src/assembly/trigger.ts';
import type { LocalFunction } from '../src/assembly/functions.ts';
import type { TriggerSpec } from '../src/assembly/template.ts';
import { CredentialStore } from '../src/auth/credentials.ts';
import { startJsonGateProxy, type JsonGateProxy } from '../src/auth/json-gate-proxy.ts';
import { dynamodbFaults, FaultInjector, formatFaults, parseFaults, type FaultSettings } from '../src/faults.ts';
import { sharedDynamoDbEndpoint, uniqueTableName } from '../../../test/support/shared-dynamodb.ts';

const NONE: FaultSettings = { dynamodbConflict: 0, gsiLag: 0, duplicateDelivery: 0, lambdaThrottle: 0, gsiLagMs: 500, seed: 1 };

describe('the --inject-faults syntax', () => {
  it('reads rates, the lag window and the seed, and writes them back the same', () => {
    // Act
    const settings = parseFaults('dynamodb-conflict=0.2, gsi-lag=0.3,duplicate-delivery=1,seed=42');
    const defaults = parseFaults('gsi-lag=0.5', 'X', () => 7);
    // Assess
    expect(settings).toEqual({ dynamodbConflict: 0.2, gsiLag: 0.3, duplicateDelivery: 1, lambdaThrottle: 0, gsiLagMs: 500, seed: 42 });
    expect(defaults).toEqual({ dynamodbConflict: 0, gsiLag: 0.5, duplicateDelivery: 0, lambdaThrottle: 0, gsiLagMs: 500, seed: 7 });
    expect(parseFaults(formatFaults(settings))).toEqual(settings);
  });

  it.each([
    ['dynamodb-conflicts=0.2', "--inject-faults: unknown fault 'dynamodb-conflicts' (known: dynamodb-conflict, gsi-lag, duplicate-delivery, lambda-throttle, gsi-lag-ms, seed)"],
    ['gsi-lag=1.5', "--inject-faults: gsi-lag is a rate from 0 to 1, not '1.5'"],
    ['gsi-lag=-0.1', "--inject-faults: gsi-lag needs a number, not '-0.1'"],
    ['duplicate-delivery', "--inject-faults: duplicate-delivery needs a number, not ''"],
    ['seed=1.5', "--inject-faults: seed must be a whole number, not '1.5'"],
    ['', '--inject-faults is empty'],
  ])('refuses %j', (text, message) => {
    // Act
    const parse = () => parseFaults(text);
    // Assess
    expect(parse).toThrow(message);
  });

  it('draws the same faults again from the same seed', () => {
    // Prepare
    const settings = { ...NONE, dynamodbConflict: 0.5, seed: 99 };
    const [first, second] = [new FaultInjector(settings), new FaultInjector(settings)];
    // Act
    const draws = [first, second].map((injector) => Array.from({ length: 40 }, () => injector.draw('dynamodbConflict')));
    // Assess
    expect(draws[0]).toEqual(draws[1]);
    expect(draws[0]).toContain(true);
    expect(draws[0]).toContain(false);
  });
});

describe('injected DynamoDB faults at the gate', () => {
  const store = CredentialStore.inMemory();
  const table = uniqueTableName('faults');
  let target: string;
  let gate: JsonGateProxy | undefined;
  const clients: DynamoDBDocumentClient[] = [];

  beforeAll(async () => {
    target = await sharedDynamoDbEndpoint();
    const admin = new DynamoDBClient({ endpoint: target, region: 'us-east-1', credentials: store.user });
    await admin.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'jobId', AttributeType: 'S' }, { AttributeName: 'status', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'jobId', KeyType: 'HASH' }],
        GlobalSecondaryIndexes: [{ IndexName: 'byStatus', KeySchema: [{ AttributeName: 'status', KeyType: 'HASH' }], Projection: { ProjectionType: 'ALL' } }],
      }),
    );
    admin.destroy();
  }, 120_000);
  afterAll(async () => {
    for (const client of clients) client.destroy();
    await gate?.close();
  });

  const gateWith = async (injector: FaultInjector, now?: () => number) => {
    await gate?.close();
    gate = await startJsonGateProxy({ service: 'dynamodb', target, store, intercept: now ? dynamodbFaults(injector, now) : dynamodbFaults(injector) });
    const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: gate.endpoint, region: 'us-east-1', credentials: store.user, maxAttempts: 1 }));
    clients.push(doc);
    // As the bridge's start does (ensureLedgerTable): the gate learns the table's key from the answer.
    await doc.send(new DescribeTableCommand({ TableName: table }));
    return doc;
  };

  it('answers TransactWriteItems with TransactionCanceledException, one reason TransactionConflict per AWS, and writes nothing', async () => {
    // Prepare
    const injector = new FaultInjector({ ...NONE, dynamodbConflict: 1 });
    const doc = await gateWith(injector);
    const write = new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: table, Item: { jobId: 'conflict-a', status: 'RUNNING' } } },
        { Put: { TableName: table, Item: { jobId: 'conflict-b', status: 'RUNNING' } } },
      ],
    });
    // Act
    const error = (await doc.send(write).catch((e: unknown) => e)) as Error & { CancellationReasons?: { Code?: string }[]; $metadata?: { httpStatusCode?: number } };
    const stored = await doc.send(new GetCommand({ TableName: table, Key: { jobId: 'conflict-a' }, ConsistentRead: true }));
    // Assess
    expect(error.name).toBe('TransactionCanceledException');
    expect(error.$metadata?.httpStatusCode).toBe(400);
    const codes = error.CancellationReasons?.map((reason) => reason.Code);
    expect(codes).toHaveLength(2);
    expect(codes?.filter((code) => code === 'TransactionConflict')).toHaveLength(1);
    expect(codes?.filter((code) => code === 'None')).toHaveLength(1);
    expect(error.message).toBe(`Transaction cancelled, please refer cancellation reasons for specific reasons [${codes?.join(', ')}]`);
    expect(stored.Item).toBeUndefined();
    expect(injector.injected.dynamodbConflict).toBe(1);
  });

  it('leaves a recent write out of a Query on a global secondary index, not out of the table, until the lag window has passed', async () => {
    // Prepare: the index always lags, by a window the test's clock moves past
    let clock = 1_000_000;
    const injector = new FaultInjector({ ...NONE, gsiLag: 1, gsiLagMs: 500 });
    const doc = await gateWith(injector, () => clock);
    const byStatus = new QueryCommand({ TableName: table, IndexName: 'byStatus', KeyConditionExpression: '#s = :s', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':s': 'LAGGING' } });
    await doc.send(new PutCommand({ TableName: table, Item: { jobId: 'old', status: 'LAGGING' } }));
    clock += 1_000;
    // Act
    await doc.send(new PutCommand({ TableName: table, Item: { jobId: 'new', status: 'LAGGING' } }));
    const lagging = await doc.send(byStatus);
    const table_ = await doc.send(new GetCommand({ TableName: table, Key: { jobId: 'new' } }));
    clock += 600;
    const caughtUp = await doc.send(byStatus);
    // Assess
    expect(lagging.Items?.map((item) => item.jobId)).toEqual(['old']);
    expect(lagging.Count).toBe(1);
    expect(table_.Item).toEqual({ jobId: 'new', status: 'LAGGING' });
    expect(caughtUp.Items?.map((item) => item.jobId).sort()).toEqual(['new', 'old']);
    expect(injector.injected.gsiLag).toBe(1);
  });
});

const TRIGGER: TriggerSpec = {
  ruleArn: 'arn:aws:events:us-east-1:000000000000:rule/Inbox',
  eventPattern: { source: ['aws.s3'], 'detail-type': ['Object Created'] },
  queue: { logicalId: 'Q', name: 'Q', url: 'https://sqs.us-east-1.amazonaws.com/000000000000/Q', arn: 'arn:aws:sqs:us-east-1:000000000000:Q', visibilityTimeoutSeconds: 30, maxReceiveCount: 2 },
  batchSize: 10,
  reportBatchItemFailures: true,
  functionLogicalId: 'Dispatch',
};

describe('injected duplicate deliveries', () => {
  it('delivers a notification drawn twice, the copy in a batch of its own dispatched while the first is', { timeout: 20_000 }, async () => {
    // Prepare: dispatch answers only once two batches are in flight at the same time
    const events: SQSEvent[] = [];
    let bothIn: () => void = () => undefined;
    const together = new Promise<void>((resolve) => (bothIn = resolve));
    const fn = {
      invoke: async (event: unknown) => {
        events.push(event as SQSEvent);
        if (events.length === 2) bothIn();
        await together;
        return { batchItemFailures: [] };
      },
    } as unknown as LocalFunction;
    const injector = new FaultInjector({ ...NONE, duplicateDelivery: 1 });
    const trigger = new LocalTrigger({ spec: TRIGGER, dispatch: fn, log: () => undefined, duplicateDelivery: injector });
    // Act
    trigger.onS3Record({ eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bucket' }, object: { key: 'inbox/a', size: 1, eTag: '"abc"' } } });
    await together;
    await trigger.idle();
    // Assess
    expect(events.map((event) => event.Records.length)).toEqual([1, 1]);
    const [first, copy] = events.map((event) => event.Records[0]!);
    expect(copy!.body).toBe(first!.body);
    expect(copy!.messageId).not.toBe(first!.messageId);
    expect(injector.injected.duplicateDelivery).toBe(1);
    expect(trigger.pending).toBe(0);
    await trigger.close();
  });
});
