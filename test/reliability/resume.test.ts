/**
 * Nothing lost, nothing doubled across a crash of the local bridge: the
 * bridge stops while a job polls its processing (every execution is stopped,
 * as when the process dies), a new bridge starts on the same state directory
 * and resumes the unfinished job. The job ends SUCCEEDED with the processing
 * the first run created (no second create), one final event, no slot left.
 * Mapflow (the simulator) keeps running across the restart, as the real
 * service would.
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
import { eventually, processingsOf, RELIABILITY_BRIDGE_OPTIONS } from './support.ts';
import { testTmp } from '../support/temp.ts';

const TOKEN = 'resume-test-token-5d1f0c';
const EMAIL = 'resume@mapflow-bridge.invalid';

describe('a bridge restarted mid-job resumes it without a second processing', { timeout: 240_000 }, () => {
  let simulator: RunningSimulator;
  let simulatorDir: string;
  let stateDir: string;
  let bridge: LocalBridge | undefined;
  // The ledger outlives each bridge in the run's DynamoDB Local, as it would in DynamoDB.
  let ledger: Pick<LocalBridgeOptions, 'dynamodbEndpoint' | 'ledgerTable'>;

  const options = (): LocalBridgeOptions => ({
    stateDir,
    ...ledger,
    mapflow: { url: simulator.url, token: TOKEN, email: EMAIL },
    ...RELIABILITY_BRIDGE_OPTIONS,
  });

  beforeAll(async () => {
    simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-resume-sim-'));
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-resume-state-'));
    ledger = await sharedLedgerOptions('resume');
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 6, seed: 5, dataDir: simulatorDir });
  });
  afterAll(async () => {
    await bridge?.close();
    await simulator?.close();
    await rm(simulatorDir, { recursive: true, force: true });
    await rm(stateDir, { recursive: true, force: true });
  });

  it('finishes the job SUCCEEDED with the first run’s processing, one final event, no slot left', async () => {
    // Prepare: a job polling its processing
    bridge = await startLocalBridge(options());
    const first = bridge;
    const { jobId } = await first.putInbox(await tempFile('crash.geojson', squareAoiText('crash', 16.37, 48.2)), 'crash.geojson');
    const processingId = await eventually(async () => {
      const row = await first.ledger.get(jobId);
      return row?.status === 'IN_PROGRESS' ? row.processingId : undefined;
    });
    // Act: the bridge stops (its executions with it), a new one starts on the same state
    await first.close();
    bridge = await startLocalBridge(options());
    const row = await bridge.waitForJob(jobId, { timeoutMs: 40_000 });
    const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
    const finals = (await readEvents(bridge.eventsFile)).filter(
      (event) => event.detail.jobId === jobId && ['Job Succeeded', 'Job Failed', 'Job Rejected'].includes(event.detailType),
    );
    // Assess
    expect(row?.status).toBe('SUCCEEDED');
    expect(row?.processingId).toBe(processingId);
    expect(processingsOf(audit, jobId)).toEqual([processingId]);
    expect(simulator.stats().processingsCreated).toBe(1);
    expect(finals.map((event) => event.detailType)).toEqual(['Job Succeeded']);
    expect(await slotHolders(bridge)).toEqual([]);
  });
});
