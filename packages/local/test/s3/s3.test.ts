import { mkdtemp, rm, writeFile, mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, PutObjectTaggingCommand, GetObjectTaggingCommand, CopyObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalS3, type LocalS3, type S3NotificationRecord } from '../../src/s3/server.ts';
import { localS3Client } from '../../src/s3/client.ts';
import { completeObject, objectsFromMessage } from '../../../../functions/handlers/dispatch.ts';
import { watchDropFolder } from '../../src/s3/drop-folder.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'test-bucket';

describe('local S3 (s3rver in a child process)', () => {
  let dir: string;
  let s3rver: LocalS3;
  const records: S3NotificationRecord[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-'));
    s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET], onRecord: (r) => records.push(r) });
  });
  afterAll(async () => {
    await s3rver?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('round-trips an object with the SDK settings and emits an object-created record', async () => {
    // Prepare
    const s3 = localS3Client(s3rver.endpoint, s3rver.credentials);
    const key = 'inbox/a b+c.geojson';
    // Act
    const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: '{"type":"FeatureCollection","features":[]}' }));
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    await s3rver.flushNotifications();
    // Assess
    expect(await got.Body?.transformToString()).toContain('FeatureCollection');
    const record = records.find((r) => r.s3.object.key === key) as S3NotificationRecord;
    const refs = objectsFromMessage({ Records: [record] }, { keysEncoded: false });
    // Assess: the dispatch code reads s3rver's record as it is (raw key: '+' stays '+').
    expect(record.eventName).toBe('ObjectCreated:Put');
    expect(refs).toEqual([{ bucket: BUCKET, key, etag: put.ETag?.replace(/"/g, ''), size: 42 }]);
  });

  it('flushNotifications resolves only once every notification of an answered upload has arrived, however late', async () => {
    // Prepare: a local S3 that holds each notification 1.5 s, as a loaded machine may
    const late: S3NotificationRecord[] = [];
    const slow = await startLocalS3({ directory: path.join(dir, 'slow'), buckets: [BUCKET], notificationDelayMs: 1_500, onRecord: (r) => late.push(r) });
    try {
      const s3 = localS3Client(slow.endpoint, slow.credentials);
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/late-1.json', Body: '{}' }));
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/late-2.json', Body: '{}' }));
      const beforeFlush = late.length;
      // Act
      await slow.flushNotifications();
      // Assess: none had arrived with the answers; both have after the flush
      expect(beforeFlush).toBe(0);
      expect(late.map((r) => r.s3.object.key)).toEqual(['inbox/late-1.json', 'inbox/late-2.json']);
    } finally {
      await slow.close();
    }
    // Assess: a stopped server's flush returns at once (nothing more can come)
    await slow.flushNotifications();
  });

  it('completes a Copy record (no ETag in it) with HEAD through the dispatch code', async () => {
    // Prepare
    const s3 = localS3Client(s3rver.endpoint, s3rver.credentials);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'src.json', Body: '{}' }));
    // Act
    await s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'inbox/copied.json', CopySource: `${BUCKET}/src.json` }));
    await s3rver.flushNotifications();
    const record = records.find((r) => r.s3.object.key === 'inbox/copied.json') as S3NotificationRecord;
    const [ref] = objectsFromMessage({ Records: [record] }, { keysEncoded: false });
    const object = await completeObject({ s3 }, ref as NonNullable<typeof ref>);
    // Assess
    expect(record.eventName).toBe('ObjectCreated:Copy');
    expect(object.etag).toMatch(/^[0-9a-f]{32}$/);
    expect(object.size).toBe(2);
  });

  it('lists page by page with continuation tokens (DES under the legacy provider) and keeps tags', async () => {
    // Prepare
    const s3 = localS3Client(s3rver.endpoint, s3rver.credentials);
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `many/${i}.txt`, Body: String(i) }))),
    );
    await s3.send(new PutObjectTaggingCommand({ Bucket: BUCKET, Key: 'many/0.txt', Tagging: { TagSet: [{ Key: 'k', Value: 'v' }] } }));
    // Act
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'many/', MaxKeys: 5, ContinuationToken: token }));
      keys.push(...(page.Contents ?? []).map((c) => c.Key as string));
      token = page.NextContinuationToken;
    } while (token);
    const tags = await s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: 'many/0.txt' }));
    // Assess
    expect(keys).toHaveLength(12);
    expect(tags.TagSet).toEqual([{ Key: 'k', Value: 'v' }]);
  });

  it('uploads files copied into the drop folder to the same path under the inbox, once complete', async () => {
    // Prepare
    const s3 = localS3Client(s3rver.endpoint, s3rver.credentials);
    const dropDir = path.join(dir, 'drop');
    const uploadedDir = path.join(dir, 'uploaded');
    const uploads: { key: string; etag: string }[] = [];
    const folder = await watchDropFolder({ dir: dropDir, uploadedDir, s3, bucket: BUCKET, intervalMs: 50, stableMs: 200, onUploaded: (u) => uploads.push(u) });
    await mkdir(path.join(dropDir, 'buildings'), { recursive: true });
    await writeFile(path.join(dropDir, 'buildings', 'area.geojson'), '{"type":"FeatureCollection","features":[]}');
    await writeFile(path.join(dropDir, '.partial.tif'), 'ignored');
    // Act
    await folder.idle();
    await folder.close();
    // Assess
    expect(uploads.map((u) => u.key)).toEqual(['inbox/buildings/area.geojson']);
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'inbox/buildings/area.geojson' }));
    expect(`"${uploads[0]?.etag}"`).toBe(got.ETag);
    expect(await readFile(path.join(uploadedDir, 'buildings', 'area.geojson'), 'utf8')).toContain('FeatureCollection');
    await expect(stat(path.join(dropDir, 'buildings', 'area.geojson'))).rejects.toThrow();
    expect((await stat(path.join(dropDir, '.partial.tif'))).isFile()).toBe(true);
  });
});

describe('local S3 lifecycle', () => {
  it('keeps objects across a restart on the same directory', async () => {
    // Prepare
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-'));
    const first = await startLocalS3({ directory: dir, buckets: [BUCKET] });
    await localS3Client(first.endpoint, first.credentials).send(new PutObjectCommand({ Bucket: BUCKET, Key: 'kept.txt', Body: 'kept' }));
    await first.close();
    // Act
    const second = await startLocalS3({ directory: dir, buckets: [BUCKET] });
    const got = await localS3Client(second.endpoint, second.credentials).send(new GetObjectCommand({ Bucket: BUCKET, Key: 'kept.txt' }));
    // Assess
    expect(await got.Body?.transformToString()).toBe('kept');
    await second.close();
    await rm(dir, { recursive: true, force: true });
  });
});
