/**
 * Issue 39 (2): slow network steps do not starve the rest. With the live
 * service's result delay, two Store Results waiting on Mapflow held the whole
 * budget of the functions' environments: dispatch, polls and Finish Part
 * queued behind them, a file dropped after a restart waited 404 s for its
 * Job Received, and Ctrl-C took 30-95 s (it waited for the downloads).
 *
 * Here the result downloads are held at a gate in front of the simulator
 * (packages/bench/result-gate.ts) for as long as the test needs, so what is asserted is an
 * order of events, not a time: the bridge stops while the downloads are
 * still held; the bridge started again resumes both jobs into Store Results
 * (held again), and a new file's Job Received comes while they still wait.
 * The delays are printed (docs/reliability.md quotes them).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditMapflow, squareAoiText } from '../../packages/bench/fault-suite.ts';
import { startLocalBridge, type LocalBridge, type LocalBridgeOptions } from '../../packages/local/src/bridge.ts';
import type { LocalEvent } from '../../packages/local/src/events/file.ts';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { tempFile } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';
import { startResultGate, type ResultGate } from '../../packages/bench/result-gate.ts';
import { processingsOf, RELIABILITY_BRIDGE_OPTIONS } from './support.ts';

const TOKEN = 'slow-results-token-3a9d40';
const EMAIL = 'slow-results@mapflow-bridge.invalid';

describe('Store Results waiting on slow result downloads', { timeout: 300_000 }, () => {
  let simulator: RunningSimulator;
  let simulatorDir: string;
  let stateDir: string;
  let gate: ResultGate;
  let bridge: LocalBridge | undefined;
  let ledger: Pick<LocalBridgeOptions, 'dynamodbEndpoint' | 'ledgerTable'>;
  /** Every event as the bridge publishes it, with what the gate had let through by then. */
  const seen: { event: LocalEvent; released: number; at: number }[] = [];

  const options = (): LocalBridgeOptions => ({
    ...RELIABILITY_BRIDGE_OPTIONS,
    ...ledger,
    stateDir,
    mapflow: { url: gate.url, token: TOKEN, email: EMAIL },
    // The default of a machine with 8 GB or more, whatever this one has: two Store Results of 1,024 MiB fill the decoding share.
    environmentBudget: { totalMb: 4096 },
    onEvent: (event) => seen.push({ event, released: gate.released, at: Date.now() }),
  });

  beforeAll(async () => {
    simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-slow-results-sim-'));
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-slow-results-state-'));
    ledger = await sharedLedgerOptions('slowresults');
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 2, seed: 13, dataDir: simulatorDir });
    gate = await startResultGate(simulator.url);
  });
  afterAll(async () => {
    await bridge?.close();
    await gate?.close();
    await simulator?.close();
    await rm(simulatorDir, { recursive: true, force: true });
    await rm(stateDir, { recursive: true, force: true });
  });

  it('stops without waiting for them, and after a restart a new file gets its Job Received while they still wait', async () => {
    // Prepare: two jobs in Store Results, their downloads held
    bridge = await startLocalBridge(options());
    const slow: string[] = [];
    for (const [index, name] of ['slow-a.geojson', 'slow-b.geojson'].entries()) {
      slow.push((await bridge.putInbox(await tempFile(name, squareAoiText(name, 11.57 + index * 0.01, 48.13)), name)).jobId);
    }
    await gate.arrivals(2);

    // Act 1: the stop (what Ctrl-C runs) while both downloads are held
    const stopStarted = Date.now();
    await bridge.close();
    const stopMs = Date.now() - stopStarted;
    bridge = undefined;

    // Assess 1: it ended with no download answered (it did not wait for them)
    expect(gate.released).toBe(0);

    // Act 2: a start on the same state resumes both jobs into Store Results (held again), then a new file
    bridge = await startLocalBridge(options());
    await gate.arrivals(4);
    const droppedAt = Date.now();
    const { jobId: late } = await bridge.putInbox(await tempFile('late.geojson', squareAoiText('late', 11.6, 48.15)), 'late.geojson');
    const received = await receivedOf(late);

    // Assess 2: the new file's Job Received came while the resumed jobs still waited on their downloads
    expect(received.released).toBe(0);
    expect(seen.filter((entry) => slow.includes(entry.event.detail.jobId) && entry.event.detailType === 'Job Succeeded')).toEqual([]);

    // Act 3: the downloads go through
    gate.open();
    const rows = await Promise.all([...slow, late].map((jobId) => (bridge as LocalBridge).waitForJob(jobId, { timeoutMs: 180_000 })));

    // Assess 3: all three SUCCEEDED, one processing each
    expect(rows.map((row) => row?.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
    for (const jobId of [...slow, late]) expect(processingsOf(audit, jobId)).toHaveLength(1);
    console.log(
      `slow results: the stop took ${stopMs} ms with two result downloads held; ` +
        `a file dropped after the restart, with two resumed Store Results waiting, got its Job Received after ${received.at - droppedAt} ms`,
    );
  });

  /** The Job Received of `jobId`, once the bridge has published it (the event follower hands it over). */
  async function receivedOf(jobId: string): Promise<{ released: number; at: number }> {
    for (;;) {
      const found = seen.find((entry) => entry.event.detail.jobId === jobId && entry.event.detailType === 'Job Received');
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
});
