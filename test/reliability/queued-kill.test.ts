/**
 * Issue 24, "blocks nothing": the bridge stops (its executions with it, as a
 * kill -9 stops them) while one job holds the only slot and others wait
 * QUEUED on a task token that dies with the process. The next start resumes
 * them all: the dead holder and the dead tokens must not keep anyone waiting.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditMapflow, slotHolders, squareAoiText } from '../../packages/bench/fault-suite.ts';
import { startLocalBridge, type LocalBridge, type LocalBridgeOptions } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { tempFile } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';
import { eventually, processingsOf, RELIABILITY_BRIDGE_OPTIONS } from './support.ts';

const TOKEN = 'queued-kill-token-7a20e4';
const EMAIL = 'queued-kill@mapflow-bridge.invalid';
const FINAL = ['Job Succeeded', 'Job Failed', 'Job Rejected'];

describe('jobs queued for a slot when the bridge stops', { timeout: 240_000 }, () => {
  let simulator: RunningSimulator;
  let simulatorDir: string;
  let stateDir: string;
  let bridge: LocalBridge | undefined;
  let options: LocalBridgeOptions;

  beforeAll(async () => {
    simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-queued-kill-sim-'));
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-queued-kill-state-'));
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 4, seed: 3, dataDir: simulatorDir });
    options = {
      stateDir,
      ...(await sharedLedgerOptions('queued-kill')),
      mapflow: { url: simulator.url, token: TOKEN, email: EMAIL },
      ...RELIABILITY_BRIDGE_OPTIONS,
      maxConcurrentProcessings: 1,
    };
  });
  afterAll(async () => {
    await bridge?.close();
    await simulator?.close();
    await rm(simulatorDir, { recursive: true, force: true });
    await rm(stateDir, { recursive: true, force: true });
  });

  it('all end SUCCEEDED after the next start, one processing each, one final event each, no slot left', async () => {
    // Prepare: one job in its processing, two queued behind it
    bridge = await startLocalBridge(options);
    const first = bridge;
    const jobs: Awaited<ReturnType<LocalBridge['putInbox']>>[] = [];
    for (const [name, lon, lat] of [['q-bern', 7.44, 46.94], ['q-zurich', 8.54, 47.37], ['q-basel', 7.59, 47.56]] as const) {
      jobs.push(await first.putInbox(await tempFile(`${name}.geojson`, squareAoiText(name, lon, lat)), `${name}.geojson`));
    }
    await eventually(async () => {
      const rows = await Promise.all(jobs.map((job) => first.ledger.get(job.jobId)));
      const statuses = rows.map((row) => row?.status);
      return statuses.filter((s) => s === 'IN_PROGRESS').length === 1 && statuses.filter((s) => s === 'QUEUED').length === 2 ? true : undefined;
    });

    // Act: the bridge stops with them; a new one starts on the same state
    await first.close();
    bridge = await startLocalBridge(options);
    const rows = await Promise.all(jobs.map((job) => bridge!.waitForJob(job.jobId, { timeoutMs: 90_000 })));

    // Assess
    expect(rows.map((row) => row?.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
    for (const job of jobs) expect(processingsOf(audit, job.jobId)).toHaveLength(1);
    const events = await readEvents(bridge.eventsFile);
    for (const job of jobs) expect(events.filter((e) => e.detail.jobId === job.jobId && FINAL.includes(e.detailType))).toHaveLength(1);
    expect(await slotHolders(bridge)).toEqual([]);
  });
});
