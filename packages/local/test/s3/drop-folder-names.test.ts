/**
 * Issue 38, "Names": every file dropped ends as an upload or as a rejection
 * handed to `reject` (REJECTED INVALID_KEY with a report, in the bridge),
 * never as "retrying in 10 s" for ever or as a file silently ignored.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchDropFolder } from '../../src/s3/drop-folder.ts';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../src/s3/server.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'drop-names';

describe('drop folder: odd names', () => {
  let dir: string;
  let s3rver: LocalS3;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-drop-names-'));
    s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET] });
  }, 60_000);
  afterAll(async () => {
    await s3rver?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('uploads what S3 takes and hands every other name to reject, once, then moves it aside', { timeout: 60_000 }, async () => {
    // Prepare: the corpus of issue 38's names, written as bytes.
    const dropDir = path.join(dir, 'drop');
    const uploadedDir = path.join(dir, 'uploaded');
    await mkdir(dropDir, { recursive: true });
    const names: Buffer[] = [
      Buffer.from('plain.geojson'),
      Buffer.from(`${'n'.repeat(233 - '.geojson'.length)}.geojson`), // 233 bytes: the docs accept it
      Buffer.from('esc-\x1b[2J\x1b]0;pwned\x07.geojson'),
      Buffer.from('line\nforged.geojson'),
      Buffer.from('nel-\u0085.geojson'),
      Buffer.from('ls-\u2028.geojson'),
      Buffer.concat([Buffer.from('latin1-'), Buffer.from([0xe9]), Buffer.from('.geojson')]), // not UTF-8
    ];
    for (const name of names) await writeFile(Buffer.concat([Buffer.from(`${dropDir}/`), name]), '{}');
    const uploaded: string[] = [];
    const rejected: { key: string; etag: string; problem: string }[] = [];
    const errors: string[] = [];
    const folder = await watchDropFolder({
      dir: dropDir,
      uploadedDir,
      s3: localS3Client(s3rver.endpoint, s3rver.credentials),
      bucket: BUCKET,
      intervalMs: 50,
      stableMs: 100,
      onUploaded: (upload) => uploaded.push(upload.key),
      reject: async ({ key, etag, problem }) => void rejected.push({ key, etag, problem }),
      onError: (file, error) => errors.push(`${file}: ${(error as Error).message}`),
    });
    // Act
    await folder.idle();
    await folder.close();
    // Assess
    expect(errors).toEqual([]);
    expect(uploaded.sort()).toEqual(['inbox/plain.geojson', `inbox/${'n'.repeat(225)}.geojson`].sort());
    expect(rejected.map((r) => r.key).sort()).toEqual(
      [
        'inbox/esc-\x1b[2J\x1b]0;pwned\x07.geojson',
        'inbox/line\nforged.geojson',
        'inbox/nel-\u0085.geojson',
        'inbox/ls-\u2028.geojson',
        'inbox/latin1-\u001aE9.geojson',
      ].sort(),
    );
    expect(rejected.find((r) => r.key.includes('latin1'))?.problem).toMatch(/not UTF-8/);
    // The ETag is S3's for a plain upload (MD5), so the job id is the one an upload would give.
    expect(new Set(rejected.map((r) => r.etag))).toEqual(new Set([createHash('md5').update('{}').digest('hex')]));
    expect(await readdir(dropDir)).toEqual([]);
    expect((await readdir(uploadedDir, { encoding: 'buffer' })).length).toBe(names.length);
  });

  it('without reject, uploads no refused name, says once why and does not retry it', { timeout: 60_000 }, async () => {
    // Prepare: U+2028, which the local S3 would store (so the old watcher uploaded it, a job that never ended).
    const dropDir = path.join(dir, 'drop-2');
    await mkdir(dropDir, { recursive: true });
    await writeFile(path.join(dropDir, 'ls\u2028.geojson'), '{}');
    const errors: string[] = [];
    const uploaded: string[] = [];
    const folder = await watchDropFolder({
      dir: dropDir,
      uploadedDir: path.join(dir, 'uploaded-2'),
      s3: localS3Client(s3rver.endpoint, s3rver.credentials),
      bucket: BUCKET,
      intervalMs: 50,
      stableMs: 100,
      onError: (_file, error) => errors.push((error as Error).message),
      onUploaded: (upload) => uploaded.push(upload.key),
    });
    // Act: idle returns once nothing is waiting; three more scans would retry a retried file.
    await folder.idle();
    for (let i = 0; i < 3; i++) await folder.scan();
    await folder.close();
    // Assess
    expect(uploaded).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/U\+2028.*rename the file/);
  });
});
