import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { mkdtemp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { GSI_BY_SLOT_QUEUE, ledgerTableSchema } from '../../../functions/ledger/schema.ts';
import { LOCAL_CREDENTIALS } from '../../../functions/runtime/aws.ts';
import { ensureLedgerTable, freePort, startDynamoDbLocal } from '../src/dynamodb/index.ts';
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

  it('starts on a new port when another program took the one picked before the JVM could listen on it (a local S3 answering XML)', async () => {
    // Prepare: an S3-like server on the first port picked; the next pick is free
    const { server, port: taken, requests } = await xmlServer();
    const picks = [taken, await freePort()];
    const pickPort = async () => picks.shift() ?? freePort();
    try {
      // Act
      const dynamodb = await startDynamoDbLocal({ inMemory: true }, pickPort);
      const created = await ensureLedgerTable(dynamodb.endpoint, 'after-a-taken-port');
      await dynamodb.close();

      // Assess: not the XML server's endpoint, and DynamoDB answered the table's creation
      expect(requests()).toBeGreaterThan(0);
      expect(dynamodb.endpoint).not.toBe(`http://127.0.0.1:${taken}`);
      expect(created).toBe(true);
    } finally {
      server.close();
    }
  }, 120_000);

  it('says that another program listens on a port it was given, instead of talking to that program', async () => {
    // Prepare
    const { server, port } = await xmlServer();
    try {
      // Act
      const attempt = startDynamoDbLocal({ inMemory: true, port });

      // Assess
      await expect(attempt).rejects.toMatchObject({ name: 'DynamoDbLocalError', message: expect.stringContaining(`port ${port}: another program listens on it`) });
    } finally {
      server.close();
    }
  }, 120_000);

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

/** An HTTP server on 127.0.0.1 that answers every request with S3's XML error, as s3rver does. */
async function xmlServer(): Promise<{ server: Server; port: number; requests: () => number }> {
  let count = 0;
  const server = createServer((request, response) => {
    count++;
    request.resume();
    response.writeHead(403, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code></Error>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : 0, requests: () => count };
}
