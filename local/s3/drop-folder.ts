/**
 * The local drop folder: files copied under it are streamed into the bucket's
 * inbox at the same relative path, so trying the bridge needs no S3 client.
 *
 *   <dropDir>/buildings/area.tif  ->  s3://<bucket>/inbox/buildings/area.tif
 *
 * The folder is scanned periodically (portable, unlike recursive fs.watch) and
 * a file is uploaded once its size and modification time are the same on two
 * scans in a row, so a copy still in progress is never uploaded half-written.
 * Hidden files (a leading dot, as editors and rsync use for partial copies)
 * are ignored. After the upload the file is moved to `uploadedDir` (same
 * relative path), so a restart does not upload it again and nothing is deleted.
 */
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

export interface DropFolderOptions {
  dir: string;
  /** Where uploaded files are moved to. */
  uploadedDir: string;
  s3: S3Client;
  bucket: string;
  /** Default 'inbox/'. */
  inboxPrefix?: string;
  /** Default 500 ms. */
  intervalMs?: number;
  onUploaded?: (upload: { file: string; key: string; etag: string; size: number }) => void;
  onError?: (file: string, error: unknown) => void;
}

export interface DropFolder {
  /** Scans once and uploads every stable file (also used by tests). */
  scan(): Promise<void>;
  /** Resolves when no file is waiting or uploading. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

interface Seen {
  size: number;
  mtimeMs: number;
  /** A failed upload is retried only after the file changes or this time passes. */
  retryAfter?: number;
}

export async function watchDropFolder(options: DropFolderOptions): Promise<DropFolder> {
  const inboxPrefix = options.inboxPrefix ?? 'inbox/';
  await mkdir(options.dir, { recursive: true });
  const seen = new Map<string, Seen>();
  let scanning: Promise<void> | undefined;
  let pending = 0;
  let closed = false;

  const uploadOne = async (relative: string): Promise<void> => {
    const file = path.join(options.dir, relative);
    const key = inboxPrefix + relative.split(path.sep).join('/');
    const info = await stat(file);
    const upload = new Upload({
      client: options.s3,
      params: { Bucket: options.bucket, Key: key, Body: createReadStream(file), ContentType: contentTypeFor(file) },
    });
    const result = await upload.done();
    const target = path.join(options.uploadedDir, relative);
    await mkdir(path.dirname(target), { recursive: true });
    await rename(file, target);
    seen.delete(relative);
    options.onUploaded?.({ file: target, key, etag: (result.ETag ?? '').replace(/"/g, ''), size: info.size });
  };

  const scanOnce = async (): Promise<void> => {
    const files = await listFiles(options.dir);
    for (const relative of files) {
      const info = await stat(path.join(options.dir, relative)).catch(() => undefined);
      if (!info) continue;
      const before = seen.get(relative);
      const unchanged = before && before.size === info.size && before.mtimeMs === info.mtimeMs;
      if (!unchanged) {
        seen.set(relative, { size: info.size, mtimeMs: info.mtimeMs });
        continue;
      }
      if (before.retryAfter && before.retryAfter > Date.now()) continue;
      pending++;
      try {
        await uploadOne(relative);
      } catch (error) {
        before.retryAfter = Date.now() + 10_000;
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
  }, options.intervalMs ?? 500);
  timer.unref();

  return {
    scan,
    idle: async () => {
      // Two scans: the first notes new files, the second uploads them once stable.
      while (!closed) {
        await scan();
        const waiting = [...seen.values()].some((s) => !s.retryAfter);
        if (!waiting && pending === 0) return;
        await new Promise((resolve) => setTimeout(resolve, Math.min(options.intervalMs ?? 500, 200)));
      }
    },
    close: async () => {
      closed = true;
      clearInterval(timer);
      await scanning;
    },
  };
}

/** Files under dir, relative, skipping hidden files and folders. */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const files: string[] = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const relative = path.relative(dir, path.join(entry.parentPath, entry.name));
    if (relative.split(path.sep).some((part) => part.startsWith('.'))) continue;
    files.push(relative);
  }
  return files.sort();
}

function contentTypeFor(file: string): string {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.tif' || ext === '.tiff') return 'image/tiff';
  if (ext === '.geojson') return 'application/geo+json';
  if (ext === '.json') return 'application/json';
  return 'application/octet-stream';
}
