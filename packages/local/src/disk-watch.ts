/**
 * A full disk is a message, not a mystery (issue 39). The state folder holds
 * DynamoDB Local's tables, the local S3's objects, the logs and the state
 * files: when its disk fills, DynamoDB Local answers InternalFailure, s3rver
 * InternalError, and jobs fail with errors that name neither. So the bridge
 * looks at the disk's free space and says, once per change, that it is full
 * and what to do, and when space is back.
 *
 * On AWS, S3 and DynamoDB never run out of disk: a job in flight there would
 * not fail for it. So their local stand-ins hold a write while this disk is
 * full (whenFree), and let it go on once space is back; the hold stops the
 * Lambda timeouts' counted time (standstill.ts). Past DISK_HOLD_LIMIT_MS of
 * one full disk, held writes fail as they would have at once.
 */
import { statfs as fsStatfs } from 'node:fs/promises';
import { pauseCountedTime } from './assembly/standstill.ts';

/** Below this, the disk counts as full: a job's results and the ledger's writes need a few MB. */
export const LOW_DISK_BYTES = 64 * 1024 * 1024;
/** Above this again, the disk counts as free (apart from LOW_DISK_BYTES, so a disk at the edge is not said full and free by turns). */
export const RECOVERED_DISK_BYTES = 128 * 1024 * 1024;

/** How long one full disk may hold writes before they fail: long enough to free space by hand. */
export const DISK_HOLD_LIMIT_MS = 10 * 60 * 1000;

export interface DiskWatchOptions {
  /** How often to look (ms). Default 5 s. */
  intervalMs?: number;
  /** Tests: the free bytes of the disk holding `dir`. */
  freeBytes?: (dir: string) => Promise<number>;
  /** How long one full disk may hold writes (whenFree). Default DISK_HOLD_LIMIT_MS. */
  holdLimitMs?: number;
}

export interface DiskWatch {
  /** Whether the disk was full when last looked at. */
  readonly full: boolean;
  /** Looks now (also on the timer); resolves with whether the disk is full. */
  check(): Promise<boolean>;
  /**
   * For a write of `what` (e.g. 'the local S3'): resolves true at once while
   * the disk is not full, else once space is back (counted time stands still
   * meanwhile); false once this full disk has held writes for the hold limit,
   * or the watch stopped: the write then fails as it would have.
   */
  whenFree(what: string): Promise<boolean>;
  stop(): void;
}

async function statfsFreeBytes(dir: string): Promise<number> {
  const stats = await fsStatfs(dir);
  return Number(stats.bavail) * Number(stats.bsize);
}

/** What a local service needs of the watch to hold its writes (tests give their own). */
export type DiskHold = Pick<DiskWatch, 'full' | 'check' | 'whenFree'>;

/**
 * A write of `what` just met ENOSPC: looks at the disk now (the timer may not
 * have seen it fill yet) and, when it is full, waits as whenFree does.
 * Resolves whether to make the write again.
 */
export async function retryAfterNoSpace(disk: DiskHold, what: string): Promise<boolean> {
  return (await disk.check()) && disk.whenFree(what);
}

export function watchDisk(dir: string, log: (message: string) => void, options: DiskWatchOptions = {}): DiskWatch {
  const freeBytes = options.freeBytes ?? statfsFreeBytes;
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  const holdLimitMs = options.holdLimitMs ?? DISK_HOLD_LIMIT_MS;
  let full = false;
  /** Writes held until space is back (whenFree). */
  const held = new Set<(free: boolean) => void>();
  /** Since when this full disk holds writes, and whether that was said; reset once space is back. */
  let holdingSince: number | undefined;
  let holdSaid = false;
  let gaveUp = false;
  let stopped = false;
  const release = (free: boolean) => {
    for (const resolve of [...held]) resolve(free);
  };
  const check = async (): Promise<boolean> => {
    const free = await freeBytes(dir).catch(() => undefined);
    if (free === undefined) return full;
    if (!full && free < LOW_DISK_BYTES) {
      full = true;
      log(
        `local bridge: the disk holding ${dir} is full (${mb(free)} MB free): DynamoDB Local, the local S3 and the state files cannot write there, ` +
          `so uploads and the writes of jobs in flight wait (at most ${Math.round(holdLimitMs / 60_000)} min, then such writes fail); ` +
          'free some space on that disk (a job that failed for it runs again with `mapflow-bridge jobs retry <jobId>`)',
      );
    } else if (full && free >= RECOVERED_DISK_BYTES) {
      full = false;
      log(`local bridge: the disk holding ${dir} has ${mb(free)} MB free again${held.size > 0 ? `: ${held.size} held write(s) go on` : ''}`);
      holdingSince = undefined;
      holdSaid = false;
      gaveUp = false;
      release(true);
    }
    return full;
  };
  const whenFree = (what: string): Promise<boolean> => {
    if (!full) return Promise.resolve(true);
    if (stopped || gaveUp) return Promise.resolve(false);
    holdingSince ??= Date.now();
    if (!holdSaid) {
      holdSaid = true;
      log(
        `local bridge: a write to ${what} waits for space on the disk holding ${dir}, as jobs in flight do: ` +
          `on AWS storage never runs out of disk (held for at most ${Math.round(holdLimitMs / 60_000)} min, then such writes fail)`,
      );
    }
    return new Promise<boolean>((resolve) => {
      const resume = pauseCountedTime();
      const left = holdingSince! + holdLimitMs - Date.now();
      const timer = setTimeout(() => {
        if (!gaveUp) {
          gaveUp = true;
          log(`local bridge: the disk holding ${dir} stayed full for ${Math.round(holdLimitMs / 60_000)} min: ${held.size} held write(s) fail now, and new ones at once until space is back`);
        }
        release(false);
      }, Math.max(0, left));
      const done = (free: boolean) => {
        held.delete(done);
        clearTimeout(timer);
        resume();
        resolve(free);
      };
      held.add(done);
    });
  };
  const timer = setInterval(() => void check(), options.intervalMs ?? 5_000);
  // Never keeps the process alive by itself.
  timer.unref();
  void check();
  return {
    get full() {
      return full;
    },
    check,
    whenFree,
    stop: () => {
      stopped = true;
      clearInterval(timer);
      release(false);
    },
  };
}
