/**
 * Secrets: runs jobs that succeed, fail in Mapflow, are rejected, and upload
 * a GeoTIFF, with faults and lost responses on (so retries and error paths
 * log), using a distinctive token; then looks for the token, its base64 and
 * base64(email:token) in everything the bridge wrote: every stdout/stderr
 * line, the bridge's own log, every event, every ledger row, every object in
 * the bucket (and its tags), every file of the bridge's state directory, and
 * every execution's input, output and error. The simulator's own state (it
 * must know the token) is outside the bridge and not scanned.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand, GetObjectTaggingCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_GEOTIFF, squareAoiText } from '../../packages/bench/fault-suite.ts';
import { tempFile } from '../e2e/helpers.ts';
import { startReliabilityBridge, type ReliabilityBridge } from './support.ts';

const TOKEN = 'LEAKCANARY7f3c9e21b8d54a6f90e1c2d3b4a5f6e7';
const EMAIL = 'leak-check@mapflow-bridge.invalid';
const FORBIDDEN = {
  token: TOKEN,
  'base64(token)': Buffer.from(TOKEN).toString('base64'),
  'base64(email:token)': Buffer.from(`${EMAIL}:${TOKEN}`).toString('base64'),
  // A marker unique enough to catch the token cut in half or partially redacted.
  'token prefix': TOKEN.slice(0, 16),
};

describe('the Mapflow token never leaves the bridge', { timeout: 120_000 }, () => {
  let rel: ReliabilityBridge;
  const captured: string[] = [];
  const restores: (() => void)[] = [];

  beforeAll(async () => {
    // Capture every write to stdout/stderr (the Powertools logger writes there) and console output.
    for (const stream of [process.stdout, process.stderr]) {
      const original = stream.write.bind(stream);
      stream.write = ((chunk: unknown, ...rest: unknown[]) => {
        captured.push(Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk));
        return (original as (...args: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof stream.write;
      restores.push(() => {
        stream.write = original as typeof stream.write;
      });
    }
    for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      const original = console[method];
      console[method] = (...args: unknown[]) => {
        captured.push(args.map((arg) => (typeof arg === 'string' ? arg : JSON.stringify(arg))).join(' '));
        original(...args);
      };
      restores.push(() => {
        console[method] = original;
      });
    }
    const previousLevel = process.env.POWERTOOLS_LOG_LEVEL;
    process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
    restores.push(() => {
      if (previousLevel === undefined) delete process.env.POWERTOOLS_LOG_LEVEL;
      else process.env.POWERTOOLS_LOG_LEVEL = previousLevel;
    });
    rel = await startReliabilityBridge({
      token: TOKEN,
      email: EMAIL,
      simulator: { faultRate: 0.3, dropAfterCommit: 0.3, seed: 3 },
      // The functions' own output (their logs, written to <state>/logs/ too) in the capture as well.
      bridge: { log: (line) => captured.push(line), functionOutput: (chunk) => captured.push(chunk.toString('utf8')) },
    });
  });
  afterAll(async () => {
    await rel?.close();
    for (const restore of restores.reverse()) restore();
  });

  it('appears in no log line, event, ledger row, object, state file or execution record', async () => {
    // Prepare
    const inputs = [
      { name: 'good.geojson', body: squareAoiText('good', 7.44, 46.94) },
      { name: 'fails.geojson', body: JSON.stringify({ ...JSON.parse(squareAoiText('fails', 8.54, 47.37)), mapflow: { meta: { simulate: 'fail:dataloader.NoData' } } }) },
      { name: 'rejected.geojson', body: 'this is not json' },
      { name: 'unknown-model.geojson', body: JSON.stringify({ ...JSON.parse(squareAoiText('unknown', 6.14, 46.2)), mapflow: { model: 'No Such Model' } }) },
    ];
    // Act
    const jobs = [];
    for (const input of inputs) jobs.push(await rel.bridge.putInbox(await tempFile(input.name, input.body), input.name));
    jobs.push(await rel.bridge.putInbox(SAMPLE_GEOTIFF, 'secret-scene.tif'));
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    const statuses = await Promise.all(jobs.map(async (job) => (await rel.bridge.ledger.get(job.jobId))?.status));
    const haystacks = await everythingWritten(rel, captured);
    // Assess: the jobs took the paths meant to be scanned, and the capture saw the logs
    expect(statuses).toEqual(['SUCCEEDED', 'FAILED', 'REJECTED', 'REJECTED', 'SUCCEEDED']);
    expect(rel.simulator.stats().faults).toBeGreaterThan(0);
    expect(captured.some((line) => line.includes('"level":"DEBUG"') || line.includes('"level":"INFO"'))).toBe(true);
    expect(haystacks.length).toBeGreaterThan(20);
    // ... and no form of the token anywhere
    const leaks = haystacks.flatMap(({ where, text }) =>
      Object.entries(FORBIDDEN)
        .filter(([, secret]) => text.includes(secret))
        .map(([form]) => `${form} in ${where}`),
    );
    expect(leaks).toEqual([]);
  });
});

/** Every place the bridge wrote to, as text. */
async function everythingWritten(rel: ReliabilityBridge, captured: string[]): Promise<{ where: string; text: string }[]> {
  const { bridge } = rel;
  const found: { where: string; text: string }[] = [];
  found.push({ where: 'stdout/stderr/console/bridge log', text: captured.join('\n') });
  found.push({ where: 'events file', text: await readFile(bridge.eventsFile, 'utf8') });
  found.push({ where: 'execution records', text: JSON.stringify(rel.executions) });

  const ddb = new DynamoDBClient({ endpoint: bridge.endpoints.dynamodb, region: 'us-east-1', credentials: bridge.credentials });
  try {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await ddb.send(new ScanCommand({ TableName: bridge.ledgerTable, ...(startKey ? { ExclusiveStartKey: startKey as never } : {}) }));
      for (const item of page.Items ?? []) found.push({ where: `ledger row ${item.jobId?.S}`, text: JSON.stringify(item) });
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  } finally {
    ddb.destroy();
  }

  let token: string | undefined;
  do {
    const page = await bridge.s3.send(new ListObjectsV2Command({ Bucket: bridge.bucket, ...(token ? { ContinuationToken: token } : {}) }));
    for (const object of page.Contents ?? []) {
      const key = object.Key as string;
      const body = await bridge.s3.send(new GetObjectCommand({ Bucket: bridge.bucket, Key: key }));
      // latin1 keeps every byte, so a token inside binary data is still found
      const bytes = Buffer.from(await (body.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
      found.push({ where: `s3://${bridge.bucket}/${key}`, text: bytes.toString('latin1') });
      const tags = await bridge.s3.send(new GetObjectTaggingCommand({ Bucket: bridge.bucket, Key: key }));
      found.push({ where: `tags of ${key}`, text: JSON.stringify(tags.TagSet ?? []) });
    }
    token = page.NextContinuationToken;
  } while (token);

  for (const file of await filesUnder(bridge.stateDir)) {
    found.push({ where: path.relative(bridge.stateDir, file), text: (await readFile(file)).toString('latin1') });
  }
  return found;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}
