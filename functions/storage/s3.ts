/**
 * S3 helpers that never hold a large object in memory: reads are streams (or
 * capped text for small JSON inputs), large writes are multipart uploads fed
 * by a stream (./s3-upload.ts, kept apart so that handlers writing only small
 * JSON do not bundle @aws-sdk/lib-storage), so a multi-GB GeoTIFF or result
 * file passes through a Lambda with a few parts of buffer at most.
 */
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import {
  GetObjectCommand,
  GetObjectTaggingCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { InputRejected } from '../core/errors.ts';
import { formatBytes, printable } from './describe.ts';

export interface ObjectRef {
  bucket: string;
  key: string;
  versionId?: string;
}

/** S3 allows at most 10 tags per object. */
export const MAX_OBJECT_TAGS = 10;

/** Says why an object over the read limit is refused; `size` is its size when S3 announced it. */
export type TooLarge = (maxBytes: number, size: number | undefined) => Error;

/**
 * The object's bytes, for small inputs (GeoJSON) that are parsed whole. Beyond
 * `maxBytes` it is rejected without reading the rest: by its announced length
 * when known, else while streaming. The error is `tooLarge`'s, by default
 * InputRejected FILE_TOO_LARGE.
 */
export async function readObjectBytes(s3: S3Client, obj: ObjectRef, maxBytes: number, tooLarge: TooLarge = objectTooLarge(obj)): Promise<Buffer> {
  const { stream, size } = await openObjectStream(s3, obj);
  if (size > maxBytes) {
    stream.destroy();
    throw tooLarge(maxBytes, size);
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > maxBytes) {
      stream.destroy();
      throw tooLarge(maxBytes, size || undefined);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, bytes);
}

/** The object as UTF-8 text (see readObjectBytes for the size limit). */
export async function readObjectText(s3: S3Client, obj: ObjectRef, maxBytes: number, tooLarge?: TooLarge): Promise<string> {
  return new StringDecoder('utf8').end(await readObjectBytes(s3, obj, maxBytes, tooLarge));
}

/** The generic refusal, for objects whose caller has no better advice. */
function objectTooLarge(obj: ObjectRef): TooLarge {
  return (maxBytes, size) =>
    new InputRejected('FILE_TOO_LARGE', `${printable(obj.key, 200)} is larger than ${formatBytes(maxBytes)}, the most this bridge reads for this kind of file.`, {
      details: { maxBytes, ...(size !== undefined && { size }) },
    });
}

/** A stream of the object's bytes, with its size and content type. */
export async function openObjectStream(
  s3: S3Client,
  obj: ObjectRef,
): Promise<{ stream: Readable; size: number; contentType?: string }> {
  const response = await s3.send(
    new GetObjectCommand({ Bucket: obj.bucket, Key: obj.key, ...(obj.versionId ? { VersionId: obj.versionId } : {}) }),
  );
  const body = response.Body;
  if (!body) throw new Error(`S3 returned no body for s3://${obj.bucket}/${obj.key}.`);
  const stream = body instanceof Readable ? body : Readable.fromWeb((body as { transformToWebStream(): ReadableStream }).transformToWebStream() as never);
  return { stream, size: response.ContentLength ?? 0, ...(response.ContentType ? { contentType: response.ContentType } : {}) };
}

/** Writes a small JSON document (reports, job.json, work pointers). */
export async function writeJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: `${JSON.stringify(value, null, 2)}\n`,
      ContentType: 'application/json',
    }),
  );
}

/**
 * Adds or updates tags on an object, keeping its other tags. S3 allows 10
 * tags: the object's own tags are never dropped to make room, so tags that do
 * not fit are skipped and returned.
 */
export async function tagObject(s3: S3Client, obj: ObjectRef, tags: Record<string, string>): Promise<{ skipped: string[] }> {
  const version = obj.versionId ? { VersionId: obj.versionId } : {};
  const current = await s3.send(new GetObjectTaggingCommand({ Bucket: obj.bucket, Key: obj.key, ...version }));
  const merged = new Map<string, string>();
  for (const tag of current.TagSet ?? []) if (tag.Key !== undefined) merged.set(tag.Key, tag.Value ?? '');
  const skipped: string[] = [];
  for (const [key, value] of Object.entries(tags)) {
    if (merged.has(key) || merged.size < MAX_OBJECT_TAGS) merged.set(key, value);
    else skipped.push(key);
  }
  await s3.send(
    new PutObjectTaggingCommand({
      Bucket: obj.bucket,
      Key: obj.key,
      ...version,
      Tagging: { TagSet: [...merged].map(([Key, Value]) => ({ Key, Value })) },
    }),
  );
  return { skipped };
}
