/**
 * Issue 39, point 8: a start racing `jobs list` on one state folder. Both are
 * launched at the same instant on a folder whose ledger holds a job; no
 * bridge runs. Only one DynamoDB Local may have the ledger's files open at a
 * time (every java process whose -dbPath is the folder's is counted, from
 * /proc, every 50 ms while they race), and both commands end with true output:
 * `jobs list` shows the job, the bridge comes up and stops on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { Ledger } from '../../functions/ledger/ledger.ts';
import { LOCAL_LEDGER_TABLE } from '../../packages/local/src/bridge.ts';
import { ensureLedgerTable, startDynamoDbLocal } from '../../packages/local/src/dynamodb/index.ts';
import { testTmp } from '../support/temp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

/** The pids of the java processes that have `dbPath` open as DynamoDB Local's database (Linux /proc). */
function jvmsOn(dbPath: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const at = args.indexOf('-dbPath');
      if (at >= 0 && args[at + 1] === dbPath) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('a start and a jobs list at the same instant on one state folder', { timeout: 300_000 }, () => {
  let stateDir: string;
  const dbPath = () => path.join(stateDir, 'dynamodb');

  beforeAll(async () => {
    // A state folder whose ledger holds one job (as a bridge that stopped leaves it).
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-start-race-'));
    const dynamodb = await startDynamoDbLocal({ dbPath: dbPath(), startTimeoutMs: 180_000 });
    try {
      await ensureLedgerTable(dynamodb.endpoint, LOCAL_LEDGER_TABLE);
      const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: dynamodb.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }));
      await new Ledger(doc, LOCAL_LEDGER_TABLE).register({
        jobId: 'race-job-0123abcd',
        input: { bucket: 'mapflow-bridge-local', key: 'inbox/race-witness.geojson', etag: '0123abcd', size: 10 },
        kind: 'geojson',
        routeName: 'default',
      });
      doc.destroy();
    } finally {
      await dynamodb.close();
    }
  });
  afterAll(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('only one DynamoDB Local has the ledger open at a time; jobs list shows the job, the bridge comes up', async () => {
    // Prepare
    const env = { ...process.env, NO_COLOR: '1', POWERTOOLS_LOG_LEVEL: 'ERROR' };
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, jvmsOn(dbPath()).length)), 50);

    // Act: both at once
    const start = spawn(process.execPath, [CLI, 'start', '--state-dir', stateDir, '--no-samples', '--no-console', '--s3-port', '0'], { cwd: stateDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const list = spawn(process.execPath, [CLI, 'jobs', 'list', '--state-dir', stateDir], { cwd: stateDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    // A failing run leaves no bridge behind.
    onTestFinished(() => {
      clearInterval(sampler);
      for (const proc of [start, list]) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    });
    const startOutput: string[] = [];
    const up = new Promise<void>((resolve) => {
      for (const stream of [start.stdout, start.stderr]) {
        createInterface({ input: stream }).on('line', (line) => {
          startOutput.push(line);
          if (/Waiting for files/.test(line)) resolve();
        });
      }
    });
    const startExit = new Promise<number | string | null>((resolve) => start.once('exit', (code, signal) => resolve(code ?? signal)));
    let listOutput = '';
    list.stdout.on('data', (chunk: Buffer) => (listOutput += chunk.toString('utf8')));
    list.stderr.on('data', (chunk: Buffer) => (listOutput += chunk.toString('utf8')));
    const listCode = await new Promise<number | null>((resolve) => list.once('exit', (code) => resolve(code)));
    await Promise.race([up, startExit]);
    start.kill('SIGTERM');
    const startCode = await startExit;
    clearInterval(sampler);

    // Assess
    expect({ listCode, listOutput }).toMatchObject({ listCode: 0, listOutput: expect.stringContaining('race-witness.geojson') });
    expect(startOutput.join('\n')).toContain('Waiting for files');
    expect(startCode, startOutput.slice(-6).join(' | ')).toBe(143);
    expect(most).toBe(1);
    expect(jvmsOn(dbPath())).toEqual([]);
  });
});
