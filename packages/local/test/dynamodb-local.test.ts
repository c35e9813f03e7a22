import { existsSync } from 'node:fs';
import { mkdtemp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { GSI_BY_SLOT_QUEUE, ledgerTableSchema } from '../../../functions/ledger/schema.ts';
import { LOCAL_CREDENTIALS } from '../../../functions/runtime/aws.ts';
import { ensureLedgerTable, startDynamoDbLocal } from '../src/dynamodb/index.ts';
import { sharedDynamoDbEndpoint, uniqueTableName } from '../../../test/support/shared-dynamodb.ts';
import { testTmp } from '../../../test/support/temp.ts';

describe('startDynamoDbLocal', () => {
  it('explains a missing Java and points at scripts/check-java.sh', async () => {
    // Act
    const attempt = startDynamoDbLocal({ javaPath: '/nonexistent/bin/java' });
    // Assess
    await expect(attempt).rejects.toMatchObject({
      name: 'DynamoDbLocalError',
      message: expect.stringMatching(/was not found.*scripts\/check-java\.sh/),
    });
  });

  it('persists tables in dbPath across restarts, and keeps the JVM\'s temporary files in a folder it removes when it stops', async () => {
    // Prepare
    const dbPath = await mkdtemp(join(testTmp(), 'ddb-'));
    const javaTmpDir = join(await mkdtemp(join(testTmp(), 'ddb-java-')), 'tmp');
    const first = await startDynamoDbLocal({ dbPath, javaTmpDir });
    // a table makes DynamoDB Local open its SQLite database, unpacking its library into the temporary folder
    const created = await ensureLedgerTable(first.endpoint, 'kept');
    const createdAgain = await ensureLedgerTable(first.endpoint, 'kept');
    const whileRunning = await readdir(javaTmpDir);
    await first.close();
    const tmpAfterStop = existsSync(javaTmpDir);
    // Act
    const second = await startDynamoDbLocal({ dbPath });
    const client2 = new DynamoDBClient({ endpoint: second.endpoint, region: 'eu-west-1', credentials: { accessKeyId: 'other', secretAccessKey: 'other' } });
    const { TableNames } = await client2.send(new ListTablesCommand({}));
    client2.destroy();
    await second.close();
    // Assess
    expect(second.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect([created, createdAgain]).toEqual([true, false]);
    expect(TableNames).toEqual(['kept']);
    expect(whileRunning.some((name) => name.includes('sqlite'))).toBe(true);
    expect(tmpAfterStop).toBe(false);
  }, 120_000); // DynamoDB Local starts slowly (5-20 s) with a database file

  it('adds the GSIs a kept ledger table lacks (a database persisted by an older version, before bySlotQueue)', async () => {
    // Prepare: a table with the old schema, without the admission queue's index (in the run's DynamoDB Local)
    const endpoint = await sharedDynamoDbEndpoint();
    const table = uniqueTableName('old');
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    const current = ledgerTableSchema(table);
    await client.send(
      new CreateTableCommand({
        ...current,
        AttributeDefinitions: current.AttributeDefinitions?.filter((a) => !['slotQueue', 'slotOrder'].includes(a.AttributeName!)),
        GlobalSecondaryIndexes: current.GlobalSecondaryIndexes?.filter((index) => index.IndexName !== GSI_BY_SLOT_QUEUE),
      }),
    );
    // Act
    const created = await ensureLedgerTable(endpoint, table);
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    client.destroy();
    // Assess
    expect(created).toBe(false);
    expect(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort()).toEqual(current.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort());
  }, 120_000);
});
