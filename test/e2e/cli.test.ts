/**
 * `mapflow-bridge local run` as a user runs it: a child process, exit codes,
 * and the --json document on stdout (logs on stderr only).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS } from '../../functions/runtime/aws.ts';
import { startSimulator } from '../../packages/simulator/src/index.ts';
import { lockStateDir } from '../../packages/local/src/state-lock.ts';
import { sharedDynamoDbEndpoint, uniqueTableName } from '../support/shared-dynamodb.ts';
import { ROOT, SAMPLES, SAMPLE_DATA, tempFile } from './helpers.ts';
import { testTmp } from '../support/temp.ts';

const run = promisify(execFile);
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

async function localRun(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // A whole bridge starts in the child (a JVM among them): minutes on a busy 2-core machine.
    const { stdout, stderr } = await run(process.execPath, [CLI, 'local', 'run', ...args], { cwd: ROOT, timeout: 270_000, maxBuffer: 20 * 1024 * 1024, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** A job's status in a ledger table of a DynamoDB, or undefined when it has no row there. */
async function ledgerStatus(endpoint: string, table: string, jobId: string): Promise<string | undefined> {
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  try {
    return (await client.send(new GetItemCommand({ TableName: table, Key: { jobId: { S: jobId } } }))).Item?.status?.S;
  } catch (error) {
    if ((error as Error).name === 'ResourceNotFoundException') return undefined; // no such table: no row either
    throw error;
  } finally {
    client.destroy();
  }
}

const JOB_KEYS = ['file', 'jobId', 'kind', 'status', 'processingId', 'mosaicId', 'imageId', 'cost', 'results', 'error'];

describe('mapflow-bridge local run', () => {
  it('exits 0 with a JSON document of SUCCEEDED jobs and local copies of their results', { timeout: 300_000 }, async () => {
    // Prepare
    const out = await mkdtemp(path.join(testTmp(), 'mfb-out-'));
    // Act
    const result = await localRun(['--json', '--processing-seconds', '1', '--out', out, path.join(SAMPLES, 'bern-three-quarters.geojson')]);
    // Assess
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const document = JSON.parse(result.stdout) as { jobs: Record<string, unknown>[] };
    expect(Object.keys(document)).toEqual(['jobs', 'budgets']);
    const [job] = document.jobs;
    for (const key of JOB_KEYS) expect(job).toHaveProperty(key);
    expect(job).toMatchObject({ kind: 'geojson', status: 'SUCCEEDED', error: null });
    expect(job?.processingId).toBeTruthy();
    const results = job?.results as string[];
    expect(results.some((file) => file.endsWith('result.geojson'))).toBe(true);
    for (const file of results) {
      expect(file.startsWith(out)).toBe(true);
      expect(existsSync(file)).toBe(true);
    }
    expect((JSON.parse(readFileSync(results.find((f) => f.endsWith('result.geojson')) as string, 'utf8')) as { type: string }).type).toBe('FeatureCollection');
  });

  it('exits 1 when a job is REJECTED, and lists an unsupported file as REJECTED instead of skipping it', { timeout: 300_000 }, async () => {
    // Prepare
    const out = await mkdtemp(path.join(testTmp(), 'mfb-out-'));
    const text = await tempFile('readme.txt', 'not an input');
    // The ledger in a table of its own in the run's DynamoDB Local (--ledger-table), not in a JVM of its own
    const endpoint = await sharedDynamoDbEndpoint();
    const table = uniqueTableName('cli-rejected');
    // Act
    const result = await localRun(['--json', '--dynamodb-endpoint', endpoint, '--ledger-table', table, '--out', out, path.join(SAMPLE_DATA, 'aoi/caltrain-stations.geojson'), text]);
    // Assess
    expect(result.code, result.stderr.slice(-3000)).toBe(1);
    const { jobs } = JSON.parse(result.stdout) as { jobs: { file: string; status: string; error: { code: string; message: string } | null; jobId: string | null }[] };
    expect(jobs.map((job) => [path.basename(job.file), job.status, job.error?.code])).toEqual([
      ['caltrain-stations.geojson', 'REJECTED', 'NO_POLYGONS'],
      ['readme.txt', 'REJECTED', 'UNSUPPORTED_FILE_TYPE'],
    ]);
    expect(jobs[0]?.jobId).toBeTruthy();
    expect(jobs[1]?.error?.message).toContain('.geojson');
    // --ledger-table: the rows are in that table (created when missing), not in the default one
    expect(await ledgerStatus(endpoint, table, jobs[0]!.jobId!)).toBe('REJECTED');
    expect(await ledgerStatus(endpoint, 'mapflow-bridge-ledger', jobs[0]!.jobId!)).toBeUndefined();
  });

  it('exits 2 on a usage error (a file that does not exist) before starting anything', async () => {
    // Act
    const result = await localRun(['--json', path.join(ROOT, 'no-such-file.geojson')]);
    // Assess
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('no such file');
  });

  it('keeps the ledger in a given DynamoDB (--dynamodb-endpoint) and then needs no Java', { timeout: 300_000 }, async () => {
    // Prepare: the run's DynamoDB Local, and a PATH on which no java can be found
    const endpoint = await sharedDynamoDbEndpoint();
    const out = await mkdtemp(path.join(testTmp(), 'mfb-out-'));
    const emptyPath = await mkdtemp(path.join(testTmp(), 'mfb-no-java-'));
    // Act
    const result = await localRun(['--json', '--processing-seconds', '1', '--dynamodb-endpoint', endpoint, '--out', out, path.join(SAMPLES, 'bern-three-quarters.geojson')], { PATH: emptyPath });
    // Assess: the job's row is in that DynamoDB, in the default ledger table
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const [job] = (JSON.parse(result.stdout) as { jobs: { jobId: string; status: string }[] }).jobs;
    expect(job?.status).toBe('SUCCEEDED');
    expect(await ledgerStatus(endpoint, 'mapflow-bridge-ledger', job!.jobId)).toBe('SUCCEEDED');
  });

  it('exits 2 on a --dynamodb-endpoint that is not an http(s) URL', async () => {
    // Act
    const result = await localRun(['--dynamodb-endpoint', 'ftp://127.0.0.1:8000', path.join(SAMPLES, 'bern-three-quarters.geojson')]);
    // Assess
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--dynamodb-endpoint: the DynamoDB endpoint must be an http(s) URL');
  });

  it('stops at once with one clear line when the given Mapflow does not answer, or refuses the token', { timeout: 60_000 }, async () => {
    // Prepare: a simulator that knows another token, and a port where nothing listens
    const sim = await startSimulator({ token: 'the-right-token', email: 'e@example.com' });
    const file = path.join(SAMPLES, 'bern-three-quarters.geojson');
    try {
      // Act
      // (--mapflow-wait: the check asks a Mapflow that does not answer for 30 s by default)
      const unreachable = await localRun(['--json', '--mapflow-url', 'http://127.0.0.1:1/rest', '--token', 'x', '--mapflow-wait', '2', file]);
      const refused = await localRun(['--json', '--mapflow-url', sim.url, '--token', 'a-wrong-token', '--email', 'e@example.com', file]);
      // Assess: exit 1, nothing on stdout, the reason on stderr, no token echoed
      expect(unreachable.code).toBe(1);
      expect(unreachable.stdout).toBe('');
      expect(unreachable.stderr).toMatch(/cannot use Mapflow at http:\/\/127\.0\.0\.1:1\/rest: it does not answer \(\d+ attempts in 2 s/);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/it refused the token \(HTTP 401\)/);
      expect(refused.stderr).not.toContain('a-wrong-token');
      expect(sim.stats().processingsCreated).toBe(0);
    } finally {
      await sim.close();
    }
  });
});

describe('mapflow-bridge start on a state folder another bridge uses', () => {
  it('says which process holds the folder and exits 2, leaving that bridge\'s endpoints.json alone', { timeout: 60_000 }, async () => {
    // Prepare: this process holds the folder, as a running `start` does, with its endpoints.json
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-state-'));
    const lock = await lockStateDir(stateDir, 'mapflow-bridge start');
    const endpoints = JSON.stringify({ s3: 'http://127.0.0.1:4568', dynamodb: 'http://127.0.0.1:1', pid: process.pid });
    await writeFile(path.join(stateDir, 'endpoints.json'), endpoints);
    try {
      // Act
      const result = await run(process.execPath, [CLI, 'start', '--state-dir', stateDir, '--no-samples'], { cwd: ROOT, timeout: 50_000 }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code, stdout: error.stdout ?? '', stderr: error.stderr ?? '' }),
      );
      // Assess
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`${stateDir} is in use by another bridge: pid ${process.pid} (mapflow-bridge start`);
      expect(await readFile(path.join(stateDir, 'endpoints.json'), 'utf8')).toBe(endpoints);
    } finally {
      await lock.release();
    }
  });
});
