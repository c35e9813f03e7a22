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
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the broker that answers the shared DynamoDB Local's endpoint (test/support/shared-dynamodb.ts). */
    dynamodbBroker: string;
  }
}

const DYNAMODB_PROCESS = fileURLToPath(new URL('./dynamodb-process.ts', import.meta.url));

/** Starts test/support/dynamodb-process.ts; resolves with its endpoint and a stop. */
function startDynamoDbProcess(): Promise<{ endpoint: string; stop: () => void }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', DYNAMODB_PROCESS], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (!out.includes('\n')) return;
      const answer = JSON.parse(out.split('\n')[0]!) as { endpoint?: string; error?: string };
      if (answer.endpoint) resolve({ endpoint: answer.endpoint, stop: () => child.stdin.end() });
      else reject(new Error(answer.error ?? 'no endpoint'));
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the DynamoDB Local process exited with code ${code}`)));
  });
}

/**
 * The one DynamoDB Local of vitest's process: each project runs this global
 * setup with a module of its own, and both projects' tests share the JVM
 * (tables are unique per test); the last teardown stops it.
 */
interface SharedProcess {
  starting?: ReturnType<typeof startDynamoDbProcess>;
  users: number;
}
const SHARED_KEY = Symbol.for('mapflow-bridge.test.shared-dynamodb');
const shared: SharedProcess = ((globalThis as Record<symbol, SharedProcess | undefined>)[SHARED_KEY] ??= { users: 0 });

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared.users++;
  const server = createServer((request, response) => {
    shared.starting ??= startDynamoDbProcess();
    shared.starting.then(
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
    if (--shared.users > 0) return;
    const { starting } = shared;
    shared.starting = undefined;
    await starting?.then((dynamodb) => dynamodb.stop(), () => undefined);
  };
}
