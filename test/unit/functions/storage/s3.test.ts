import { Readable } from 'node:stream';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { openObjectStream, readObjectBytes, readObjectText, tagObject, writeJson } from '../../../../functions/storage/s3.ts';
import { UPLOAD_PART_SIZE, writeStream } from '../../../../functions/storage/s3-upload.ts';

const s3mock = mockClient(S3Client);
// The mocks patch the SDK clients' prototypes: put them back for the next file in this worker (vitest.config.ts, project 'shared').
afterAll(() => {
  s3mock.restore();
});
const s3 = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
const obj = { bucket: 'drop', key: 'inbox/a.geojson' };

/** A GetObject body: in Node the SDK returns an IncomingMessage, i.e. a Readable. */
function body(chunks: (string | Buffer)[]): never {
  return Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))) as never;
}

/** A stream of `size` bytes produced on demand (never held in memory as a whole). */
function generated(size: number, chunk = 1024 * 1024): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= size) return this.push(null);
      const n = Math.min(chunk, size - sent);
      sent += n;
      this.push(Buffer.alloc(n, 7));
    },
  });
}

describe('readObjectText', () => {
  beforeEach(() => s3mock.reset());

  it('decodes UTF-8 split across chunks and passes the version id', async () => {
    // Prepare
    const text = '{"name": "Zürich – 東京"}';
    const bytes = Buffer.from(text);
    s3mock.on(GetObjectCommand).resolves({ Body: body([bytes.subarray(0, 12), bytes.subarray(12, 23), bytes.subarray(23)]), ContentLength: bytes.length });
    // Act
    const read = await readObjectText(s3, { ...obj, versionId: 'v1' }, 1024);
    // Assess
    expect(read).toBe(text);
    expect(s3mock.commandCalls(GetObjectCommand)[0].args[0].input).toMatchObject({ Bucket: 'drop', Key: 'inbox/a.geojson', VersionId: 'v1' });
  });

  it('rejects FILE_TOO_LARGE by the announced length without reading the body', async () => {
    // Prepare
    let pulled = false;
    const lazy = new Readable({ read() { pulled = true; this.push(null); } });
    s3mock.on(GetObjectCommand).resolves({ Body: lazy as never, ContentLength: 5000 });
    // Act
    const attempt = readObjectText(s3, obj, 1000);
    // Assess
    await expect(attempt).rejects.toMatchObject({ name: 'InputRejected', code: 'FILE_TOO_LARGE' });
    expect(pulled).toBe(false);
  });

  it('rejects FILE_TOO_LARGE while streaming when the length is not announced', async () => {
    // Prepare
    s3mock.on(GetObjectCommand).resolves({ Body: body(['x'.repeat(600), 'y'.repeat(600)]) });
    // Act
    const attempt = readObjectText(s3, obj, 1000);
    // Assess
    await expect(attempt).rejects.toThrow(/FILE_TOO_LARGE: inbox\/a.geojson is larger than 1000 bytes/);
  });
});

describe('readObjectBytes', () => {
  beforeEach(() => s3mock.reset());

  it('returns the raw bytes, binary ones included', async () => {
    // Prepare: the head of a little-endian TIFF, which is not UTF-8 text
    const bytes = Buffer.from([0x49, 0x49, 0x2a, 0x00, 0xff, 0xfe, 0x00, 0x80]);
    s3mock.on(GetObjectCommand).resolves({ Body: body([bytes.subarray(0, 3), bytes.subarray(3)]), ContentLength: bytes.length });
    // Act
    const read = await readObjectBytes(s3, obj, 1024);
    // Assess
    expect(read.equals(bytes)).toBe(true);
  });

  it("throws the caller's refusal, with the announced size, when it has one", async () => {
    // Prepare
    s3mock.on(GetObjectCommand).resolves({ Body: body(['x']), ContentLength: 3 * 1024 * 1024 });
    const tooLarge = (maxBytes: number, size: number | undefined) => new Error(`custom ${maxBytes} ${size}`);
    // Act
    const attempt = readObjectBytes(s3, obj, 1024 * 1024, tooLarge);
    // Assess
    await expect(attempt).rejects.toThrow(`custom ${1024 * 1024} ${3 * 1024 * 1024}`);
  });

  it('names binary units as such and quotes an odd key without its control characters', async () => {
    // Prepare
    s3mock.on(GetObjectCommand).resolves({ Body: body(['x']), ContentLength: 3 * 1024 * 1024 });
    // Act
    const attempt = readObjectBytes(s3, { bucket: 'drop', key: 'inbox/a\u0000\u001b[2J.geojson' }, 2 * 1024 * 1024);
    // Assess
    await expect(attempt).rejects.toThrow(/^FILE_TOO_LARGE: inbox\/a\?\?\[2J\.geojson is larger than 2 MiB,/);
  });
});

describe('openObjectStream', () => {
  beforeEach(() => s3mock.reset());

  it('returns the body as a stream with size and content type', async () => {
    // Prepare
    s3mock.on(GetObjectCommand).resolves({ Body: body(['abc', 'def']), ContentLength: 6, ContentType: 'image/tiff' });
    // Act
    const { stream, size, contentType } = await openObjectStream(s3, obj);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    // Assess
    expect(Buffer.concat(chunks).toString()).toBe('abcdef');
    expect({ size, contentType }).toEqual({ size: 6, contentType: 'image/tiff' });
  });
});

describe('writeStream and writeJson', () => {
  beforeEach(() => s3mock.reset());

  it('uploads a small stream in one request and counts its bytes', async () => {
    // Prepare
    s3mock.on(PutObjectCommand).resolves({ ETag: '"e"' });
    // Act
    const result = await writeStream(s3, 'drop', 'results/a/result.geojson', Readable.from([Buffer.from('{"type":'), Buffer.from('"FeatureCollection"}')]), 'application/geo+json');
    // Assess
    expect(result.bytes).toBe(28);
    expect(s3mock.commandCalls(PutObjectCommand)[0].args[0].input).toMatchObject({ Bucket: 'drop', Key: 'results/a/result.geojson', ContentType: 'application/geo+json' });
  });

  it('streams a large body as a multipart upload', async () => {
    // Prepare
    s3mock.on(CreateMultipartUploadCommand).resolves({ UploadId: 'u-1' });
    s3mock.on(UploadPartCommand).callsFake((input: { PartNumber: number }) => ({ ETag: `"part-${input.PartNumber}"` }));
    s3mock.on(CompleteMultipartUploadCommand).resolves({ ETag: '"done"' });
    const size = 2 * UPLOAD_PART_SIZE + 12345;
    // Act
    const result = await writeStream(s3, 'drop', 'results/big.geojson', generated(size), 'application/geo+json');
    // Assess
    expect(result.bytes).toBe(size);
    expect(s3mock.commandCalls(UploadPartCommand)).toHaveLength(3);
    const complete = s3mock.commandCalls(CompleteMultipartUploadCommand)[0].args[0].input;
    expect(complete.MultipartUpload?.Parts?.map((p) => p.PartNumber)).toEqual([1, 2, 3]);
  });

  it('fails the upload when the source stream fails', async () => {
    // Prepare
    s3mock.on(PutObjectCommand).resolves({});
    const failing = new Readable({ read() { this.destroy(new Error('source broke')); } });
    // Act
    const attempt = writeStream(s3, 'drop', 'results/x', failing, 'application/octet-stream');
    // Assess
    await expect(attempt).rejects.toThrow(/source broke/);
  });

  it('writes JSON with its content type', async () => {
    // Prepare
    s3mock.on(PutObjectCommand).resolves({});
    // Act
    await writeJson(s3, 'drop', 'failed/a/report.json', { code: 'X' });
    // Assess
    const input = s3mock.commandCalls(PutObjectCommand)[0].args[0].input;
    expect(input.ContentType).toBe('application/json');
    expect(JSON.parse(String(input.Body))).toEqual({ code: 'X' });
  });
});

describe('tagObject', () => {
  beforeEach(() => s3mock.reset());

  it('merges with existing tags, overwriting ours', async () => {
    // Prepare
    s3mock.on(GetObjectTaggingCommand).resolves({ TagSet: [{ Key: 'owner', Value: 'ann' }, { Key: 'mapflow-bridge:status', Value: 'RECEIVED' }] });
    s3mock.on(PutObjectTaggingCommand).resolves({});
    // Act
    const result = await tagObject(s3, { ...obj, versionId: 'v2' }, { 'mapflow-bridge:status': 'SUCCEEDED', 'mapflow-bridge:job-id': 'j-1' });
    // Assess
    const input = s3mock.commandCalls(PutObjectTaggingCommand)[0].args[0].input;
    expect(input.VersionId).toBe('v2');
    expect(input.Tagging?.TagSet).toEqual([
      { Key: 'owner', Value: 'ann' },
      { Key: 'mapflow-bridge:status', Value: 'SUCCEEDED' },
      { Key: 'mapflow-bridge:job-id', Value: 'j-1' },
    ]);
    expect(result.skipped).toEqual([]);
  });

  it('never drops the owner\'s tags to make room; skips ours instead', async () => {
    // Prepare
    const owners = Array.from({ length: 9 }, (_, i) => ({ Key: `t${i}`, Value: String(i) }));
    s3mock.on(GetObjectTaggingCommand).resolves({ TagSet: owners });
    s3mock.on(PutObjectTaggingCommand).resolves({});
    // Act
    const result = await tagObject(s3, obj, { a: '1', b: '2' });
    // Assess
    const tags = s3mock.commandCalls(PutObjectTaggingCommand)[0].args[0].input.Tagging?.TagSet;
    expect(tags).toHaveLength(10);
    expect(tags?.slice(0, 9)).toEqual(owners);
    expect(result.skipped).toEqual(['b']);
  });
});
