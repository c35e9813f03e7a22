/**
 * One DynamoDB Local for a whole test run (vitest.config.ts `globalSetup`),
 * instead of a JVM per test file or per bridge: each start costs about 2.5 s
 * of CPU, and a run started 54 of them. It is started on the first request,
 * so a run of tests that never touch DynamoDB starts no JVM at all.
 *
 * Tests reach it through a broker on 127.0.0.1 (test/support/shared-dynamodb.ts):
 * the global setup runs in vitest's own process, the tests in workers. Each
 * test keeps to tables of its own (unique names), as before.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../local/dynamodb/index.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the broker that answers the shared DynamoDB Local's endpoint (test/support/shared-dynamodb.ts). */
    dynamodbBroker: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let starting: Promise<DynamoDbLocal> | undefined;
  const server = createServer((request, response) => {
    // A busy 2-core machine can take a while to start a JVM: generous, as the bridge's own start.
    starting ??= startDynamoDbLocal({ inMemory: true, startTimeoutMs: 180_000 });
    starting.then(
      (dynamodb) => response.end(dynamodb.endpoint),
      (error: unknown) => {
        response.statusCode = 500;
        response.end(error instanceof Error ? error.message : String(error));
      },
    );
    request.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  project.provide('dynamodbBroker', `http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  return async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await starting?.then((dynamodb) => dynamodb.close(), () => undefined);
  };
}
