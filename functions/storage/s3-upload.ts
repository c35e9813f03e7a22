/**
 * Streamed writes to S3: a multipart upload (@aws-sdk/lib-storage) fed by a
 * stream, with at most UPLOAD_QUEUE_SIZE parts of UPLOAD_PART_SIZE in memory.
 * Apart from ./s3.ts so that only the handlers that stream bundle lib-storage.
 */
import { Transform, type Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

/** Part size of streamed uploads; at most QUEUE_SIZE parts are buffered at once. */
export const UPLOAD_PART_SIZE = 8 * 1024 * 1024;
export const UPLOAD_QUEUE_SIZE = 2;

/** Streams `body` into s3://bucket/key (multipart when large). Returns the bytes written. */
export async function writeStream(
  s3: S3Client,
  bucket: string,
  key: string,
  body: Readable,
  contentType: string,
): Promise<{ bytes: number }> {
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  // A failing source must fail the upload (pipe() alone would leave it hanging).
  body.once('error', (error) => counter.destroy(error));
  body.pipe(counter);
  const upload = new Upload({
    client: s3,
    params: { Bucket: bucket, Key: key, Body: counter, ContentType: contentType },
    partSize: UPLOAD_PART_SIZE,
    queueSize: UPLOAD_QUEUE_SIZE,
    leavePartsOnError: false,
  });
  await upload.done();
  return { bytes };
}
