/**
 * Copies what a job wrote to the bucket onto the local disk, mirroring the
 * bucket layout under an output folder:
 *
 *   s3://<bucket>/results/<path>/<part>/result.geojson -> <out>/results/<path>/<part>/result.geojson
 *   s3://<bucket>/failed/<path>/report.json           -> <out>/failed/<path>/report.json
 *
 * Objects are streamed to disk, never held in memory.
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
// The S3 commands are loaded when a job's outputs are copied, not with the command: `start` and
// `local run` import this module before they spawn DynamoDB Local, whose start should not wait on the SDK.
import type { S3Client } from '@aws-sdk/client-s3';
import type { LedgerRow } from '../../functions/core/model.ts';

/** Default output folder of `start` and `local run` (relative to the working directory). */
export const DEFAULT_OUTPUT_DIR = 'mapflow-output';

export interface JobOutputs {
  /** Local copies of every object under the job's results prefix. */
  results: string[];
  /** Local copy of the failure report, when the job wrote one. */
  report?: string;
}

export async function copyJobOutputs(s3: S3Client, bucket: string, row: LedgerRow, outDir: string): Promise<JobOutputs> {
  const results: string[] = [];
  if (row.resultPrefix) {
    for (const key of await listKeys(s3, bucket, row.resultPrefix)) results.push(await download(s3, bucket, key, outDir));
  }
  let report: string | undefined;
  if (row.reportKey) {
    report = await download(s3, bucket, row.reportKey, outDir).catch((error: unknown) => {
      if ((error as Error).name === 'NoSuchKey') return undefined;
      throw error;
    });
  }
  return { results, ...(report ? { report } : {}) };
}

async function listKeys(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const object of page.Contents ?? []) if (object.Key && !object.Key.endsWith('/')) keys.push(object.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys.sort();
}

async function download(s3: S3Client, bucket: string, key: string, outDir: string): Promise<string> {
  const target = path.resolve(outDir, ...key.split('/'));
  // Keys come from the bridge's own layout, but never write outside the output folder.
  if (!target.startsWith(path.resolve(outDir) + path.sep)) throw new Error(`Refusing to write ${key} outside ${outDir}`);
  const { GetObjectCommand } = await import('@aws-sdk/client-s3');
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  await mkdir(path.dirname(target), { recursive: true });
  await pipeline(object.Body as Readable, createWriteStream(target));
  return target;
}
