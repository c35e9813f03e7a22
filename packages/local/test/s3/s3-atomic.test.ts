/**
 * The local S3 replaces an object atomically, as S3 does: a GET while the same
 * key is being written again answers the old object or the new one, whole.
 * s3rver alone truncated the file in place, so a job reading its input while
 * a second upload of the same key was under way read an empty or partial
 * object (the pipeline e2e "duplicate events for one object" failed now and
 * then on it).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../src/s3/server.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'atomic-bucket';
const SIZE = 8 << 20;
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Every file under a folder, with its size. */
async function files(dir: string): Promise<{ name: string; size: number }[]> {
  const out: { name: string; size: number }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    out.push({ name: full, size: (await stat(full).catch(() => ({ size: -1 }))).size });
  }
  return out;
}

describe('local S3 writes', () => {
  let dir: string;
  let s3rver: LocalS3;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-atomic-'));
    s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET] });
  });
  afterAll(async () => {
    await s3rver?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the old object or the new one, whole, while the key is written again', async () => {
    // Prepare: an object, and a second upload of the same key held half way
    const s3 = localS3Client(s3rver.endpoint, s3rver.credentials);
    const first = Buffer.alloc(SIZE, 1);
    const second = Buffer.alloc(SIZE, 2);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/x.geojson', Body: first }));
    const objectFile = (await files(dir)).find((f) => f.name.endsWith('x.geojson._S3rver_object'));
    expect(objectFile?.size).toBe(SIZE);
    const body = new PassThrough();
    const overwrite = s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/x.geojson', Body: body, ContentLength: SIZE }));
    body.write(second.subarray(0, SIZE / 2));
    // Wait until the server stores the new bytes: a file written aside, or (s3rver alone) the object's file cut short.
    for (;;) {
      const now = await files(dir);
      const aside = now.some((f) => f.name.includes('._S3rver_object.partial-') && f.size > 0);
      const cut = (now.find((f) => f.name === objectFile?.name)?.size ?? SIZE) < SIZE;
      if (aside || cut) break;
      await new Promise((resolve) => setImmediate(resolve));
    }

    // Act: read while the upload is half way, then finish it and read again
    const during = await Promise.all(
      [1, 2, 3].map(async () => {
        const answer = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'inbox/x.geojson' }));
        return sha(await (answer.Body as NonNullable<typeof answer.Body>).transformToByteArray());
      }),
    );
    body.end(second.subarray(SIZE / 2));
    await overwrite;
    const after = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'inbox/x.geojson' }));
    const afterBytes = await (after.Body as NonNullable<typeof after.Body>).transformToByteArray();

    // Assess
    expect(during).toEqual([sha(first), sha(first), sha(first)]);
    expect(sha(afterBytes)).toBe(sha(second));
    expect(after.ETag).toBe(`"${createHash('md5').update(second).digest('hex')}"`);
    expect((await files(dir)).filter((f) => f.name.includes('.partial-'))).toEqual([]);
  });
});
