/**
 * The local S3 takes every key AWS takes (issue 37 point 7), `..` segments
 * included, and never writes outside its bucket folder nor maps two keys to
 * one file (s3rver-keys.cjs); it refuses bucket names S3 refuses; and it
 * answers like AWS does to a principal without s3:ListBucket (403 instead of 404).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { CopyObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../src/s3/server.ts';
import { rawRequest, signedRequest } from '../../../../test/support/signed-request.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'guard-bucket';

async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? -1;
  }
}

describe('local S3 key guard', () => {
  let dir: string;
  let server: LocalS3;
  let s3: S3Client;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-guard-'));
    server = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET] });
    s3 = localS3Client(server.endpoint, server.credentials);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['plain dot-dot segments', `/${BUCKET}/x/../../../outside`, 'x/../../../outside'],
    ['percent-encoded dot-dot segments', `/${BUCKET}/x/%2E%2E/%2E%2E/%2e%2e/outside`, 'x/../../../outside'],
    ['an encoded slash between dot-dots', `/${BUCKET}/x%2F..%2F..%2F..%2Foutside`, 'x/../../../outside'],
  ])('stores a PUT with %s under its own key, and writes nothing outside the bucket folder (unsigned: 403)', async (_label, rawPath, key) => {
    // Act
    const unsigned = await rawRequest(server.endpoint, { method: 'PUT', path: rawPath, body: 'evil' });
    const signed = await signedRequest(server.endpoint, server.credentials, { method: 'PUT', path: rawPath, body: 'evil' });
    const outside = await statusOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'outside' })));
    // Assess
    expect(unsigned.status).toBe(403);
    expect(signed.status).toBe(200);
    expect(await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body?.transformToString()).toBe('evil');
    expect(outside).toBe(404);
    expect((await readdir(dir)).sort()).toEqual(['s3']);
    expect((await readdir(path.join(dir, 's3'))).sort()).toEqual([BUCKET]);
  });

  it('refuses a dot-dot bucket name, signed or not, as S3 does (InvalidBucketName)', async () => {
    // Act
    const unsigned = await rawRequest(server.endpoint, { method: 'PUT', path: '/%2E%2E/outside', body: 'evil' });
    const signed = await signedRequest(server.endpoint, server.credentials, { method: 'PUT', path: '/%2E%2E/outside', body: 'evil' });
    // Assess
    expect(unsigned.status).toBe(403);
    expect(signed.status).toBe(400);
    expect(signed.text).toContain('InvalidBucketName');
    expect((await readdir(path.join(dir, 's3'))).sort()).toEqual([BUCKET]);
  });

  it.each([
    ['a dot segment', 'inbox/./a.geojson'],
    ['a dot-dot segment', 'inbox/a/../b.geojson'],
    ['an empty segment', 'inbox//a.geojson'],
    ['a leading slash', '/inbox/a.geojson'],
    ['a control character', 'inbox/a\u0001b.geojson'],
    ['a newline', 'inbox/a\nb.geojson'],
    ['a C1 control character', 'inbox/a\u0085b.geojson'],
  ])('takes a key with %s through the SDK, as its own object (AWS accepts any UTF-8 key)', async (_label, key) => {
    // Act
    const status = await statusOf(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: key })));
    // Assess
    expect(status).toBe(200);
    expect(await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body?.transformToString()).toBe(key);
  });

  it('copies from a source key with dot-dot segments by that key, never from a file it would name', async () => {
    // Act
    const status = await statusOf(s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'inbox/copy.json', CopySource: `${BUCKET}/inbox/../../../etc/hostname` })));
    // Assess: no such key in the bucket
    expect(status).toBe(404);
  });

  it.each([
    ['a folder marker', 'inbox/folder/'],
    ['a hidden file', 'inbox/.partial.geojson'],
    ['a name that starts with two dots', 'inbox/..a.geojson'],
    ['dots inside a name', 'inbox/a..b/c...d.tif'],
    ['a non-ASCII name', 'inbox/Zürich/東京.tif'],
  ])('accepts %s', async (_label, key) => {
    // Act
    const status = await statusOf(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: '{}' })));
    // Assess
    expect(status).toBe(200);
    expect(await statusOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })))).toBe(200);
  });
});

describe('local S3 as a principal with limited s3:ListBucket', () => {
  let dir: string;
  const servers: LocalS3[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-list-'));
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A client signing as a role allowed s3:GetObject on the bucket, and s3:ListBucket on these prefixes only (all when undefined). */
  async function serverWith(name: string, listBucketPrefixes?: string[]): Promise<S3Client> {
    const server = await startLocalS3({ directory: path.join(dir, name), buckets: [BUCKET] });
    servers.push(server);
    await localS3Client(server.endpoint, server.credentials).send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/here.geojson', Body: '{}' }));
    const list = { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${BUCKET}` };
    const statements = [
      { Effect: 'Allow', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/*` },
      ...(listBucketPrefixes === undefined ? [list] : listBucketPrefixes.map((prefix) => ({ ...list, Condition: { StringLike: { 's3:prefix': `${prefix}*` } } }))),
    ];
    const role = server.store.addPrincipal('reader', 'arn:aws:iam::000000000000:role/reader', [{ Version: '2012-10-17', Statement: statements }]);
    return localS3Client(server.endpoint, role);
  }

  it('answers 403 for a missing key without ListBucket, and 200 for an existing one', async () => {
    // Prepare
    const s3 = await serverWith('none', []);
    // Act
    const missing = await statusOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'inbox/not-here.geojson' })));
    const present = await statusOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'inbox/here.geojson' })));
    const listing = await statusOf(s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'inbox/' })));
    // Assess
    expect(missing).toBe(403);
    expect(present).toBe(200);
    expect(listing).toBe(403);
  }, 60_000);

  it('answers 404 under the prefixes ListBucket is granted on, 403 elsewhere', async () => {
    // Prepare
    const s3 = await serverWith('inbox-only', ['inbox/']);
    // Act
    const inInbox = await statusOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'inbox/not-here.geojson' })));
    const elsewhere = await statusOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'results/not-here.geojson' })));
    const listInbox = await statusOf(s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'inbox/' })));
    const listAll = await statusOf(s3.send(new ListObjectsV2Command({ Bucket: BUCKET })));
    // Assess
    expect(inInbox).toBe(404);
    expect(elsewhere).toBe(403);
    expect(listInbox).toBe(200);
    expect(listAll).toBe(403);
  }, 60_000);

  it('answers 404 with s3:ListBucket on the bucket', async () => {
    // Prepare
    const s3 = await serverWith('default');
    // Act
    const missing = await statusOf(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'results/not-here.geojson' })));
    // Assess
    expect(missing).toBe(404);
  }, 60_000);
});
