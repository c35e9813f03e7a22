/**
 * Shared pieces of the reliability suites: a local bridge pointed at a
 * simulator the test starts itself (so the test knows the token, chooses the
 * faults, and can audit Mapflow's side through the API and the state file),
 * and small helpers to look at slots, events and executions.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { auditMapflow, slotHolders, type MapflowAudit } from '../../packages/bench/fault-suite.ts';
import { ConcurrencySlots } from '../../functions/ledger/slots.ts';
import { startLocalBridge, type LocalBridge, type LocalBridgeOptions } from '../../packages/local/src/bridge.ts';
import type { ExecutionRecord, LocalEngine } from '../../packages/local/src/engine/engine.ts';
import { readEvents, type LocalEvent } from '../../packages/local/src/events/file.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../packages/simulator/src/index.ts';
import { sharedLedger } from '../e2e/helpers.ts';
import { RELIABILITY_ROUTES } from '../support/routes.ts';
import { testTmp } from '../support/temp.ts';

/** The local bridge as the reliability suites run it: short waits, no drop folder, no timed reconciler, quiet. */
export const RELIABILITY_BRIDGE_OPTIONS = {
  routes: RELIABILITY_ROUTES,
  dropFolder: false,
  reconcileIntervalMs: 0,
  retryIntervalMs: 50,
  waitOverridesMs: { 'Wait For Slot': 200, 'Wait For Processing': 300 },
  log: () => undefined,
} satisfies LocalBridgeOptions;

export interface ReliabilityBridge {
  bridge: LocalBridge;
  simulator: RunningSimulator;
  token: string;
  email: string;
  simulatorDir: string;
  /** Every execution that stopped, in order. */
  executions: ExecutionRecord[];
  /** What Mapflow holds (processings by job part, duplicates). */
  audit(): Promise<MapflowAudit>;
  /** Current concurrency slot holders. */
  slots(): Promise<string[]>;
  /** A ConcurrencySlots on the bridge's ledger table with its own maximum. */
  slotsWithMax(max: number): ConcurrencySlots;
  events(jobId?: string): Promise<LocalEvent[]>;
  close(): Promise<void>;
}

export interface ReliabilityBridgeOptions {
  simulator?: Omit<Partial<SimulatorOptions>, 'token' | 'email' | 'dataDir'>;
  bridge?: LocalBridgeOptions;
  /** Default: a fresh random token. */
  token?: string;
  email?: string;
}

export async function startReliabilityBridge(options: ReliabilityBridgeOptions = {}): Promise<ReliabilityBridge> {
  const token = options.token ?? `rel-${randomBytes(16).toString('hex')}`;
  const email = options.email ?? 'reliability@mapflow-bridge.invalid';
  const simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-reliability-sim-'));
  const simulator = await startSimulator({ processingSeconds: 2, seed: 7, ...options.simulator, token, email, dataDir: simulatorDir });
  const executions: ExecutionRecord[] = [];
  let bridge: LocalBridge;
  try {
    bridge = await startLocalBridge({
      mapflow: { url: simulator.url, token, email },
      ...RELIABILITY_BRIDGE_OPTIONS,
      ...(await sharedLedger(options.bridge ?? {})),
      ...options.bridge,
      onExecutionStopped: (execution) => {
        executions.push({ ...execution });
        options.bridge?.onExecutionStopped?.(execution);
      },
    });
  } catch (error) {
    await simulator.close();
    throw error;
  }
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: bridge.endpoints.dynamodb, region: 'us-east-1', credentials: bridge.credentials }),
  );
  return {
    bridge,
    simulator,
    token,
    email,
    simulatorDir,
    executions,
    audit: () => auditMapflow(simulator.url, token, email, simulatorDir),
    slots: () => slotHolders(bridge),
    slotsWithMax: (max) => new ConcurrencySlots(doc, bridge.ledgerTable, max),
    events: async (jobId) => (await readEvents(bridge.eventsFile)).filter((event) => jobId === undefined || event.detail.jobId === jobId),
    async close() {
      doc.destroy();
      await bridge.close();
      await simulator.close();
      await rm(simulatorDir, { recursive: true, force: true });
    },
  };
}

/** The Mapflow processings of one job part (from the audit). */
export function processingsOf(audit: MapflowAudit, jobId: string, part = 0): string[] {
  return audit.processingsByPart.get(`${jobId}#${part}`) ?? [];
}

/**
 * StopExecution for one local execution (what an operator's "Stop" or a
 * crashed worker does): the execution stops without running any Catch, so
 * Fail Job never runs.
 */
export function stopExecution(engine: LocalEngine, name: string): void {
  if (engine.describe(name)?.status !== 'RUNNING') throw new Error(`no running execution named ${name}`);
  void engine.stopExecution(name);
}

/** Polls `check` every `everyMs` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function eventually<T>(check: () => Promise<T | undefined>, { timeoutMs = 30_000, everyMs = 100 } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** What a command started by a test said, line by line (stdout and stderr), and a wait for a line. */
export interface FollowedLines {
  /** Every line so far, in order. */
  readonly lines: string[];
  /** Resolves at the first line (said already, or to come) matching `pattern`; rejects if the process exits first. */
  lineMatching(pattern: RegExp): Promise<string>;
  readonly exited: Promise<unknown>;
}

/** Follows `child`'s output; each line also goes to `alsoInto` (the lines of several runs, shown when a test fails). */
export function followLines(child: ChildProcess, alsoInto?: string[]): FollowedLines {
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const onLine = (line: string) => {
    lines.push(line);
    alsoInto?.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.pattern.test(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  const exited = once(child, 'exit');
  return {
    lines,
    exited,
    lineMatching: (pattern) =>
      new Promise<string>((resolve, reject) => {
        const seen = lines.find((line) => pattern.test(line));
        if (seen) return resolve(seen);
        waiters.push({ pattern, resolve });
        void exited.then(() => reject(new Error(`the process exited before a line matching ${pattern}; its output:\n${lines.slice(-30).join('\n')}`)));
      }),
  };
}
