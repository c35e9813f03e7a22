/**
 * DynamoDB Local for a test file: started once in beforeAll, stopped in
 * afterAll. Each test asks for a fresh ledger table (unique name), so tests in
 * a file never see each other's rows.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll } from 'vitest';
import { ledgerTableSchema } from '../../functions/ledger/ledger.ts';
import { LOCAL_CREDENTIALS } from '../../functions/runtime/aws.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../local/dynamodb/index.ts';

export interface DynamoDbFixture {
  readonly endpoint: string;
  readonly client: DynamoDBClient;
  readonly doc: DynamoDBDocumentClient;
  /** Creates an empty ledger table with a unique name and returns the name. */
  createLedgerTable(): Promise<string>;
}

export function useDynamoDbLocal(): DynamoDbFixture {
  let server: DynamoDbLocal | undefined;
  let client: DynamoDBClient | undefined;
  let doc: DynamoDBDocumentClient | undefined;

  beforeAll(async () => {
    server = await startDynamoDbLocal({ inMemory: true });
    client = new DynamoDBClient({ endpoint: server.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  });
  afterAll(async () => {
    client?.destroy();
    await server?.close();
  });

  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('DynamoDB Local is not started yet (use the fixture inside tests or hooks).');
    return value;
  };
  return {
    get endpoint() {
      return ready(server).endpoint;
    },
    get client() {
      return ready(client);
    },
    get doc() {
      return ready(doc);
    },
    async createLedgerTable() {
      const name = `ledger-${randomUUID().slice(0, 8)}`;
      await ready(client).send(new CreateTableCommand(ledgerTableSchema(name)));
      return name;
    },
  };
}
