/**
 * DynamoDB Local in a process of its own for the test run's broker
 * (test/support/dynamodb-broker.ts): prints {"endpoint": ...} once it
 * answers, and stops it when its stdin closes (the broker gone, however it
 * went). A child process rather than an import in the broker: vitest's own
 * process loads a module graph through Vite, which took 7 s for this one.
 */
import { startDynamoDbLocal } from '../../packages/local/src/dynamodb/index.ts';

try {
  const dynamodb = await startDynamoDbLocal({ inMemory: true, startTimeoutMs: 180_000 });
  process.stdout.write(`${JSON.stringify({ endpoint: dynamodb.endpoint })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => void dynamodb.close().finally(() => process.exit(0)));
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: error instanceof Error ? error.message : String(error) })}\n`);
  process.exit(1);
}
