/**
 * Issue 39, chaos: the Mapflow simulator stops under a job in its processing
 * and comes back on the same address, with its data and without it. With its
 * data the job goes on and ends SUCCEEDED on its first processing. Without it
 * (Mapflow lost the processing: its own fault) the job ends FAILED, once, with
 * a report that names the processing Mapflow no longer has; nothing is
 * created twice behind the user's back.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { squareAoiText } from '../../packages/bench/fault-suite.ts';
import { startLocalBridge, type LocalBridge } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { sharedLedger, tempFile } from '../e2e/helpers.ts';
import { testTmp } from '../support/temp.ts';
import { eventually, RELIABILITY_BRIDGE_OPTIONS } from './support.ts';

const TOKEN = 'mapflow-restart-token-61d0a7';
const EMAIL = 'mapflow-restart@mapflow-bridge.invalid';
const FINAL = ['Job Succeeded', 'Job Failed', 'Job Rejected'];

describe('the Mapflow simulator stops mid-processing and comes back on the same address', { timeout: 240_000 }, () => {
  let simulator: RunningSimulator;
  let simulatorDir: string;
  let bridge: LocalBridge;
  const dirs: string[] = [];

  beforeAll(async () => {
    simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-mapflow-restart-sim-'));
    dirs.push(simulatorDir);
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 8, seed: 9, dataDir: simulatorDir });
    bridge = await startLocalBridge({ mapflow: { url: simulator.url, token: TOKEN, email: EMAIL }, ...RELIABILITY_BRIDGE_OPTIONS, ...(await sharedLedger({})) });
  });
  afterAll(async () => {
    await bridge?.close();
    await simulator?.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  const inProcessing = async (name: string, lon: number) => {
    const job = await bridge.putInbox(await tempFile(`${name}.geojson`, squareAoiText(name, lon, 46.94)), `${name}.geojson`);
    const processingId = await eventually(async () => {
      const row = await bridge.ledger.get(job.jobId);
      return row?.status === 'IN_PROGRESS' ? row.processingId : undefined;
    }, { timeoutMs: 60_000 });
    return { ...job, processingId: processingId! };
  };
  const finalEvents = async (jobId: string) => (await readEvents(bridge.eventsFile)).filter((e) => e.detail.jobId === jobId && FINAL.includes(e.detailType));

  it('with its data: the job ends SUCCEEDED on its first processing', async () => {
    // Prepare
    const job = await inProcessing('with-data', 7.44);
    // Act: Mapflow stops and starts again on its data
    await simulator.close();
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 1, seed: 9, dataDir: simulatorDir, port: simulator.port });
    const row = await bridge.waitForJob(job.jobId, { timeoutMs: 120_000 });
    // Assess
    expect(row?.status).toBe('SUCCEEDED');
    expect(row?.processingId).toBe(job.processingId);
    expect(simulator.stats().processingsCreated).toBe(0); // none since it came back
    expect((await finalEvents(job.jobId)).map((e) => e.detailType)).toEqual(['Job Succeeded']);
  });

  it('without its data: the job ends FAILED once, its report naming the processing Mapflow lost', async () => {
    // Prepare
    const job = await inProcessing('without-data', 7.6);
    // Act: Mapflow stops and starts again with nothing (a fresh data folder)
    await simulator.close();
    const empty = await mkdtemp(path.join(testTmp(), 'mfb-mapflow-restart-empty-'));
    dirs.push(empty);
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 1, seed: 9, dataDir: empty, port: simulator.port });
    const row = await bridge.waitForJob(job.jobId, { timeoutMs: 120_000 });
    // Assess
    expect(row?.status).toBe('FAILED');
    expect(`${row?.error?.code}: ${row?.error?.message}`).toContain(job.processingId);
    expect(simulator.stats().processingsCreated).toBe(0); // not made again behind the user's back
    expect((await finalEvents(job.jobId)).map((e) => e.detailType)).toEqual(['Job Failed']);
  });
});
