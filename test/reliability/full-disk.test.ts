/**
 * Issue 39: a full disk is an error message, not a crash. `mapflow-bridge start` runs with its state folder on
 * a 200 MB tmpfs of its own (a mount namespace: `unshare --user --map-root-user --mount`, no root needed where
 * user namespaces are allowed); the test fills that disk, then frees it. The bridge says the disk is full and
 * what to do, goes on running, says when space is back, and a file dropped then ends SUCCEEDED.
 * Where no mount namespace can be made (no unshare, user namespaces off), it is skipped and says why.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { START_EXIT_CODES } from '../../packages/cli/src/start.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');
const SAMPLE = path.join(ROOT, 'packages/local/samples/bern-three-quarters.geojson');
const UNSHARE = ['--user', '--map-root-user', '--mount', '--propagation', 'private'];

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
      if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), once(stream, 'error')]);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    stream.destroy();
  }
}

const mountable = canMountTmpfs();

describe('a full disk under the state folder', () => {
  it.skipIf(!mountable)('is said in one line with what to do, the bridge goes on, and a file dropped once space is back succeeds', { timeout: 300_000 }, async () => {
    // Prepare: the bridge with its state folder on a 200 MB tmpfs seen only by it (and, through /proc/<pid>/root, by this test)
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-full-disk-'));
    const args = [CLI, 'start', '--state-dir', stateDir, '--out', path.join(stateDir, 'out'), '--no-samples', '--no-console', '--drop-stable-seconds', '0.2', '--processing-seconds', '1', ...(await sharedLedgerArgs('fulldisk'))];
    const child = spawn('unshare', [...UNSHARE, 'sh', '-c', 'mount -t tmpfs -o size=200m tmpfs "$1" && shift 2 && exec "$@"', 'sh', stateDir, 'node', process.execPath, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', POWERTOOLS_LOG_LEVEL: 'ERROR' },
    });
    const lines: string[] = [];
    const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
    const onLine = (line: string) => {
      lines.push(line);
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
    const lineMatching = (pattern: RegExp) =>
      new Promise<string>((resolve, reject) => {
        const seen = lines.find((line) => pattern.test(line));
        if (seen) return resolve(seen);
        waiters.push({ pattern, resolve });
        void exited.then(() => reject(new Error(`the bridge exited before a line matching ${pattern}; its output:\n${lines.slice(-30).join('\n')}`)));
      });
    // The state folder as the bridge sees it: its mount namespace's view of the path.
    const inside = (relative: string) => path.join(`/proc/${child.pid}/root`, stateDir, relative);
    try {
      await lineMatching(/Waiting for files/);

      // Act 1: the disk fills
      await fillDisk(inside('filler'));
      const full = await lineMatching(/the disk holding .* is full \(\d+ MB free\)/);

      // Act 2: space is freed, then a file is dropped
      await rm(inside('filler'));
      const back = await lineMatching(/has \d+ MB free again/);
      await copyFile(SAMPLE, inside('drop/after.geojson'));
      const done = await lineMatching(/after\.geojson\s+Job (Succeeded|Failed|Rejected)/);

      // Assess
      expect(full).toContain('free some space on that disk');
      expect(back).toMatch(/local bridge: the disk holding .* has \d+ MB free again/);
      expect(done).toMatch(/Job Succeeded/);
      expect(child.exitCode).toBeNull();
      expect(lines.join('\n')).not.toMatch(/Unhandled 'error' event|ENOSPC.*\n\s+at /);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await rm(stateDir, { recursive: true, force: true });
    }
    // The bridge stopped as it does on SIGTERM (exit 143, `start --help`), once the disk was free again.
    expect(child.exitCode).toBe(START_EXIT_CODES.terminated);
  });
});
