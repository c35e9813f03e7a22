/**
 * Issue 39 (5): a kill -9 of one function's process (Store Results) mid-job
 * failed a good job RUNTIME_EXIT_ERROR, though its processing had finished.
 * A function process that dies from outside now runs its invocation once
 * more, as a step that is safe to repeat: the job ends SUCCEEDED, with its one
 * processing. The process is found by the runtime's own bookkeeping (the
 * pids of a function's environments invoked now), while its result download
 * is held at a gate in front of the simulator (packages/bench/result-gate.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditMapflow, squareAoiText } from '../../packages/bench/fault-suite.ts';
import { startLocalBridge, type LocalBridge } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { tempFile } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';
import { startResultGate, type ResultGate } from '../../packages/bench/result-gate.ts';
import { processingsOf, RELIABILITY_BRIDGE_OPTIONS } from './support.ts';

const TOKEN = 'killed-function-token-7c2e91';
const EMAIL = 'killed-function@mapflow-bridge.invalid';

describe('a function process killed from outside mid-job', { timeout: 240_000 }, () => {
  let simulator: RunningSimulator;
  let simulatorDir: string;
  let gate: ResultGate;
  let bridge: LocalBridge | undefined;
  const lines: string[] = [];

  beforeAll(async () => {
    simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-killed-fn-sim-'));
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 2, seed: 11, dataDir: simulatorDir });
    gate = await startResultGate(simulator.url);
  });
  afterAll(async () => {
    await bridge?.close();
    await gate?.close();
    await simulator?.close();
    await rm(simulatorDir, { recursive: true, force: true });
  });

  it('runs Store Results once more: the job ends SUCCEEDED with one processing and one final event', async () => {
    // Prepare: a job whose Store Results waits on its result download (held at the gate)
    bridge = await startLocalBridge({
      ...RELIABILITY_BRIDGE_OPTIONS,
      ...(await sharedLedgerOptions('killedfn')),
      mapflow: { url: gate.url, token: TOKEN, email: EMAIL },
      log: (line) => lines.push(line),
    });
    const { jobId } = await bridge.putInbox(await tempFile('killed.geojson', squareAoiText('killed', 9.18, 48.77)), 'killed.geojson');
    await gate.arrivals(1);
    const storeResults = [...bridge.assembly.functions.values()].find((fn) => fn.spec.bridgeFunction === 'store-results');
    const [pid] = storeResults?.busyProcessIds ?? [];
    expect(pid).toBeTypeOf('number');

    // Act: kill -9 of that process alone; the result downloads go through from now on
    gate.open();
    process.kill(pid as number, 'SIGKILL');
    const row = await bridge.waitForJob(jobId, { timeoutMs: 120_000 });

    // Assess: SUCCEEDED, the one processing, one final event; the bridge said what it did
    const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
    const finals = (await readEvents(bridge.eventsFile)).filter(
      (event) => event.detail.jobId === jobId && ['Job Succeeded', 'Job Failed', 'Job Rejected'].includes(event.detailType),
    );
    expect(row?.status).toBe('SUCCEEDED');
    expect(processingsOf(audit, jobId)).toHaveLength(1);
    expect(simulator.stats().processingsCreated).toBe(1);
    expect(finals.map((event) => event.detailType)).toEqual(['Job Succeeded']);
    expect(gate.arrived).toBe(2);
    expect(lines.join('\n')).toMatch(/store-results's process was killed from outside \(Runtime\.ExitError: Runtime exited with error: signal: SIGKILL\); its invocation runs once more/);
  });
});
