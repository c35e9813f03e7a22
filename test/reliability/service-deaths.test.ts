/**
 * Issue 39, point 3: a dead service does not go unnoticed. The bridge runs its
 * own DynamoDB Local (a JVM) and s3rver as child processes; each is killed
 * with SIGKILL mid-job, alone. The bridge names the dead service in one line
 * within 10 s (its exit event), starts it again on the same port and data,
 * and the jobs finish without a restart by hand: SUCCEEDED, one processing,
 * one final event each.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { squareAoiText } from '../../packages/bench/fault-suite.ts';
import { startLocalBridge, type LocalBridge } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { tempFile } from '../e2e/helpers.ts';
import { testTmp } from '../support/temp.ts';
import { eventually, processingsOf, RELIABILITY_BRIDGE_OPTIONS } from './support.ts';
import { auditMapflow } from '../../packages/bench/fault-suite.ts';

const TOKEN = 'service-deaths-token-93be10';
const EMAIL = 'service-deaths@mapflow-bridge.invalid';
const FINAL = ['Job Succeeded', 'Job Failed', 'Job Rejected'];

/** The promise, or a failure naming what never came within `ms` (a bound on a failing run, not a wait). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within ${ms / 1000} s`)), ms)));
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

describe('a service the bridge started dies mid-job', { timeout: 300_000 }, () => {
  let simulator: RunningSimulator;
  let simulatorDir: string;
  let stateDir: string;
  let bridge: LocalBridge | undefined;
  const lines: { at: number; line: string }[] = [];
  const waiters: { pattern: RegExp; resolve: (at: number) => void }[] = [];
  /** Resolves with the time of the first line (from now on) that matches. */
  const lineMatching = (pattern: RegExp): Promise<number> => new Promise((resolve) => waiters.push({ pattern, resolve }));

  beforeAll(async () => {
    simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-service-deaths-sim-'));
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-service-deaths-state-'));
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 6, seed: 4, dataDir: simulatorDir });
    // Its own DynamoDB Local (no dynamodbEndpoint): the JVM is the bridge's child, as with `npm start`.
    bridge = await startLocalBridge({
      stateDir,
      mapflow: { url: simulator.url, token: TOKEN, email: EMAIL },
      ...RELIABILITY_BRIDGE_OPTIONS,
      restartCommand: `npx mapflow-bridge start --state-dir ${stateDir}`,
      log: (line) => {
        lines.push({ at: Date.now(), line });
        for (const waiter of waiters.filter((w) => w.pattern.test(line))) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(Date.now());
        }
      },
    });
  });
  afterAll(async () => {
    await bridge?.close();
    await simulator?.close();
    await rm(simulatorDir, { recursive: true, force: true });
    await rm(stateDir, { recursive: true, force: true });
  });

  const inFlight = async (name: string, lon: number, lat: number) => {
    const job = await bridge!.putInbox(await tempFile(`${name}.geojson`, squareAoiText(name, lon, lat)), `${name}.geojson`);
    await eventually(async () => ((await bridge!.ledger.get(job.jobId))?.status === 'IN_PROGRESS' ? true : undefined), { timeoutMs: 60_000 });
    return job;
  };

  it.each([
    { service: 'dynamodb' as const, named: /DynamoDB Local \(the ledger\) \(pid \d+\) killed by SIGKILL/, back: /DynamoDB Local \(the ledger\) is back/ },
    { service: 's3' as const, named: /s3rver \(the local S3\) \(pid \d+\) killed by SIGKILL/, back: /s3rver \(the local S3\) is back/ },
  ])('$service killed -9: named within 10 s, started again on the same endpoint, the job ends SUCCEEDED', async ({ service, named, back }) => {
    // Prepare: a job in its processing
    const job = await inFlight(`dies-${service}`, service === 'dynamodb' ? 7.44 : 8.54, service === 'dynamodb' ? 46.94 : 47.37);
    const endpoints = { ...bridge!.endpoints };
    const pid = bridge!.servicePids()[service]!;
    const namedLine = lineMatching(named);
    const backLine = lineMatching(back);

    // Act: the service alone is killed
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    const namedAt = await within(namedLine, 30_000, 'line naming the dead service');
    const backAt = await within(backLine, 120_000, 'line saying it is back');
    console.log(`${service} killed -9: named after ${namedAt - killedAt} ms, back after ${((backAt - killedAt) / 1000).toFixed(1)} s`);
    const row = await bridge!.waitForJob(job.jobId, { timeoutMs: 120_000 });

    // Assess
    expect(namedAt - killedAt).toBeLessThan(10_000);
    expect(lines.find((l) => named.test(l.line))?.line).toContain(service === 'dynamodb' ? stateDir : path.join(stateDir, 's3'));
    expect(bridge!.servicePids()[service]).not.toBe(pid);
    expect(bridge!.endpoints).toEqual(endpoints);
    expect(row?.status).toBe('SUCCEEDED');
    const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
    expect(processingsOf(audit, job.jobId)).toHaveLength(1);
    const finals = (await readEvents(bridge!.eventsFile)).filter((e) => e.detail.jobId === job.jobId && FINAL.includes(e.detailType));
    expect(finals.map((e) => e.detailType)).toEqual(['Job Succeeded']);
  });
});
