/**
 * The run's shared DynamoDB Local (test/support/dynamodb-broker.ts): its
 * endpoint, started on first use, and a fresh table name for a test.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { inject } from 'vitest';

let endpoint: Promise<string> | undefined;

/** The endpoint of the run's DynamoDB Local (in memory, -sharedDb). */
export function sharedDynamoDbEndpoint(): Promise<string> {
  endpoint ??= new Promise<string>((resolve, reject) => {
    const call = request(inject('dynamodbBroker'), (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(body) : reject(new Error(`the shared DynamoDB Local did not start: ${body}`))));
    });
    call.on('error', reject);
    call.end();
  });
  endpoint.catch(() => (endpoint = undefined));
  return endpoint;
}

/** A table name no other test of the run uses. */
export function uniqueTableName(prefix = 'ledger'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * A bridge's ledger in a fresh table of the run's DynamoDB Local instead of a
 * JVM of its own (about 5 s of CPU each): for tests about something else than
 * the ledger's own start. Spread into the bridge's options; on a state folder
 * the other commands find both in its endpoints.json, and the table outlives
 * each restart as DynamoDB outlives a Lambda.
 */
export async function sharedLedgerOptions(prefix = 'ledger'): Promise<{ dynamodbEndpoint: string; ledgerTable: string }> {
  return { dynamodbEndpoint: await sharedDynamoDbEndpoint(), ledgerTable: uniqueTableName(prefix) };
}

/** The same as `local run` / `start` arguments (--dynamodb-endpoint, --ledger-table). */
export async function sharedLedgerArgs(prefix = 'ledger'): Promise<string[]> {
  const { dynamodbEndpoint, ledgerTable } = await sharedLedgerOptions(prefix);
  return ['--dynamodb-endpoint', dynamodbEndpoint, '--ledger-table', ledgerTable];
}
