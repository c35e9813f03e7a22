/**
 * Issue 39: a full disk is an error message, not a crash. `mapflow-bridge start` runs with its state folder on
 * a 200 MB tmpfs of its own (a mount namespace: `unshare --user --map-root-user --mount`, no root needed where
 * user namespaces are allowed); the test fills that disk, then frees it. The bridge says the disk is full and
 * what to do, goes on running, says when space is back; the jobs in flight while it was full wait for space
 * (the local S3, the DynamoDB gate and the events file hold their writes) and end SUCCEEDED, each with one
 * Mapflow processing and one final event; and a file dropped then ends SUCCEEDED.
 * Mapflow (the simulator) runs in this test's process, off the filled disk: on AWS it is not on the bridge's disk.
 * Where no mount namespace can be made (no unshare, user namespaces off), it is skipped and says why.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFailed } from 'vitest';
import { auditMapflow } from '../../packages/bench/fault-suite.ts';
import { START_EXIT_CODES } from '../../packages/cli/src/start.ts';
import { startSimulator } from '../../packages/simulator/src/index.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';
import { followLines } from './support.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');
const SAMPLE = path.join(ROOT, 'packages/local/samples/bern-three-quarters.geojson');
const UNSHARE = ['--user', '--map-root-user', '--mount', '--propagation', 'private'];
const TOKEN = 'full-disk-token';
const EMAIL = 'full-disk@mapflow-bridge.invalid';
/** The jobs in flight when the disk fills. */
const IN_FLIGHT = ['first', 'second', 'third'];
const FINAL = ['Job Succeeded', 'Job Failed', 'Job Rejected', 'Job Cancelled'];

/** Whether this machine lets a process mount a tmpfs in a mount namespace of its own. */
function canMountTmpfs(): boolean {
  if (process.platform !== 'linux') return false;
  const probe = spawnSync('unshare', [...UNSHARE, 'sh', '-c', 'd=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs "$d" && umount "$d" && rmdir "$d"'], { stdio: 'ignore' });
  return probe.status === 0;
}

/** Writes 1 MB chunks to `file` until the disk says ENOSPC. */
async function fillDisk(file: string): Promise<void> {
  const stream = createWriteStream(file);
  const chunk = Buffer.alloc(1024 * 1024);
  try {
    for (;;) {
      // once() rejects on 'error' (ENOSPC) and then drops its listeners; a second once(stream, 'error')
      // raced beside it stayed registered at every chunk (MaxListenersExceededWarning after ten).
      if (!stream.write(chunk)) await once(stream, 'drain');
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    stream.destroy();
  }
}

const mountable = canMountTmpfs();

describe('a full disk under the state folder', () => {
  it.skipIf(!mountable)('is said in one line with what to do, the bridge goes on, jobs in flight wait for space and succeed, and so does a file dropped then', { timeout: 300_000 }, async () => {
    // Prepare: Mapflow in this process; the bridge with its state folder on a 200 MB tmpfs seen only by it (and, through /proc/<pid>/root, by this test)
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-full-disk-'));
    const simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-full-disk-sim-'));
    // Processings long enough that the jobs are still in flight (polling, then storing results) when the disk is full.
    const simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 6, seed: 39, dataDir: simulatorDir });
    const args = [
      CLI, 'start', '--state-dir', stateDir, '--out', path.join(stateDir, 'out'), '--no-samples', '--no-console', '--drop-stable-seconds', '0.2',
      '--mapflow-url', simulator.url, '--token', TOKEN, '--email', EMAIL, '--poll-policy', '{"initialSeconds":1,"maxSeconds":3,"maxJobSeconds":3600,"nearEndSeconds":1}',
      ...(await sharedLedgerArgs('fulldisk')),
    ];
    const child = spawn('unshare', [...UNSHARE, 'sh', '-c', 'mount -t tmpfs -o size=200m tmpfs "$1" && shift 2 && exec "$@"', 'sh', stateDir, 'node', process.execPath, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', POWERTOOLS_LOG_LEVEL: 'ERROR' },
    });
    const { lines, lineMatching, exited } = followLines(child);
    // A failure (a time-out included) shows what the bridge said last.
    onTestFailed(() => console.log(`the bridge's last lines:\n${lines.slice(-40).join('\n')}`));
    // The state folder as the bridge sees it: its mount namespace's view of the path.
    const inside = (relative: string) => path.join(`/proc/${child.pid}/root`, stateDir, relative);
    try {
      await lineMatching(/Waiting for files/);
      // Jobs in flight: each has its processing submitted to Mapflow before the disk fills.
      await Promise.all(IN_FLIGHT.map((name) => copyFile(SAMPLE, inside(`drop/${name}.geojson`))));
      await Promise.all(IN_FLIGHT.map((name) => lineMatching(new RegExp(`${name}\\.geojson\\s+Processing Submitted`))));

      // Act 1: the disk fills under them; a write of theirs is held
      await fillDisk(inside('filler'));
      const filledAt = Date.now();
      const full = await lineMatching(/the disk holding .* is full \(\d+ MB free\)/);
      // A write of a job held for space; or, as before the hold (a job failed by the full disk), its Fail Job
      // at work (its final event then cannot be written until space is back).
      const held = await Promise.race([lineMatching(/a write to .* waits for space on the disk holding/), lineMatching(/fail-job\.log \(the disk is full/)]);

      // Act 2: space is freed, the jobs end; then a file is dropped
      await rm(inside('filler'));
      const back = await lineMatching(/has \d+ MB free again/);
      const fullForMs = Date.now() - filledAt;
      const ends = await Promise.all(IN_FLIGHT.map((name) => lineMatching(new RegExp(`${name}\\.geojson\\s+Job (Succeeded|Failed|Rejected|Cancelled)`))));
      await copyFile(SAMPLE, inside('drop/after.geojson'));
      const done = await lineMatching(/after\.geojson\s+Job (Succeeded|Failed|Rejected)/);
      const events = (await readFile(inside('events.jsonl'), 'utf8'))
        .split('\n')
        .filter((line) => line.trim())
        .map((line) => JSON.parse(line) as { detailType: string; detail: { jobId: string; input?: { key?: string } } });
      const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
      console.log(`full-disk: ${IN_FLIGHT.length} jobs in flight, the disk full for ${(fullForMs / 1000).toFixed(1)} s; ${ends.map((line) => line.trim()).join('; ')}\n${lines.filter((line) => /waits for space|free again|cannot write/.test(line)).join('\n')}`);

      // Assess
      expect(full).toContain('free some space on that disk');
      expect(held).toContain('on AWS storage never runs out of disk');
      expect(back).toMatch(/local bridge: the disk holding .* has \d+ MB free again/);
      for (const end of ends) expect(end).toMatch(/Job Succeeded/);
      expect(done).toMatch(/Job Succeeded/);
      // One job per input, one final event each, one Mapflow processing each (no credits spent twice)
      const finals = events.filter((event) => FINAL.includes(event.detailType));
      const jobIds = [...new Set(events.map((event) => event.detail.jobId))];
      expect(jobIds).toHaveLength(IN_FLIGHT.length + 1);
      expect(finals.map((event) => event.detailType)).toEqual(Array(IN_FLIGHT.length + 1).fill('Job Succeeded'));
      expect(new Set(finals.map((event) => event.detail.jobId)).size).toBe(IN_FLIGHT.length + 1);
      expect(audit.processings).toBe(IN_FLIGHT.length + 1);
      expect(audit.duplicateProcessings).toBe(0);
      for (const jobId of jobIds) expect(audit.processingsByPart.get(`${jobId}#0`) ?? []).toHaveLength(1);
      expect(simulator.stats().processingsCreated).toBe(IN_FLIGHT.length + 1);
      expect(child.exitCode).toBeNull();
      expect(lines.join('\n')).not.toMatch(/Unhandled 'error' event|ENOSPC.*\n\s+at /);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await simulator.close();
      await rm(stateDir, { recursive: true, force: true });
      await rm(simulatorDir, { recursive: true, force: true });
    }
    // The bridge stopped as it does on SIGTERM (exit 143, `start --help`), once the disk was free again.
    expect(child.exitCode).toBe(START_EXIT_CODES.terminated);
  });
});
