/**
 * Turns s3rver's notification records into the InputObjects the dispatch core
 * takes — what the AWS trigger does with EventBridge "Object Created" events.
 */
import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { InputObject } from '../../functions/jobs/model.ts';
import type { S3NotificationRecord } from './server.ts';

export function isObjectCreated(record: S3NotificationRecord): boolean {
  return record.eventName.startsWith('ObjectCreated:');
}

/**
 * The object a created-record is about. s3rver puts the raw key in its
 * records (AWS URL-encodes it), so the key is used as it is. A Copy record
 * carries no ETag; the object is read with HEAD then.
 */
export async function inputObjectFromRecord(s3: S3Client, record: S3NotificationRecord): Promise<InputObject> {
  const bucket = record.s3.bucket.name;
  const { key, eTag, size, versionId } = record.s3.object;
  if (eTag && typeof size === 'number') {
    return { bucket, key, etag: stripQuotes(eTag), size, ...(versionId ? { versionId } : {}) };
  }
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  return {
    bucket,
    key,
    etag: stripQuotes(head.ETag ?? ''),
    size: head.ContentLength ?? 0,
    ...(head.VersionId ? { versionId: head.VersionId } : {}),
  };
}

function stripQuotes(etag: string): string {
  return etag.replace(/^"|"$/g, '');
}
