/**
 * The local S3 refuses keys that s3rver's file store would turn into paths
 * outside its bucket folder (or into another key's file), even from a signer
 * the gate admits, and answers like AWS does to a principal without
 * s3:ListBucket (403 instead of 404).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { CopyObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
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
    ['plain dot-dot segments', `/${BUCKET}/x/../../../outside`],
    ['percent-encoded dot-dot segments', `/${BUCKET}/x/%2E%2E/%2E%2E/%2e%2e/outside`],
    ['an encoded slash between dot-dots', `/${BUCKET}/x%2F..%2F..%2F..%2Foutside`],
    ['a dot-dot bucket name', '/%2E%2E/outside'],
  ])('refuses a PUT with %s, signed or not, and writes nothing outside the bucket folder', async (_label, rawPath) => {
    // Act
    const unsigned = await rawRequest(server.endpoint, { method: 'PUT', path: rawPath, body: 'evil' });
    const signed = await signedRequest(server.endpoint, server.credentials, { method: 'PUT', path: rawPath, body: 'evil' });
    // Assess
    expect(unsigned.status).toBe(403);
    expect(signed.status).toBe(400);
    expect(signed.text).toContain('refuses');
    expect((await readdir(dir)).sort()).toEqual(['s3']);
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
  ])('refuses a key with %s through the SDK', async (_label, key) => {
    // Act
    const status = await statusOf(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: '{}' })));
    // Assess
    expect(status).toBe(400);
  });

  it('refuses a copy whose source key has dot-dot segments', async () => {
    // Prepare
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/src.json', Body: '{}' }));
    // Act
    const status = await statusOf(s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'inbox/copy.json', CopySource: `${BUCKET}/inbox/../../../etc/hostname` })));
    // Assess
    expect(status).toBe(400);
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
