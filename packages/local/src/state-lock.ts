/**
 * One bridge per state folder. Two bridges on one `.local/` would open the
 * same DynamoDB files and drop folder with different ports, and the one that
 * stops first would delete the other's endpoints.json. The first bridge writes
 * `<stateDir>/bridge.lock` (its pid, start time and command); a second one
 * finds it, checks that the holder still runs, and refuses with the holder's
 * details. A lock left by a process that died (kill -9, a crash) is taken over.
 *
 * The file is created atomically (written aside, then hard-linked into place,
 * which fails when it exists), so two starts racing cannot both win.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const LOCK_FILE = 'bridge.lock';

export interface LockHolder {
  pid: number;
  /** ISO time the holder took the lock. */
  since: string;
  /** What runs, e.g. `mapflow-bridge start`. */
  command: string;
  /** Linux: the process start time in clock ticks (/proc/<pid>/stat field 22), to see through pid reuse. */
  processStart?: string;
  /**
   * A reader (`jobs`, `costs`, the console with no bridge running) that opened
   * the ledger's files with a DynamoDB Local of its own for a moment: a start
   * waits for it to let go (issue 39, point 8) instead of opening the same files.
   */
  reader?: boolean;
}

export interface LockOptions {
  /** Take it as a reader (see LockHolder.reader). */
  reader?: boolean;
  /** How long to wait while a reader holds it (default 0: refuse at once). */
  waitForReaderMs?: number;
}

export interface StateLock {
  readonly file: string;
  release(): Promise<void>;
}

/** The state folder is used by a live bridge. */
export class StateDirLockedError extends Error {
  constructor(
    readonly stateDir: string,
    readonly holder: LockHolder,
  ) {
    super(
      `${stateDir} is in use by another bridge: pid ${holder.pid} (${holder.command}, since ${holder.since}), ` +
        `as its lock ${path.join(stateDir, LOCK_FILE)} says and that process's command line confirms. ` +
        `Stop that bridge first (Ctrl-C in its terminal), or give another --state-dir.`,
    );
    this.name = 'StateDirLockedError';
  }
}

/** Locks held by this process (a pid check cannot tell them apart from stale ones). */
const heldHere = new Set<string>();

export async function lockStateDir(stateDir: string, command: string, options: LockOptions = {}): Promise<StateLock> {
  const file = path.join(stateDir, LOCK_FILE);
  const me: LockHolder = { pid: process.pid, since: new Date().toISOString(), command, ...processStartOf(process.pid), ...(options.reader ? { reader: true } : {}) };
  // Unique even for two attempts of one process in one millisecond (a reader and a start).
  const aside = `${file}.${process.pid}.${Date.now()}.${randomBytes(4).toString('hex')}`;
  await writeFile(aside, `${JSON.stringify(me)}\n`);
  const readerDeadline = Date.now() + (options.waitForReaderMs ?? 0);
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(aside, file);
        heldHere.add(file);
        return { file, release: () => release(file, me) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = await readHolder(file);
      if (holder?.reader && isAlive(holder, file) && Date.now() < readerDeadline) {
        // A reader holds the ledger's files for a moment (jobs list): wait for it to let go.
        await new Promise((resolve) => setTimeout(resolve, 100));
        attempt--;
        continue;
      }
      if (holder && isAlive(holder, file)) throw new StateDirLockedError(stateDir, holder);
      // Stale (its process is gone) or unreadable: take it over.
      await unlink(file).catch(() => undefined);
    }
    throw new Error(`cannot take the lock ${file}: it keeps coming back.`);
  } finally {
    await unlink(aside).catch(() => undefined);
  }
}

/** The live holder of a state folder's lock, if any (for messages and tests). */
export async function lockHolder(stateDir: string): Promise<LockHolder | undefined> {
  const file = path.join(stateDir, LOCK_FILE);
  const holder = await readHolder(file);
  return holder && isAlive(holder, file) ? holder : undefined;
}

/**
 * Removes the temporary state folders (`<parent>/<prefix>*`) of bridges that
 * died without cleaning up (kill -9 of a `local run`): folders named `prefix`
 * plus the six characters mkdtemp adds (so `<prefix>run-…` folders kept with
 * --keep-state are never touched), and only those whose lock
 * names a process that no longer runs. A folder without a lock is left alone
 * (a bridge may be between creating it and locking it, or it was kept on
 * purpose). Returns the folders removed.
 */
export async function sweepAbandonedStateDirs(parent: string, prefix: string): Promise<string[]> {
  const removed: string[] = [];
  const entries = await readdir(parent, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isDirectory() || !entry.name.startsWith(prefix) || !/^[A-Za-z0-9]{6}$/.test(entry.name.slice(prefix.length))) continue;
    const dir = path.join(parent, entry.name);
    const file = path.join(dir, LOCK_FILE);
    const holder = await readHolder(file);
    if (!holder || isAlive(holder, file)) continue;
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    removed.push(dir);
  }
  return removed;
}

async function release(file: string, me: LockHolder): Promise<void> {
  if (!heldHere.delete(file)) return;
  const current = await readHolder(file);
  // Only remove our own lock, never one another bridge took over.
  if (current?.pid === me.pid && current.since === me.since) await unlink(file).catch(() => undefined);
}

async function readHolder(file: string): Promise<LockHolder | undefined> {
  try {
    const holder = JSON.parse(await readFile(file, 'utf8')) as LockHolder;
    return Number.isInteger(holder.pid) && holder.pid > 0 ? holder : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(holder: LockHolder, file: string): boolean {
  // Our own pid: live only if this process holds it (else a previous run with the same pid died).
  if (holder.pid === process.pid) return heldHere.has(file);
  return isProcessAlive(holder.pid, holder.processStart) && mayBeBridge(holder.pid);
}

/**
 * Whether the live process `pid` can be a bridge: bridges run on Node.js, so a
 * process whose program is something else (a `sleep`, a shell, a browser that
 * got the pid of a bridge that died) holds no lock, whatever the lock file
 * says. Linux only (/proc/<pid>/cmdline); elsewhere, and for a process of
 * another user whose command line cannot be read, the pid check alone decides.
 */
function mayBeBridge(pid: number): boolean {
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return true;
  }
  const [program = '', ...args] = cmdline.split('\0');
  return /node/i.test(path.basename(program)) || args.some((arg) => arg.includes('mapflow-bridge'));
}

/**
 * Whether the process `pid` still runs (and is the one that started at
 * `processStart`, when given). A zombie (state Z: exited, not yet reaped by its
 * parent, which an init that never reaps leaves for ever) or a dying process
 * (X) answers kill 0 like a live one, but holds nothing: it is dead.
 */
export function isProcessAlive(pid: number, processStart?: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = procStat(pid);
  if (stat?.state === 'Z' || stat?.state === 'X' || stat?.state === 'x') return false;
  // Same pid, another process (the holder died and the pid was reused)?
  const now = stat?.start;
  return !(processStart && now && now !== processStart);
}

/** Linux: the start time of a process (clock ticks since boot); nothing elsewhere. */
function processStartOf(pid: number): { processStart?: string } {
  const start = procStat(pid)?.start;
  return start ? { processStart: start } : {};
}

/** Linux: fields 3 (state) and 22 (start time) of /proc/<pid>/stat; undefined elsewhere or when gone. */
function procStat(pid: number): { state?: string; start?: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ...(fields[0] ? { state: fields[0] } : {}), ...(fields[19] ? { start: fields[19] } : {}) };
  } catch {
    return undefined;
  }
}
