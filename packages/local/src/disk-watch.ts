/**
 * A full disk is a message, not a mystery (issue 39). The state folder holds
 * DynamoDB Local's tables, the local S3's objects, the logs and the state
 * files: when its disk fills, DynamoDB Local answers InternalFailure, s3rver
 * InternalError, and jobs fail with errors that name neither. So the bridge
 * looks at the disk's free space and says, once per change, that it is full
 * and what to do, and when space is back.
 */
import { statfs as fsStatfs } from 'node:fs/promises';

/** Below this, the disk counts as full: a job's results and the ledger's writes need a few MB. */
export const LOW_DISK_BYTES = 64 * 1024 * 1024;
/** Above this again, the disk counts as free (apart from LOW_DISK_BYTES, so a disk at the edge is not said full and free by turns). */
export const RECOVERED_DISK_BYTES = 128 * 1024 * 1024;

export interface DiskWatchOptions {
  /** How often to look (ms). Default 5 s. */
  intervalMs?: number;
  /** Tests: the free bytes of the disk holding `dir`. */
  freeBytes?: (dir: string) => Promise<number>;
}

export interface DiskWatch {
  /** Whether the disk was full when last looked at. */
  readonly full: boolean;
  /** Looks now (also on the timer); resolves with whether the disk is full. */
  check(): Promise<boolean>;
  stop(): void;
}

async function statfsFreeBytes(dir: string): Promise<number> {
  const stats = await fsStatfs(dir);
  return Number(stats.bavail) * Number(stats.bsize);
}

export function watchDisk(dir: string, log: (message: string) => void, options: DiskWatchOptions = {}): DiskWatch {
  const freeBytes = options.freeBytes ?? statfsFreeBytes;
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  let full = false;
  const check = async (): Promise<boolean> => {
    const free = await freeBytes(dir).catch(() => undefined);
    if (free === undefined) return full;
    if (!full && free < LOW_DISK_BYTES) {
      full = true;
      log(
        `local bridge: the disk holding ${dir} is full (${mb(free)} MB free): DynamoDB Local, the local S3 and the state files cannot write there, ` +
          'so uploads wait and jobs in flight may fail; free some space on that disk (a job that failed for it runs again with `mapflow-bridge jobs retry <jobId>`)',
      );
    } else if (full && free >= RECOVERED_DISK_BYTES) {
      full = false;
      log(`local bridge: the disk holding ${dir} has ${mb(free)} MB free again`);
    }
    return full;
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
    stop: () => clearInterval(timer),
  };
}
