/**
 * Issue 39, done-when: "Three kill -9 in a row during a good job's result
 * download end SUCCEEDED, with one processing." `mapflow-bridge start` runs as
 * a user runs it, in a process group of its own, against the simulator behind
 * a gate that holds every result download (packages/bench/result-gate.ts: the
 * live service's long result delay, ended by the test). Three times, the
 * whole group is killed -9 while the job's Store Results waits on its
 * download, and started again on the same state folder; the fourth start gets
 * the download through. No kill is taken as the file's (no PROCESS_CRASHED),
 * and the processing is never created twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFailed } from 'vitest';
import { auditMapflow } from '../../packages/bench/fault-suite.ts';
import { startResultGate } from '../../packages/bench/result-gate.ts';
import { startSimulator } from '../../packages/simulator/src/index.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';
import { followLines, type FollowedLines } from './support.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');
const SAMPLE = path.join(ROOT, 'packages/local/samples/bern-three-quarters.geojson');
const TOKEN = 'download-kills-token-5b1d';
const EMAIL = 'download-kills@mapflow-bridge.invalid';
const KILLS = 3;
const FINAL = ['Job Succeeded', 'Job Failed', 'Job Rejected', 'Job Cancelled'];

/** One `start` in a process group of its own, its lines followed (and kept in `lines` too). */
function startBridge(args: string[], lines: string[]): FollowedLines & { child: ChildProcess } {
  const child = spawn(process.execPath, [CLI, 'start', ...args], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', POWERTOOLS_LOG_LEVEL: 'ERROR' },
  });
  return { child, ...followLines(child, lines) };
}

describe('three kill -9 in a row during a result download', () => {
  it('end SUCCEEDED with one processing and one final event, the kills never blamed on the file', { timeout: 300_000 }, async () => {
    // Prepare: Mapflow in this process behind the result gate; one file in the drop folder
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-download-kills-'));
    const simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-download-kills-sim-'));
    const simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 1, seed: 39, dataDir: simulatorDir });
    const gate = await startResultGate(simulator.url);
    const args = [
      '--state-dir', stateDir, '--out', path.join(stateDir, 'out'), '--no-samples', '--no-console', '--drop-stable-seconds', '0.2',
      '--mapflow-url', gate.url, '--token', TOKEN, '--email', EMAIL, '--poll-policy', '{"initialSeconds":1,"maxSeconds":2,"maxJobSeconds":3600,"nearEndSeconds":1}',
      ...(await sharedLedgerArgs('dlkills')),
    ];
    const lines: string[] = [];
    onTestFailed(() => console.log(`the bridges' last lines:\n${lines.slice(-60).join('\n')}`));
    let running: ReturnType<typeof startBridge> | undefined;
    try {
      // Act: three starts, each killed -9 (the whole group) while Store Results waits on the download
      for (let kill = 1; kill <= KILLS; kill += 1) {
        running = startBridge(args, lines);
        await running.lineMatching(/Waiting for files/);
        if (kill === 1) {
          await mkdir(path.join(stateDir, 'drop'), { recursive: true });
          await copyFile(SAMPLE, path.join(stateDir, 'drop', 'kept.geojson'));
        }
        await gate.arrivals(kill);
        process.kill(-running.child.pid!, 'SIGKILL');
        await running.exited;
      }
      // ... and a fourth start, whose download goes through
      gate.open();
      running = startBridge(args, lines);
      const end = await running.lineMatching(/kept\.geojson\s+Job (Succeeded|Failed|Rejected|Cancelled)/);
      const events = (await readFile(path.join(stateDir, 'events.jsonl'), 'utf8'))
        .split('\n')
        .filter((line) => line.trim())
        .map((line) => JSON.parse(line) as { detailType: string; detail: { jobId: string } });
      const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
      console.log(`download-kills: ${KILLS} kill -9 with the result download held (${gate.arrived} downloads asked, ${gate.released} let through); ${end.trim()}`);

      // Assess: SUCCEEDED, one job, one final event, one processing; no start blamed the file
      expect(end).toMatch(/Job Succeeded/);
      const jobIds = [...new Set(events.map((event) => event.detail.jobId))];
      expect(jobIds).toHaveLength(1);
      expect(events.filter((event) => FINAL.includes(event.detailType)).map((event) => event.detailType)).toEqual(['Job Succeeded']);
      expect(audit.processings).toBe(1);
      expect(audit.duplicateProcessings).toBe(0);
      expect(simulator.stats().processingsCreated).toBe(1);
      expect(gate.arrived).toBeGreaterThanOrEqual(KILLS + 1);
      expect(lines.join('\n')).not.toMatch(/PROCESS_CRASHED|crashed the bridge/);
    } finally {
      if (running?.child.exitCode === null) {
        process.kill(-running.child.pid!, 'SIGTERM');
        await running.exited;
      }
      await gate.close();
      await simulator.close();
      await rm(stateDir, { recursive: true, force: true });
      await rm(simulatorDir, { recursive: true, force: true });
    }
  });
});
