/**
 * Issue 38, point 4: the local S3 takes every key AWS takes (up to 1,024
 * bytes of UTF-8, any segment length), though it stores keys as paths and
 * file systems take 255 bytes per name.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../src/s3/server.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'long-names';
const letters = (n: number) => '\u{1D4D0}'.repeat(n); // four bytes each

describe('local S3: long names', () => {
  let dir: string;
  let server: LocalS3;
  let s3: S3Client;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-long-'));
    server = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET] });
    s3 = localS3Client(server.endpoint, server.credentials);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['a 233-byte file name', `inbox/${'n'.repeat(228)}.tif`],
    ['a 240-byte file name', `inbox/${'m'.repeat(235)}.tif`],
    ['a folder of 64 four-byte letters (256 bytes)', `results/a.geojson/a-${letters(64)}/result.geojson`],
    ['a 1,024-byte key of one segment', `inbox/${'k'.repeat(1024 - 'inbox/'.length - '.geojson'.length)}.geojson`],
  ])('stores, reads, lists and deletes %s', async (_what, key) => {
    // Prepare
    expect(Buffer.byteLength(key, 'utf8')).toBeLessThanOrEqual(1024);
    // Act
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'body' }));
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: key.slice(0, key.indexOf('/') + 1) }));
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
    const after = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    // Assess
    expect(await got.Body?.transformToString()).toBe('body');
    expect(listed.Contents?.map((object) => object.Key)).toContain(key);
    expect(after.Contents ?? []).toHaveLength(0);
  });
});
