/**
 * Issue 37 point 7: the local S3 lists and keys objects as AWS does.
 * - ListObjectsV2 with a delimiter answers a CommonPrefixes entry for each
 *   first-level folder below the prefix, however deep its objects lie (s3rver
 *   3.7.1 skipped folders two levels down: `aws s3 ls s3://b/results/` listed
 *   nothing), and Contents for the objects directly under it;
 * - objects and common prefixes count together against MaxKeys, and pages
 *   (ContinuationToken, StartAfter, V1 Marker) neither repeat nor skip;
 * - any key of 1 to 1,024 UTF-8 bytes is a key: `.`, `..` and empty segments,
 *   a segment longer than a file name, each its own object inside the bucket
 *   folder (docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type ListObjectsV2CommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../src/s3/server.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'listing-bucket';

/** The results of two jobs, as the bridge writes them (results/<route>/<input>/<...>). */
const RESULT_KEYS = [
  'results/roads/area.geojson/job.json',
  'results/roads/area.geojson/area/result.geojson',
  'results/roads/area.geojson/area/quicklook.png',
  'results/roads/town.tif/job.json',
  'results/fields/farm.geojson/farm/result.geojson',
  'results/summary.json',
  'inbox/roads/area.geojson',
];

/** Every page of a V2 listing, the way a paginator reads it. */
async function allPages(s3: S3Client, input: ListObjectsV2CommandInput) {
  const pages: { keys: string[]; prefixes: string[]; keyCount: number | undefined }[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ ...input, ContinuationToken: token }));
    pages.push({ keys: (page.Contents ?? []).map((o) => o.Key!), prefixes: (page.CommonPrefixes ?? []).map((p) => p.Prefix!), keyCount: page.KeyCount });
    token = page.NextContinuationToken;
    expect(Boolean(token)).toBe(page.IsTruncated);
  } while (token);
  return pages;
}

describe('local S3 listings', () => {
  let dir: string;
  let server: LocalS3;
  let s3: S3Client;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-listing-'));
    server = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET] });
    s3 = localS3Client(server.endpoint, server.credentials);
    for (const key of RESULT_KEYS) await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: key }));
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['', [], ['inbox/', 'results/']],
    ['results/', ['results/summary.json'], ['results/fields/', 'results/roads/']],
    ['results/roads/', [], ['results/roads/area.geojson/', 'results/roads/town.tif/']],
    ['results/roads/area.geojson/', ['results/roads/area.geojson/job.json'], ['results/roads/area.geojson/area/']],
    ['results/roads/area.geojson/area/', ['results/roads/area.geojson/area/quicklook.png', 'results/roads/area.geojson/area/result.geojson'], []],
    ['results/ro', [], ['results/roads/']],
  ])("lists prefix '%s' with delimiter '/' as AWS does: first-level folders and the objects directly under it", async (prefix, contents, prefixes) => {
    // Act
    const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, Delimiter: '/' }));

    // Assess
    expect((page.Contents ?? []).map((o) => o.Key)).toEqual(contents);
    expect((page.CommonPrefixes ?? []).map((p) => p.Prefix)).toEqual(prefixes);
    expect(page.KeyCount).toBe(contents.length + prefixes.length);
    expect(page.IsTruncated).toBe(false);
  });

  it('counts objects and common prefixes together against MaxKeys, and pages neither repeat nor skip an entry', async () => {
    // Act: one entry a page, then two
    const ones = await allPages(s3, { Bucket: BUCKET, Prefix: 'results/', Delimiter: '/', MaxKeys: 1 });
    const twos = await allPages(s3, { Bucket: BUCKET, Prefix: 'results/', Delimiter: '/', MaxKeys: 2 });

    // Assess: folders come in key order with the object between them
    expect(ones.map((p) => [...p.prefixes, ...p.keys])).toEqual([['results/fields/'], ['results/roads/'], ['results/summary.json']]);
    expect(ones.every((p) => p.keyCount === 1)).toBe(true);
    expect(twos.map((p) => p.keyCount)).toEqual([2, 1]);
  });

  it('pages a listing without a delimiter through every key, in UTF-8 binary order', async () => {
    // Act
    const pages = await allPages(s3, { Bucket: BUCKET, Prefix: 'results/', MaxKeys: 2 });

    // Assess
    const expected = RESULT_KEYS.filter((k) => k.startsWith('results/')).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(pages.flatMap((p) => p.keys)).toEqual(expected);
    expect(pages.map((p) => p.keyCount)).toEqual([2, 2, 2]);
  });

  it('starts after StartAfter, and does not list again a common prefix at or before it', async () => {
    // Act
    const afterFields = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'results/', Delimiter: '/', StartAfter: 'results/fields/' }));
    const insideRoads = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'results/', Delimiter: '/', StartAfter: 'results/roads/area.geojson/job.json' }));

    // Assess
    expect(afterFields.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['results/roads/']);
    expect(afterFields.Contents?.map((o) => o.Key)).toEqual(['results/summary.json']);
    expect(afterFields.StartAfter).toBe('results/fields/');
    expect(insideRoads.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['results/roads/']);
  });

  it('pages a V1 listing with a delimiter by NextMarker', async () => {
    // Act
    const first = await s3.send(new ListObjectsCommand({ Bucket: BUCKET, Prefix: 'results/', Delimiter: '/', MaxKeys: 2 }));
    const second = await s3.send(new ListObjectsCommand({ Bucket: BUCKET, Prefix: 'results/', Delimiter: '/', MaxKeys: 2, Marker: first.NextMarker }));

    // Assess
    expect(first).toMatchObject({ IsTruncated: true, NextMarker: 'results/roads/' });
    expect(first.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['results/fields/', 'results/roads/']);
    expect(second.IsTruncated).toBe(false);
    expect(second.Contents?.map((o) => o.Key)).toEqual(['results/summary.json']);
    expect(second.CommonPrefixes ?? []).toEqual([]);
  });

  it('encodes keys and prefixes with encoding-type=url (what the AWS CLI asks for), and refuses another encoding', async () => {
    // Prepare
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'odd/a b+c/d&e.json', Body: '{}' }));

    // Act
    const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'odd/', EncodingType: 'url' }));
    const refused = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'odd/', EncodingType: 'gzip' as 'url' })).catch((error: { name: string }) => error.name);

    // Assess: the SDK leaves the decoding to the caller
    expect(page.EncodingType).toBe('url');
    expect(page.Contents?.map((o) => decodeURIComponent(o.Key!))).toEqual(['odd/a b+c/d&e.json']);
    expect(page.Contents?.[0]?.Key).not.toContain(' ');
    expect(refused).toBe('InvalidArgument');
  });
});

describe('local S3 keys', () => {
  let dir: string;
  let server: LocalS3;
  let s3: S3Client;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-keys-'));
    server = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET] });
    s3 = localS3Client(server.endpoint, server.credentials);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const longSegment = 'x'.repeat(300);
  const ODD_KEYS = [
    'inbox/a.geojson',
    'inbox/./a.geojson',
    'inbox/a/../a.geojson',
    'inbox//a.geojson',
    '/inbox/a.geojson',
    'inbox/../../../outside.geojson',
    'inbox/..',
    'inbox/.',
    'inbox/a._S3rver_object/b.json',
    `inbox/${longSegment}/${longSegment}.geojson`,
    `inbox/${'é'.repeat(500)}`,
    'inbox/a\u0001b.geojson',
  ];

  it('stores every key AWS accepts as its own object, inside the bucket folder, and lists each back', async () => {
    // Act
    for (const key of ODD_KEYS) await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: `body of ${key}` }));
    const bodies = await Promise.all(ODD_KEYS.map(async (key) => (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body!.transformToString()));
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    const underRoot = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/' }));

    // Assess: no two keys share a file, nothing was written beside the bucket folder
    expect(bodies).toEqual(ODD_KEYS.map((key) => `body of ${key}`));
    expect(listed.Contents?.map((o) => o.Key)).toEqual([...ODD_KEYS].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    expect(underRoot.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['/', 'inbox/']);
    expect(await readdir(dir)).toEqual(['s3']);
    expect((await readdir(path.join(dir, 's3'))).sort()).toEqual([BUCKET]);
  });

  it('refuses a key over 1,024 bytes with KeyTooLongError, and takes one of exactly 1,024', async () => {
    // Act
    const longest = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `k/${'a'.repeat(1022)}`, Body: '1' })).then(() => 'ok');
    const over = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `k/${'a'.repeat(1023)}`, Body: '1' })).catch((error: { name: string }) => error.name);

    // Assess
    expect(longest).toBe('ok');
    expect(over).toBe('KeyTooLongError');
  });

  it('deletes an odd key and leaves no folder behind for a listing to find', async () => {
    // Prepare
    const key = `gone/${longSegment}//x/../y`;
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: '1' }));

    // Act
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'gone/' }));

    // Assess
    expect(listed.KeyCount).toBe(0);
    expect((await readdir(path.join(dir, 's3', BUCKET))).includes('gone')).toBe(false);
  });
});
