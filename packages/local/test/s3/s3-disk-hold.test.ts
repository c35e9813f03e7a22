/**
 * The local S3 while the state folder's disk is full (server.ts, issue 39): the gate holds the verdict of a
 * write until space is back, instead of letting s3rver answer 500 InternalError (S3 on AWS never runs out of
 * disk); a read passes meanwhile; a refused write is answered at once. The disk is a stand-in the test fills
 * and frees.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../src/s3/server.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'disk-hold-bucket';

describe('the local S3 on a full disk', () => {
  let dir: string;
  let s3rver: LocalS3;
  let releaseHeld: (free: boolean) => void = () => undefined;
  let heldOne: () => void = () => undefined;
  const disk = {
    full: false,
    holds: [] as string[],
    check: async () => disk.full,
    whenFree: (what: string) =>
      new Promise<boolean>((resolve) => {
        disk.holds.push(what);
        releaseHeld = resolve;
        heldOne();
      }),
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-disk-hold-'));
    s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET], disk });
  });
  afterAll(async () => {
    await s3rver?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('holds a write until space is back, and answers a read meanwhile', async () => {
    // Prepare: an object, then the disk full
    const s3 = localS3Client(s3rver.endpoint, s3rver.credentials);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'results/a.json', Body: 'old' }));
    disk.full = true;
    const held = new Promise<void>((resolve) => (heldOne = resolve));
    // Act
    const write = s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'results/a.json', Body: 'new' }));
    await held;
    const during = await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'results/a.json' }))).Body!.transformToString();
    disk.full = false;
    releaseHeld(true);
    await write;
    const after = await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'results/a.json' }))).Body!.transformToString();
    // Assess
    expect(disk.holds).toEqual(['the local S3']);
    expect(during).toBe('old');
    expect(after).toBe('new');
    s3.destroy();
  });

  it('answers a refused write at once, without holding it', async () => {
    // Prepare: the disk full, and a client whose key the gate does not know
    disk.full = true;
    disk.holds.length = 0;
    const stranger = localS3Client(s3rver.endpoint, { accessKeyId: 'AKIASTRANGER0000000', secretAccessKey: 'not-issued' });
    // Act
    const error = (await stranger.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'results/b.json', Body: 'x' })).catch((e: unknown) => e)) as Error;
    // Assess
    expect(error.name).toBe('InvalidAccessKeyId');
    expect(disk.holds).toEqual([]);
    stranger.destroy();
    disk.full = false;
  });
});
