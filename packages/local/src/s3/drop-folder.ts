/**
 * The local drop folder: files copied under it are streamed into the bucket's
 * inbox at the same relative path, so trying the bridge needs no S3 client.
 *
 *   <dropDir>/buildings/area.tif        ->  s3://<bucket>/inbox/buildings/area.tif
 *   <dropDir>/inbox/buildings/area.tif  ->  s3://<bucket>/inbox/buildings/area.tif  (the folder is the inbox)
 *
 * The folder is scanned periodically (portable, unlike recursive fs.watch). A
 * file is uploaded only once its size, modification time and inode have not
 * changed for a whole stability window (default 3 s) and, on Linux, no process
 * holds it open for writing or reading (an open-handle scan of /proc/<pid>/fd),
 * so a copy that pauses (a slow disk, a network share, a download) is never
 * uploaded half-written. Hidden files (a leading dot, as editors and rsync use
 * for partial copies) are ignored. After the upload the file is moved to
 * `uploadedDir` (same relative path), so a restart does not upload it again and
 * nothing is deleted; a file written again under the same name later is a new
 * version, uploaded again (a new job, since its ETag differs).
 *
 * A name that cannot be a key the bridge takes (keyProblem: control
 * characters, U+2028/2029, bytes that are not UTF-8...) is not uploaded: the
 * local S3 refuses some of them, and none would become a job. It is handed to
 * `reject` instead, which starts its job to be REJECTED INVALID_KEY with a
 * report, and the file is moved to `uploadedDir` like an uploaded one. Names
 * are read as bytes: a byte that is not UTF-8 (S3 keys are UTF-8) is shown in
 * the key as SUB and its hex (fileNameFromBytes), so the key is safe to store
 * and print and is always INVALID_KEY.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access, mkdir, readdir, readlink, realpath, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { fileNameFromBytes, keyProblem } from 'mapflow-bridge/functions/routing/keys.ts';

/** How long a file must stay unchanged before it is uploaded, by default. */
export const DEFAULT_STABLE_MS = 3_000;

export interface DropFolderOptions {
  dir: string;
  /** Where uploaded files are moved to. */
  uploadedDir: string;
  s3: S3Client;
  bucket: string;
  /** Default 'inbox/'. */
  inboxPrefix?: string;
  /** Scan period. Default 500 ms. */
  intervalMs?: number;
  /** A file is uploaded once unchanged for this long. Default DEFAULT_STABLE_MS (3 s). */
  stableMs?: number;
  /**
   * Also wait while a process has the file open (Linux /proc scan; elsewhere
   * only the stability window applies). Default true.
   */
  checkOpenHandles?: boolean;
  onUploaded?: (upload: { file: string; key: string; etag: string; size: number }) => void;
  /**
   * A file whose key the bridge refuses (keyProblem), not uploaded: starts its
   * job (REJECTED INVALID_KEY, with a report). Without it the file is left
   * where it is and reported once through onError.
   */
  reject?: (refused: { file: string; key: string; etag: string; size: number; problem: string }) => Promise<void>;
  onError?: (file: string, error: unknown) => void;
  /**
   * Once per file that is still not stable a whole window after it appeared
   * (a slow copy still writing, or a program holding it open): so the user
   * knows it was seen and why it has not gone up yet.
   */
  onWaiting?: (file: string, why: 'changing' | 'open') => void;
}

export interface DropFolder {
  /** Scans once and uploads every file stable for the whole window (also used by tests). */
  scan(): Promise<void>;
  /** Resolves when no file is waiting or uploading. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

interface Seen {
  size: number;
  mtimeMs: number;
  ino: number;
  /** When the file was first seen with this size, time and inode. */
  since: number;
  /** A failed upload is retried only after the file changes or this time passes. */
  retryAfter?: number;
  /** When the file first appeared (kept across changes). */
  firstSeen: number;
  /** onWaiting was called for it. */
  announced?: boolean;
}

export async function watchDropFolder(options: DropFolderOptions): Promise<DropFolder> {
  const inboxPrefix = options.inboxPrefix ?? 'inbox/';
  const stableMs = options.stableMs ?? DEFAULT_STABLE_MS;
  const intervalMs = options.intervalMs ?? 500;
  const checkOpenHandles = (options.checkOpenHandles ?? true) && process.platform === 'linux';
  await mkdir(options.dir, { recursive: true });
  // /proc shows resolved paths: compare with the folder's real path.
  const realDir = await realpath(options.dir);
  const seen = new Map<string, Seen>();
  let scanning: Promise<void> | undefined;
  let pending = 0;
  let closed = false;

  /** The raw path (bytes) of each file listed, by its key-safe relative name. */
  let rawPaths = new Map<string, Buffer>();

  const uploadOne = async (relative: string, expected: Seen): Promise<void> => {
    const file = rawPaths.get(relative) ?? path.join(options.dir, relative);
    const key = dropKey(relative, inboxPrefix);
    const problem = keyProblem(key);
    if (problem) {
      if (!options.reject) throw new KeyRefused(key, problem);
      // The bytes a plain upload's ETag is the MD5 of: the same job id as an upload would give.
      const etag = await md5Of(file);
      await options.reject({ file: path.join(options.dir, relative), key, etag, size: expected.size, problem });
      const target = await freeName(path.join(options.uploadedDir, relative));
      await mkdir(path.dirname(target), { recursive: true });
      await rename(file, target);
      seen.delete(relative);
      return;
    }
    const upload = new Upload({
      client: options.s3,
      params: { Bucket: options.bucket, Key: key, Body: createReadStream(file), ContentType: contentTypeFor(relative) },
    });
    const result = await upload.done();
    const after = await stat(file);
    if (after.size !== expected.size || after.mtimeMs !== expected.mtimeMs || after.ino !== expected.ino) {
      // Written to while it streamed: what went up may be partial. Keep the file where it
      // is; once stable again it is uploaded again (a new version, hence a new job).
      seen.set(relative, { size: after.size, mtimeMs: after.mtimeMs, ino: after.ino, since: Date.now(), firstSeen: expected.firstSeen, announced: true });
      throw new Error('the file changed while it was uploaded; it is uploaded again once it stops changing');
    }
    const target = await freeName(path.join(options.uploadedDir, relative));
    await mkdir(path.dirname(target), { recursive: true });
    await rename(file, target);
    seen.delete(relative);
    options.onUploaded?.({ file: target, key, etag: (result.ETag ?? '').replace(/"/g, ''), size: expected.size });
  };

  const announce = (relative: string, entry: Seen, now: number, why: 'changing' | 'open'): void => {
    if (entry.announced || now - entry.firstSeen < stableMs) return;
    entry.announced = true;
    options.onWaiting?.(path.join(options.dir, relative), why);
  };

  const scanOnce = async (): Promise<void> => {
    rawPaths = await listFiles(options.dir);
    const files = [...rawPaths.keys()];
    const now = Date.now();
    const ready: [string, Seen][] = [];
    for (const relative of files) {
      const info = await stat(rawPaths.get(relative)!).catch(() => undefined);
      if (!info) continue;
      const before = seen.get(relative);
      const unchanged = before && before.size === info.size && before.mtimeMs === info.mtimeMs && before.ino === info.ino;
      if (!unchanged) {
        const next: Seen = { size: info.size, mtimeMs: info.mtimeMs, ino: info.ino, since: now, firstSeen: before?.firstSeen ?? now, ...(before?.announced && { announced: true }) };
        seen.set(relative, next);
        if (before) announce(relative, next, now, 'changing');
        continue;
      }
      if (now - before.since < stableMs) continue;
      if (before.retryAfter && before.retryAfter > now) continue;
      ready.push([relative, before]);
    }
    const open = checkOpenHandles && ready.length > 0 ? await openFiles() : new Set<string>();
    for (const [relative, before] of ready) {
      if (open.has(path.join(realDir, relative))) {
        // Still open in some process (a copy writing with pauses): the window starts again.
        before.since = Date.now();
        announce(relative, before, before.since, 'open');
        continue;
      }
      pending++;
      try {
        await uploadOne(relative, before);
      } catch (error) {
        const current = seen.get(relative);
        // A refused name is said once; it is tried again only when the file changes.
        if (current) current.retryAfter = error instanceof KeyRefused ? Number.POSITIVE_INFINITY : Date.now() + 10_000;
        options.onError?.(path.join(options.dir, relative), error);
      } finally {
        pending--;
      }
    }
    // Forget files that went away.
    for (const relative of [...seen.keys()]) if (!files.includes(relative)) seen.delete(relative);
  };

  const scan = (): Promise<void> => {
    scanning ??= scanOnce().finally(() => {
      scanning = undefined;
    });
    return scanning;
  };

  const timer = setInterval(() => {
    if (!closed) scan().catch((error: unknown) => options.onError?.(options.dir, error));
  }, intervalMs);
  timer.unref();

  return {
    scan,
    idle: async () => {
      // A scan already under way may have listed the folder before the caller's
      // last write: let it end, so the loop's first scan starts after the call.
      await scanning?.catch(() => undefined);
      // Scans until every file seen has been uploaded (after its window) or has failed.
      while (!closed) {
        await scan();
        const waiting = [...seen.values()].some((s) => !s.retryAfter);
        if (!waiting && pending === 0) return;
        await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, 200)));
      }
    },
    close: async () => {
      closed = true;
      clearInterval(timer);
      await scanning;
    },
  };
}

/**
 * The inbox key of a file at `relative` in the drop folder. The drop folder IS
 * the inbox, so a leading `inbox/` folder (a user mirroring the bucket layout)
 * is dropped rather than doubled into `inbox/inbox/...`.
 */
export function dropKey(relative: string, inboxPrefix = 'inbox/'): string {
  const parts = relative.split(path.sep).join('/').split('/');
  const inboxFolder = inboxPrefix.replace(/\/+$/, '');
  if (parts.length > 1 && inboxFolder && parts[0] === inboxFolder) parts.shift();
  return inboxPrefix + parts.join('/');
}

/**
 * Every file some process of this user holds open (Linux: the targets of
 * /proc/<pid>/fd/*). Processes of other users are not readable and are skipped.
 */
export async function openFiles(): Promise<Set<string>> {
  const open = new Set<string>();
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name));
  await Promise.all(
    pids.map(async (pid) => {
      const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
      for (const fd of fds) {
        const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => undefined);
        if (target?.startsWith('/')) open.add(target);
      }
    }),
  );
  return open;
}

/** `file`, or `name (2).ext`, `name (3).ext`... when taken: an earlier version is kept, not replaced. */
async function freeName(file: string): Promise<string> {
  const exists = (candidate: string) => access(candidate).then(() => true, () => false);
  if (!(await exists(file))) return file;
  const ext = path.extname(file);
  const base = file.slice(0, file.length - ext.length);
  for (let n = 2; ; n++) {
    const candidate = `${base} (${n})${ext}`;
    if (!(await exists(candidate))) return candidate;
  }
}

/** A name the bridge refuses as a key (keyProblem), with no `reject` hook to start its job. */
export class KeyRefused extends Error {
  constructor(
    readonly key: string,
    readonly problem: string,
  ) {
    super(`the key ${JSON.stringify(key)} has ${problem}; the bridge takes no file under it: rename the file`);
    this.name = 'KeyRefused';
  }
}

/**
 * Files under dir, skipping hidden files and folders: their raw paths (bytes,
 * so a name that is not UTF-8 can still be opened) by key-safe relative name
 * (fileNameFromBytes), sorted by name.
 */
export async function listFiles(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const walk = async (raw: Buffer, relative: string): Promise<void> => {
    const entries = await readdir(raw, { withFileTypes: true, encoding: 'buffer' }).catch(() => []);
    for (const entry of entries) {
      const { name } = fileNameFromBytes(entry.name);
      if (name.startsWith('.')) continue;
      const rawChild = Buffer.concat([raw, Buffer.from(path.sep), entry.name]);
      const child = relative ? path.join(relative, name) : name;
      if (entry.isDirectory()) await walk(rawChild, child);
      else if (entry.isFile()) files.set(child, rawChild);
    }
  };
  await walk(Buffer.from(dir), '');
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

async function md5Of(file: string | Buffer): Promise<string> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function contentTypeFor(file: string): string {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.tif' || ext === '.tiff') return 'image/tiff';
  if (ext === '.geojson') return 'application/geo+json';
  if (ext === '.json') return 'application/json';
  return 'application/octet-stream';
}
