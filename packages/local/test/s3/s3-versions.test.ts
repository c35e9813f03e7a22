/**
 * Versioned buckets in the local S3 (issue 37 point 7), as
 * docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html describes
 * them: every write answers x-amz-version-id, its notification carries the
 * version, GET/HEAD with versionId return that version after an overwrite or
 * a delete, an unknown version is 404 NoSuchVersion, and a request with a
 * versionId needs the `...Version` IAM action. s3rver alone had no versions.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3, type S3NotificationRecord } from '../../src/s3/server.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const VERSIONED = 'versioned-bucket';
const PLAIN = 'plain-bucket';

const text = async (answer: { Body?: { transformToString(): Promise<string> } }) => (answer.Body ? answer.Body.transformToString() : '');

async function failure(work: Promise<unknown>): Promise<{ status?: number; name?: string }> {
  try {
    await work;
    return {};
  } catch (error) {
    const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    return { status: e.$metadata?.httpStatusCode, name: e.name };
  }
}

describe('local S3: versioned buckets', () => {
  let dir: string;
  let server: LocalS3;
  let s3: S3Client;
  const records: S3NotificationRecord[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-versions-'));
    server = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [VERSIONED, PLAIN], versionedBuckets: [VERSIONED], onRecord: (r) => records.push(r) });
    s3 = localS3Client(server.endpoint, server.credentials);
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('gives each PUT its own version, and GET or HEAD by versionId that version after the key was overwritten', async () => {
    // Prepare
    const key = 'inbox/twice.geojson';
    // Act
    const first = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'first version' }));
    const second = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'second, longer version' }));
    const oldOne = await s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: first.VersionId }));
    const newOne = await s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: second.VersionId }));
    const current = await s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key }));
    const oldHead = await s3.send(new HeadObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: first.VersionId }));
    const oldRange = await s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: first.VersionId, Range: 'bytes=0-4' }));
    // Assess
    expect(first.VersionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(second.VersionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(second.VersionId).not.toBe(first.VersionId);
    expect(await text(oldOne)).toBe('first version');
    expect(oldOne.VersionId).toBe(first.VersionId);
    expect(oldOne.ETag).toBe(first.ETag);
    expect(await text(newOne)).toBe('second, longer version');
    expect(await text(current)).toBe('second, longer version');
    expect(current.VersionId).toBe(second.VersionId);
    expect(oldHead.ContentLength).toBe('first version'.length);
    expect(oldHead.VersionId).toBe(first.VersionId);
    expect(await text(oldRange)).toBe('first');
  });

  it('puts the version id in the notification record of the write', async () => {
    // Prepare
    const key = 'inbox/notified.geojson';
    // Act
    const put = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: '{}' }));
    await server.flushNotifications();
    // Assess
    const record = records.find((r) => r.s3.object.key === key);
    expect(record?.eventName).toBe('ObjectCreated:Put');
    expect(record?.s3.object.versionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(record?.s3.object.versionId).toBe(put.VersionId);
  });

  it('answers 404 NoSuchVersion for a version the key never had, 400 for a malformed id', async () => {
    // Prepare
    const key = 'inbox/one.geojson';
    await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'x' }));
    // Act
    const unknown = await failure(s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: 'A'.repeat(32) })));
    const malformed = await failure(s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: 'not/an id' })));
    const otherKeys = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: 'inbox/other.geojson', Body: 'y' }));
    const ofAnotherKey = await failure(s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: otherKeys.VersionId })));
    // Assess
    expect(unknown).toEqual({ status: 404, name: 'NoSuchVersion' });
    expect(malformed).toEqual({ status: 400, name: 'InvalidArgument' });
    expect(ofAnotherKey).toEqual({ status: 404, name: 'NoSuchVersion' });
  });

  it('adds a delete marker on DELETE: the key is gone, its versions are not', async () => {
    // Prepare
    const key = 'inbox/deleted.geojson';
    const put = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'kept' }));
    // Act
    const deleted = await s3.send(new DeleteObjectCommand({ Bucket: VERSIONED, Key: key }));
    const current = await failure(s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key })));
    const byVersion = await s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: put.VersionId }));
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: VERSIONED, Prefix: 'inbox/deleted' }));
    // Assess
    expect(deleted.DeleteMarker).toBe(true);
    expect(deleted.VersionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(current).toEqual({ status: 404, name: 'NoSuchKey' });
    expect(await text(byVersion)).toBe('kept');
    expect(listed.KeyCount).toBe(0);
  });

  it('versions a multipart upload and a copy, and copies a given version', async () => {
    // Prepare
    const key = 'inbox/multi.tif';
    const part = Buffer.alloc(5 << 20, 7);
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: VERSIONED, Key: key }));
    const uploaded = await s3.send(new UploadPartCommand({ Bucket: VERSIONED, Key: key, UploadId: upload.UploadId, PartNumber: 1, Body: part }));
    // Act
    const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: VERSIONED, Key: key, UploadId: upload.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: uploaded.ETag }] } }));
    await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'overwritten' }));
    const copy = await s3.send(new CopyObjectCommand({ Bucket: VERSIONED, Key: 'inbox/copy.tif', CopySource: `${VERSIONED}/${key}?versionId=${done.VersionId}` }));
    const copied = await s3.send(new HeadObjectCommand({ Bucket: VERSIONED, Key: 'inbox/copy.tif', VersionId: copy.VersionId }));
    // Assess
    expect(done.VersionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(copy.VersionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(copy.CopySourceVersionId).toBe(done.VersionId);
    expect(copied.ContentLength).toBe(part.length);
  });

  it('keeps tags per version: a version tagged by id keeps them after an overwrite, the new version starts without', async () => {
    // Prepare
    const key = 'inbox/tagged.geojson';
    const first = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'one' }));
    // Act
    await s3.send(new PutObjectTaggingCommand({ Bucket: VERSIONED, Key: key, VersionId: first.VersionId, Tagging: { TagSet: [{ Key: 'done', Value: 'job-1' }] } }));
    const currentBefore = await s3.send(new GetObjectTaggingCommand({ Bucket: VERSIONED, Key: key }));
    await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'two' }));
    const firstAfter = await s3.send(new GetObjectTaggingCommand({ Bucket: VERSIONED, Key: key, VersionId: first.VersionId }));
    const currentAfter = await s3.send(new GetObjectTaggingCommand({ Bucket: VERSIONED, Key: key }));
    // Assess
    expect(currentBefore.TagSet).toEqual([{ Key: 'done', Value: 'job-1' }]);
    expect(firstAfter.TagSet).toEqual([{ Key: 'done', Value: 'job-1' }]);
    expect(currentAfter.TagSet ?? []).toEqual([]);
  });

  it('keeps the object written before versioning as the null version', async () => {
    // Prepare: a bucket versioned through PutBucketVersioning after its first object
    const key = 'inbox/before.geojson';
    await s3.send(new PutObjectCommand({ Bucket: PLAIN, Key: key, Body: 'unversioned' }));
    const before = await s3.send(new GetBucketVersioningCommand({ Bucket: PLAIN }));
    // Act
    await s3.send(new PutBucketVersioningCommand({ Bucket: PLAIN, VersioningConfiguration: { Status: 'Enabled' } }));
    const after = await s3.send(new GetBucketVersioningCommand({ Bucket: PLAIN }));
    const put = await s3.send(new PutObjectCommand({ Bucket: PLAIN, Key: key, Body: 'versioned' }));
    const nullVersion = await s3.send(new GetObjectCommand({ Bucket: PLAIN, Key: key, VersionId: 'null' }));
    // Assess
    expect(before.Status).toBeUndefined();
    expect(after.Status).toBe('Enabled');
    expect(put.VersionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(await text(nullVersion)).toBe('unversioned');
  });

  it('refuses a GET by versionId to a role with s3:GetObject but not s3:GetObjectVersion', async () => {
    // Prepare
    const key = 'inbox/guarded.geojson';
    const put = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'guarded' }));
    const reader = server.store.addPrincipal('reader-without-versions', 'arn:aws:iam::000000000000:role/reader-without-versions', [
      { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: `arn:aws:s3:::${VERSIONED}/*` }] },
    ]);
    const versionReader = server.store.addPrincipal('reader-with-versions', 'arn:aws:iam::000000000000:role/reader-with-versions', [
      { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:GetObjectVersion'], Resource: `arn:aws:s3:::${VERSIONED}/*` }] },
    ]);
    // Act
    const plain = await localS3Client(server.endpoint, reader).send(new GetObjectCommand({ Bucket: VERSIONED, Key: key }));
    const refused = await failure(localS3Client(server.endpoint, reader).send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: put.VersionId })));
    const allowed = await localS3Client(server.endpoint, versionReader).send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: put.VersionId }));
    // Assess
    expect(await text(plain)).toBe('guarded');
    expect(refused).toEqual({ status: 403, name: 'AccessDenied' });
    expect(await text(allowed)).toBe('guarded');
  });

  it('keeps versions and the versioning across a restart on the same folder', { timeout: 60_000 }, async () => {
    // Prepare: two versions, then the server stopped and started again without versionedBuckets
    const key = 'inbox/restarted.geojson';
    const first = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'before the restart' }));
    await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'current' }));
    await server.close();
    server = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [VERSIONED, PLAIN], onRecord: (r) => records.push(r) });
    s3 = localS3Client(server.endpoint, server.credentials);
    // Act
    const old = await s3.send(new GetObjectCommand({ Bucket: VERSIONED, Key: key, VersionId: first.VersionId }));
    const versioning = await s3.send(new GetBucketVersioningCommand({ Bucket: VERSIONED }));
    const next = await s3.send(new PutObjectCommand({ Bucket: VERSIONED, Key: key, Body: 'after' }));
    // Assess
    expect(await text(old)).toBe('before the restart');
    expect(versioning.Status).toBe('Enabled');
    expect(next.VersionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
  });
});
