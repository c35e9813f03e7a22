/**
 * One bridge per state folder (the lock), and a local S3 port that stays the
 * same across restarts unless another program holds it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startS3OnPort } from '../src/bridge.ts';
import { openLedger } from '../../cli/src/jobs.ts';
import { LocalS3StartError } from '../src/s3/server.ts';
import { isProcessAlive, LOCK_FILE, lockHolder, lockStateDir, StateDirLockedError, sweepAbandonedStateDirs } from '../src/state-lock.ts';
import { testTmp } from '../../../test/support/temp.ts';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(testTmp(), 'mfb-lock-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited (spawned and waited for). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid as number;
}

describe('abandoned temporary state folders', () => {
  it('removes only the folders whose lock names a process that is gone', async () => {
    // Prepare: four folders as a killed, a live, a kept and a just-created bridge leave them
    const parent = await tempDir();
    // A live bridge runs on Node.js (a live process of another program holds no lock: below)
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const lockOf = (pid: number) => `${JSON.stringify({ pid, since: new Date().toISOString(), command: 'mapflow-bridge local run' })}\n`;
    const make = async (name: string, lock?: string) => {
      await mkdir(path.join(parent, name, 'dynamodb'), { recursive: true });
      if (lock) await writeFile(path.join(parent, name, LOCK_FILE), lock);
    };
    const dead = await deadPid();
    await make('mapflow-bridge-Killed', lockOf(dead));
    await make('mapflow-bridge-Living', lockOf(live.pid as number));
    await make('mapflow-bridge-run-Kept01', lockOf(dead));
    await make('mapflow-bridge-NoLock');
    // Act
    const removed = await sweepAbandonedStateDirs(parent, 'mapflow-bridge-');
    live.kill();
    // Assess
    expect(removed).toEqual([path.join(parent, 'mapflow-bridge-Killed')]);
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(parent)).sort()).toEqual(['mapflow-bridge-Living', 'mapflow-bridge-NoLock', 'mapflow-bridge-run-Kept01']);
  });
});

describe('state folder lock', () => {
  it('refuses a second lock while the first is held, naming its process, and frees it on release', async () => {
    // Prepare
    const dir = await tempDir();
    const first = await lockStateDir(dir, 'mapflow-bridge start');
    // Act
    const second = await lockStateDir(dir, 'mapflow-bridge start').then(
      () => undefined,
      (error: unknown) => error,
    );
    await first.release();
    const third = await lockStateDir(dir, 'mapflow-bridge start');
    // Assess
    expect(second).toBeInstanceOf(StateDirLockedError);
    expect((second as StateDirLockedError).holder.pid).toBe(process.pid);
    expect((second as Error).message).toContain(`pid ${process.pid} (mapflow-bridge start`);
    expect((second as Error).message).toContain('--state-dir');
    await third.release();
    expect(await lockHolder(dir)).toBeUndefined();
  });

  it('two starts at the same instant: exactly one takes it, the other is refused naming the winner', async () => {
    // Prepare
    const dir = await tempDir();
    // Act: both at once (the lock file is linked into place, which fails for the second)
    const [a, b] = await Promise.allSettled([lockStateDir(dir, 'mapflow-bridge start (a)'), lockStateDir(dir, 'mapflow-bridge start (b)')]);
    // Assess
    const won = [a, b].filter((outcome) => outcome.status === 'fulfilled');
    const lost = [a, b].filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.reason).toBeInstanceOf(StateDirLockedError);
    const holder = await lockHolder(dir);
    expect((lost[0]!.reason as StateDirLockedError).holder.command).toBe(holder?.command);
    await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof lockStateDir>>>).value.release();
  });

  it('refuses while another live process holds it, and takes over the lock of a process that died', { timeout: 30_000 }, async () => {
    // Prepare: a live process (sleeping node) and a dead one (exited) as holders
    const dir = await tempDir();
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const exited = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await new Promise((resolve) => exited.once('exit', resolve));
    try {
      const lockFile = path.join(dir, LOCK_FILE);
      await writeFile(lockFile, JSON.stringify({ pid: sleeper.pid, since: '2026-11-23T10:00:00.000Z', command: 'mapflow-bridge start' }));
      // Act
      const refused = await lockStateDir(dir, 'test').then(
        () => undefined,
        (error: unknown) => error,
      );
      await writeFile(lockFile, JSON.stringify({ pid: exited.pid, since: '2026-11-23T10:00:00.000Z', command: 'mapflow-bridge start' }));
      const taken = await lockStateDir(dir, 'test');
      // Assess
      expect((refused as StateDirLockedError).holder.pid).toBe(sleeper.pid);
      expect(JSON.parse(await readFile(lockFile, 'utf8'))).toMatchObject({ pid: process.pid, command: 'test' });
      await taken.release();
    } finally {
      sleeper.kill();
    }
  });
});

describe('a lock naming a live process that is not a bridge (its pid reused)', () => {
  it('is stale: the next bridge takes it over, and no message tells anyone to kill that process', { timeout: 30_000 }, async () => {
    // Prepare: a live `sleep` (not Node.js) named by a lock with its real start time, as a reused pid would be
    const dir = await tempDir();
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    await once(sleeper, 'spawn');
    try {
      const stat = await readFile(`/proc/${sleeper.pid}/stat`, 'utf8');
      const processStart = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      const lockFile = path.join(dir, LOCK_FILE);
      await writeFile(lockFile, JSON.stringify({ pid: sleeper.pid, since: '2026-11-23T10:00:00.000Z', command: 'mapflow-bridge start', processStart }));

      // Act
      const holderBefore = await lockHolder(dir);
      const taken = await lockStateDir(dir, 'test');

      // Assess
      expect(holderBefore).toBeUndefined();
      expect(JSON.parse(await readFile(lockFile, 'utf8'))).toMatchObject({ pid: process.pid, command: 'test' });
      await taken.release();
    } finally {
      sleeper.kill();
    }
  });

  it("names the lock file and never advises a kill when a bridge holds the folder", async () => {
    // Prepare
    const error = new StateDirLockedError('/tmp/state', { pid: 4242, since: '2026-11-23T10:00:00.000Z', command: 'mapflow-bridge start' });

    // Assess
    expect(error.message).toContain(path.join('/tmp/state', LOCK_FILE));
    expect(error.message).not.toMatch(/\bkill\b/);
  });
});

describe('a holder that is a zombie (killed, not yet reaped)', () => {
  /**
   * A zombie: `sh` starts a child in the background and then becomes
   * `sleep` (exec), which never waits for it, so the child stays in state Z
   * as under an init that never reaps. The child ends only once its parent
   * is `sleep` (a child that ended before the exec would be reaped by `sh`,
   * as happened on a loaded machine). Resolves once /proc shows it so.
   */
  async function zombie(): Promise<{ pid: number; processStart: string; parent: ChildProcess }> {
    const script = '(while [ "$(cat /proc/$$/comm)" != sleep ]; do sleep 0.01; done) & echo $!; exec sleep 60';
    const parent = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    const [line] = (await once(createInterface({ input: parent.stdout! }), 'line')) as [string];
    const pid = Number(line);
    for (;;) {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') return { pid, processStart: fields[19] as string, parent };
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it.runIf(process.platform === 'linux')('is dead: the lock is taken over, lockHolder names nobody and its temporary folder is swept', { timeout: 30_000 }, async () => {
    // Prepare: a state folder and a temporary one locked by a zombie, with its true start time (no pid reuse)
    const { pid, processStart, parent } = await zombie();
    try {
      const dir = await tempDir();
      const parentDir = await tempDir();
      const lock = `${JSON.stringify({ pid, since: '2026-11-26T10:00:00.000Z', command: 'mapflow-bridge start', processStart })}\n`;
      await writeFile(path.join(dir, LOCK_FILE), lock);
      await mkdir(path.join(parentDir, 'mapflow-bridge-Zombie'));
      await writeFile(path.join(parentDir, 'mapflow-bridge-Zombie', LOCK_FILE), lock);
      expect(() => process.kill(pid, 0)).not.toThrow(); // kill 0 alone takes it for alive

      // Act
      const holder = await lockHolder(dir);
      const taken = await lockStateDir(dir, 'test');
      const swept = await sweepAbandonedStateDirs(parentDir, 'mapflow-bridge-');

      // Assess
      expect(holder).toBeUndefined();
      expect(JSON.parse(await readFile(path.join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid, command: 'test' });
      expect(swept).toEqual([path.join(parentDir, 'mapflow-bridge-Zombie')]);
      expect(isProcessAlive(pid, processStart)).toBe(false);
      expect(isProcessAlive(parent.pid as number)).toBe(true);
      await taken.release();
    } finally {
      parent.kill();
    }
  });
});

describe('local S3 port', () => {
  let blocker: Server | undefined;
  afterAll(() => blocker?.close());

  it('uses the port it is given, and falls back to a free one with a message only when told to', { timeout: 60_000 }, async () => {
    // Prepare: a port held by another program
    blocker = createServer();
    await new Promise<void>((resolve) => (blocker as Server).listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    const dir = await tempDir();
    const messages: string[] = [];
    // Act
    const strict = await startS3OnPort({ directory: path.join(dir, 'a'), buckets: ['b'] }, taken, false, (m) => messages.push(m)).then(
      () => undefined,
      (error: unknown) => error,
    );
    const fallback = await startS3OnPort({ directory: path.join(dir, 'b'), buckets: ['b'] }, taken, true, (m) => messages.push(m));
    await fallback.close();
    // Assess
    expect(strict).toBeInstanceOf(LocalS3StartError);
    expect((strict as Error).message).toContain(`port ${taken}`);
    expect((strict as Error).message).toContain('--s3-port');
    expect(fallback.port).not.toBe(taken);
    expect(messages).toEqual([expect.stringContaining(`port ${taken} is taken by another program, so the local S3 listens on port ${fallback.port}`)]);
  });
});

describe('jobs on a state folder whose bridge does not answer yet', () => {
  it('waits for the bridge, then says it does not answer, instead of opening its DynamoDB files a second time', { timeout: 30_000 }, async () => {
    // Prepare: a held folder with a ledger folder and no endpoints.json (the bridge is starting)
    const dir = await tempDir();
    await mkdir(path.join(dir, 'dynamodb'), { recursive: true });
    const lock = await lockStateDir(dir, 'mapflow-bridge start');
    try {
      // Act: the reader's wait shortened (jobs list waits 120 s)
      const error = await openLedger({ stateDir: dir, waitMs: 300 }).then(
        () => undefined,
        (failure: unknown) => failure as Error,
      );
      // Assess
      expect(error?.message).toContain(`the bridge of ${dir} (pid ${process.pid}, mapflow-bridge start) holds its ledger and has not answered for 0 s`);
      expect(await lockHolder(dir)).toMatchObject({ pid: process.pid, command: 'mapflow-bridge start' });
    } finally {
      await lock.release();
    }
  });

  it('a start waits while a reader holds the folder, and takes it once the reader lets go', { timeout: 30_000 }, async () => {
    // Prepare: a reader (jobs list with its own DynamoDB Local) holds the folder
    const dir = await tempDir();
    const reader = await lockStateDir(dir, 'mapflow-bridge jobs (reading the ledger)', { reader: true });
    // Act: a start asks for it, then the reader lets go
    let taken = false;
    const starting = lockStateDir(dir, 'mapflow-bridge start', { waitForReaderMs: 20_000 }).then((lock) => {
      taken = true;
      return lock;
    });
    const refused = await lockStateDir(dir, 'mapflow-bridge start').then(() => undefined, (error: unknown) => error);
    expect(taken).toBe(false);
    await reader.release();
    const lock = await starting;
    // Assess
    expect(refused).toBeInstanceOf(StateDirLockedError);
    expect(await lockHolder(dir)).toMatchObject({ pid: process.pid, command: 'mapflow-bridge start' });
    await lock.release();
  });
});
