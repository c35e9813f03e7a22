/**
 * DynamoDB Local for a test file: the run's shared one (support/shared-dynamodb.ts),
 * reached in beforeAll. Each test asks for a fresh ledger table (unique name),
 * so tests never see each other's rows.
 */
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll } from 'vitest';
import { ledgerTableSchema } from '../../functions/ledger/ledger.ts';
import { LOCAL_CREDENTIALS } from '../../functions/runtime/aws.ts';
import { sharedDynamoDbEndpoint, uniqueTableName } from './shared-dynamodb.ts';

export interface DynamoDbFixture {
  readonly endpoint: string;
  readonly client: DynamoDBClient;
  readonly doc: DynamoDBDocumentClient;
  /** Creates an empty ledger table with a unique name and returns the name. */
  createLedgerTable(): Promise<string>;
}

export function useDynamoDbLocal(): DynamoDbFixture {
  let endpoint: string | undefined;
  let client: DynamoDBClient | undefined;
  let doc: DynamoDBDocumentClient | undefined;

  beforeAll(async () => {
    endpoint = await sharedDynamoDbEndpoint();
    client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  });
  afterAll(async () => {
    client?.destroy();
  });

  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('DynamoDB Local is not started yet (use the fixture inside tests or hooks).');
    return value;
  };
  return {
    get endpoint() {
      return ready(endpoint);
    },
    get client() {
      return ready(client);
    },
    get doc() {
      return ready(doc);
    },
    async createLedgerTable() {
      const name = uniqueTableName();
      await ready(client).send(new CreateTableCommand(ledgerTableSchema(name)));
      return name;
    },
  };
}

/**
 * A document client whose every `send` goes through `intercept`, which may
 * answer, throw or pass the command on to the real client (`pass`): how tests
 * make DynamoDB answer as AWS can and DynamoDB Local does not (a lagging or
 * stale index, a cancelled transaction) or meter what it bills.
 */
export function interceptedDoc(
  doc: DynamoDBDocumentClient,
  intercept: (command: { input: Record<string, unknown> }, pass: () => Promise<unknown>) => Promise<unknown>,
): DynamoDBDocumentClient {
  const send = (command: { input: Record<string, unknown> }) => intercept(command, () => doc.send(command as never));
  return { send } as unknown as DynamoDBDocumentClient;
}
