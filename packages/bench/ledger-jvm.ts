/**
 * DynamoDB Local's JVM flags (JVM_TUNING) against others, G1 by default (the
 * JVM's own collector): the CPU of the JVM alone (/proc, so Linux only) for the
 * same ledger-like load, run in pairs, the shipped flags first in odd pairs and
 * second in even ones. The load is four lanes of put, conditional update and
 * consistent get on 200 keys each. `--against ''` is the JVM's defaults (C2
 * and G1).
 *
 *   node --import tsx packages/bench/ledger-jvm.ts [--pairs 5] [--requests 12000] [--against '<flags>']
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { JVM_TUNING, startDynamoDbLocal } from '@mapflow-bridge/local/dynamodb';
import { pairedRatio } from './paired.ts';

/** The shipped flags without the collector: the JVM picks G1, as it does by default on this machine. */
const G1_TUNING: readonly string[] = JVM_TUNING.filter((flag) => flag !== '-XX:+UseSerialGC');
const LANES = 4;

/** User + system seconds of a process so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** One JVM with `tuning`, `requests` requests after its start: the JVM's CPU for those requests. */
async function loadCpu(tuning: readonly string[], requests: number): Promise<number> {
  const dynamodb = await startDynamoDbLocal({ inMemory: true, jvmTuning: tuning });
  try {
    const client = new DynamoDBClient({ endpoint: dynamodb.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
    await client.send(new CreateTableCommand({ TableName: 'ledger-jvm', KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }], AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], BillingMode: 'PAY_PER_REQUEST' }));
    const before = cpuSeconds(dynamodb.pid!);
    const lane = async (index: number) => {
      for (let i = 0; i < requests / 3 / LANES; i++) {
        const pk = { S: `job-${index}-${i % 200}` };
        await client.send(new PutItemCommand({ TableName: 'ledger-jvm', Item: { pk, detail: { S: 'x'.repeat(300) }, n: { N: String(i) } } }));
        await client.send(
          new UpdateItemCommand({
            TableName: 'ledger-jvm',
            Key: { pk },
            UpdateExpression: 'SET #status = :status',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':status': { S: 'RUNNING' } },
          }),
        );
        await client.send(new GetItemCommand({ TableName: 'ledger-jvm', Key: { pk }, ConsistentRead: true }));
      }
    };
    await Promise.all(Array.from({ length: LANES }, (_, index) => lane(index)));
    client.destroy();
    return cpuSeconds(dynamodb.pid!) - before;
  } finally {
    await dynamodb.close();
  }
}

export async function benchLedgerJvm(options: { pairs: number; requests: number; against?: readonly string[]; log?: (line: string) => void }): Promise<void> {
  const log = options.log ?? console.log;
  const against = options.against ?? G1_TUNING;
  const name = against.length > 0 ? against.join(' ') : "the JVM's defaults";
  const ratios: number[] = [];
  for (let pair = 1; pair <= options.pairs; pair++) {
    // Alternate which goes first, so that a machine growing busier or quieter favours neither.
    const shippedFirst = pair % 2 === 1;
    const first = await loadCpu(shippedFirst ? JVM_TUNING : against, options.requests);
    const second = await loadCpu(shippedFirst ? against : JVM_TUNING, options.requests);
    const [shipped, other] = shippedFirst ? [first, second] : [second, first];
    ratios.push(shipped / other);
    log(`pair ${pair}: ${JVM_TUNING.join(' ')} ${shipped.toFixed(2)} s of JVM CPU, ${name} ${other.toFixed(2)} s: ${(shipped / other).toFixed(3)}x`);
  }
  const { ratio, low, high } = pairedRatio(ratios, 1);
  log(`shipped flags against ${name}, ${options.requests} requests, ${options.pairs} pairs: ${ratio.toFixed(3)}x the JVM's CPU (95% interval ${low.toFixed(3)}-${high.toFixed(3)})`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { pairs: { type: 'string', default: '5' }, requests: { type: 'string', default: '12000' }, against: { type: 'string' } } });
  const against = values.against === undefined ? undefined : values.against.split(' ').filter(Boolean);
  await benchLedgerJvm({ pairs: Number(values.pairs), requests: Number(values.requests), ...(against ? { against } : {}) });
}
