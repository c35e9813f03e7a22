/**
 * Result files besides result.geojson, per route (`resultFormats`), written
 * after it from the stored GeoJSON as streams. Today: FlatGeobuf
 * (`result.fgb`). A format that cannot be written is reported in job.json and
 * the log; the job keeps its GeoJSON result and still succeeds.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { openObjectStream } from '../storage/s3.ts';
import { writeStream } from '../storage/s3-upload.ts';
import { FLATGEOBUF_CONTENT_TYPE, FLATGEOBUF_FILE, flatGeobufStream } from './flatgeobuf.ts';

export const RESULT_FORMATS = ['flatgeobuf'] as const;
export type ResultFormat = (typeof RESULT_FORMATS)[number];

export interface WrittenFormat {
  key?: string;
  bytes?: number;
  features?: number;
  error?: string;
}

/** The key of a format's file beside result.geojson. */
export function formatKeyBeside(resultKey: string, format: ResultFormat): string {
  const dir = resultKey.slice(0, resultKey.lastIndexOf('/') + 1);
  return `${dir}${format === 'flatgeobuf' ? FLATGEOBUF_FILE : format}`;
}

export async function writeResultFormats(
  s3: S3Client,
  bucket: string,
  resultKey: string,
  formats: readonly ResultFormat[],
): Promise<Partial<Record<ResultFormat, WrittenFormat>>> {
  const written: Partial<Record<ResultFormat, WrittenFormat>> = {};
  for (const format of new Set(formats)) {
    const key = formatKeyBeside(resultKey, format);
    try {
      const { body, done } = await flatGeobufStream(async () => (await openObjectStream(s3, { bucket, key: resultKey })).stream);
      const [{ bytes }, features] = await Promise.all([writeStream(s3, bucket, key, body, FLATGEOBUF_CONTENT_TYPE), done]);
      written[format] = { key, bytes, features };
    } catch (error) {
      written[format] = { error: `${format} not written: ${(error as Error).message}`.slice(0, 500) };
    }
  }
  return written;
}
