/**
 * The drop folder never uploads a half-written file: a copy that pauses
 * longer than one scan (a slow disk, a network share, a download) is uploaded
 * once, whole, after it stopped changing for the stability window and no
 * process holds it open. Each test waits on the upload callback, not on time.
 */
import { appendFile, mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_STABLE_MS, dropKey, watchDropFolder, type DropFolder, type DropFolderOptions } from '../../src/s3/drop-folder.ts';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../src/s3/server.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'drop-bucket';
const CHUNK = 'x'.repeat(64 * 1024);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Upload {
  file: string;
  key: string;
  etag: string;
  size: number;
}

describe('drop folder: only whole files go up', () => {
  let dir: string;
  let s3rver: LocalS3;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-drop-'));
    s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET] });
  }, 60_000);
  afterAll(async () => {
    await s3rver?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A watcher whose uploads arrive as promises, in order. */
  async function watch(name: string, options: Partial<DropFolderOptions> = {}) {
    const uploads: Upload[] = [];
    const waiters: ((upload: Upload) => void)[] = [];
    const errors: string[] = [];
    const folder: DropFolder = await watchDropFolder({
      dir: path.join(dir, name, 'drop'),
      uploadedDir: path.join(dir, name, 'uploaded'),
      s3: localS3Client(s3rver.endpoint, s3rver.credentials),
      bucket: BUCKET,
      intervalMs: 100,
      onUploaded: (upload) => {
        uploads.push(upload);
        waiters.shift()?.(upload);
      },
      onError: (file, error) => errors.push(`${file}: ${(error as Error).message}`),
      ...options,
    });
    const nextUpload = () => new Promise<Upload>((resolve) => waiters.push(resolve));
    return { folder, uploads, errors, nextUpload, dropDir: path.join(dir, name, 'drop') };
  }

  it('waits a stability window of several seconds by default', () => {
    expect(DEFAULT_STABLE_MS).toBeGreaterThanOrEqual(3_000);
  });

  it('uploads a copy that pauses 1.5 s between chunks once, whole, after it stopped changing', { timeout: 60_000 }, async () => {
    // Prepare: the default window; the writer closes the file between chunks (no open handle to see)
    const { folder, uploads, errors, nextUpload, dropDir } = await watch('pausing', { checkOpenHandles: false });
    const file = path.join(dropDir, 'slow.geojson');
    const uploaded = nextUpload();
    // Act
    await writeFile(file, CHUNK);
    for (let chunk = 1; chunk < 3; chunk++) {
      await pause(1_500);
      await appendFile(file, CHUNK);
    }
    const first = await uploaded;
    await folder.idle();
    await folder.close();
    // Assess
    expect(first.size).toBe(3 * CHUNK.length);
    expect(uploads).toHaveLength(1);
    expect(errors).toEqual([]);
    const object = await localS3Client(s3rver.endpoint, s3rver.credentials).send(new GetObjectCommand({ Bucket: BUCKET, Key: 'inbox/slow.geojson' }));
    expect(object.ContentLength).toBe(3 * CHUNK.length);
    expect((await readFile(first.file)).length).toBe(3 * CHUNK.length);
  });

  it('does not upload a file some process holds open, even when it has not changed for longer than the window', { timeout: 60_000 }, async () => {
    // Prepare: a short window, and a writer that keeps its handle open while it pauses longer than it
    const { folder, uploads, nextUpload, dropDir } = await watch('open-handle', { stableMs: 300 });
    const file = path.join(dropDir, 'download.tif');
    const uploaded = nextUpload();
    // Act
    const handle = await open(file, 'w');
    await handle.write(CHUNK);
    await pause(1_500);
    await handle.write(CHUNK);
    await pause(1_500);
    await handle.write(CHUNK);
    await handle.close();
    const first = await uploaded;
    await folder.idle();
    await folder.close();
    // Assess
    if (process.platform === 'linux') {
      expect(first.size).toBe(3 * CHUNK.length);
      expect(uploads).toHaveLength(1);
    } else {
      expect(first.size).toBeGreaterThan(0);
    }
  });

  it('uploads a file written again after its upload as a new version (another ETag, so another job)', { timeout: 60_000 }, async () => {
    // Prepare
    const { folder, nextUpload, dropDir } = await watch('versions', { stableMs: 300 });
    const file = path.join(dropDir, 'area.geojson');
    // Act
    const first = nextUpload();
    await writeFile(file, '{"version":1}');
    const one = await first;
    const second = nextUpload();
    await writeFile(file, '{"version":2}');
    const two = await second;
    await folder.close();
    // Assess
    expect(two.key).toBe(one.key);
    expect(two.etag).not.toBe(one.etag);
    expect(await readFile(one.file, 'utf8')).toBe('{"version":1}');
    expect(await readFile(two.file, 'utf8')).toBe('{"version":2}');
  });

  it('treats the drop folder as the inbox: inbox/buildings/x.tif goes to inbox/buildings/x.tif, not inbox/inbox/', { timeout: 60_000 }, async () => {
    // Prepare
    const { folder, nextUpload, dropDir } = await watch('inbox-prefix', { stableMs: 200 });
    await mkdir(path.join(dropDir, 'inbox', 'buildings'), { recursive: true });
    const uploaded = nextUpload();
    // Act
    await writeFile(path.join(dropDir, 'inbox', 'buildings', 'x.tif'), 'tiff');
    const upload = await uploaded;
    await folder.close();
    // Assess
    expect(upload.key).toBe('inbox/buildings/x.tif');
    expect(dropKey(path.join('inbox', 'x.tif'))).toBe('inbox/x.tif');
    expect(dropKey('inbox')).toBe('inbox/inbox');
    expect(dropKey(path.join('buildings', 'inbox', 'x.tif'))).toBe('inbox/buildings/inbox/x.tif');
  });

  it('says once that a dropped file is waiting to become stable, however long it waits', { timeout: 60_000 }, async () => {
    // Prepare: a copy that holds the file open and writes in bursts
    const waiting: string[] = [];
    let said!: () => void;
    const announced = new Promise<void>((resolve) => (said = resolve));
    const { folder, nextUpload, dropDir } = await watch('announce', {
      stableMs: 200,
      onWaiting: (file, why) => {
        waiting.push(`${path.basename(file)} ${why}`);
        said();
      },
    });
    await mkdir(dropDir, { recursive: true });
    const handle = await open(path.join(dropDir, 'slow.geojson'), 'w');
    await handle.write('{"type":"FeatureCollection",');
    // Act: held open past the window, then written again, then closed
    await announced;
    await handle.write(`"x":"${CHUNK}",`);
    await handle.write('"features":[]}');
    const uploaded = nextUpload();
    await handle.close();
    await uploaded;
    await folder.close();
    // Assess: one line, saying why
    expect(waiting).toEqual(['slow.geojson open']);
  });
});
