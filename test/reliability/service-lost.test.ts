/**
 * Issue 39, point 3, the other way out: a service that cannot be kept up
 * stops the bridge cleanly with the exact command to run. `mapflow-bridge
 * start` runs with no restart allowed (MAPFLOW_BRIDGE_SERVICE_RESTARTS=0) and
 * its s3rver is killed -9: one line names s3rver and the command, the start
 * stops as after Ctrl-C (exit status 1, the lock and endpoints.json gone), and
 * no process of it is left.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { access, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

/** The children of `parent` whose command line holds `needle` (Linux /proc). */
function childrenWith(parent: number, needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('a service the bridge cannot keep up', { timeout: 240_000 }, () => {
  let stateDir: string;

  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-service-lost-'));
  });
  afterAll(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('stops the bridge cleanly with exit status 1 and the command to run', async () => {
    // Prepare: a start with no restart allowed, up and waiting
    const env = { ...process.env, NO_COLOR: '1', POWERTOOLS_LOG_LEVEL: 'ERROR', MAPFLOW_BRIDGE_SERVICE_RESTARTS: '0' };
    const start = spawn(process.execPath, [CLI, 'start', '--state-dir', stateDir, '--no-samples', '--no-console', '--s3-port', '0', ...(await sharedLedgerArgs('service-lost'))], { cwd: stateDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    const waiting = new Promise<void>((resolve) => {
      for (const stream of [start.stdout, start.stderr]) {
        createInterface({ input: stream }).on('line', (line) => {
          output.push(line);
          if (/Waiting for files/.test(line)) resolve();
        });
      }
    });
    const exited = new Promise<number | null>((resolve) => start.once('exit', (code) => resolve(code)));
    await Promise.race([waiting, exited]);
    const [s3rver] = childrenWith(start.pid!, 's3rver-process.cjs');

    // A failing run leaves no bridge behind.
    onTestFinished(() => {
      if (start.exitCode === null && start.signalCode === null) start.kill('SIGKILL');
    });

    // Act
    process.kill(s3rver!, 'SIGKILL');
    // Bounded, so that a start that never notices fails here rather than at the test's timeout.
    let bound: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<never>((_, reject) => (bound = setTimeout(() => reject(new Error('the start did not stop within 60 s of its s3rver\'s death')), 60_000)))]).finally(() => clearTimeout(bound));

    // Assess
    const said = output.join('\n');
    expect(said).toContain(
      `local bridge: s3rver (the local S3) (pid ${s3rver}) killed by SIGKILL: 1 death within 10 minutes, so it is not restarted again; stopping the bridge. ` +
        `Run \`npx mapflow-bridge start --state-dir ${stateDir}\` to start again: jobs in flight resume where they stopped.`,
    );
    expect(code).toBe(1);
    expect(said).toContain('Stopped. State is kept in');
    expect(await access(path.join(stateDir, 'bridge.lock')).then(() => true, () => false)).toBe(false);
    expect(await access(path.join(stateDir, 'endpoints.json')).then(() => true, () => false)).toBe(false);
    expect(childrenWith(start.pid!, '')).toEqual([]);
  });
});
