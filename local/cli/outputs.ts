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
import { mkdir, rename, rm, stat } from 'node:fs/promises';
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

export interface CopyOptions {
  /** Copy only what the output folder lacks (or holds in another size, e.g. cut short by a kill); default false: every object. */
  onlyMissing?: boolean;
}

export async function copyJobOutputs(s3: S3Client, bucket: string, row: LedgerRow, outDir: string, options: CopyOptions = {}): Promise<JobOutputs> {
  const results: string[] = [];
  if (row.resultPrefix) {
    for (const object of await listObjects(s3, bucket, row.resultPrefix)) {
      const target = outputPath(outDir, row, object.key);
      if (options.onlyMissing && (await sizeOf(target)) === object.size) continue;
      results.push(await download(s3, bucket, object.key, target));
    }
  }
  let report: string | undefined;
  if (row.reportKey) {
    const target = outputPath(outDir, row, row.reportKey);
    if (!options.onlyMissing || (await sizeOf(target)) === undefined) {
      report = await download(s3, bucket, row.reportKey, target).catch((error: unknown) => {
        if ((error as Error).name === 'NoSuchKey') return undefined;
        throw error;
      });
    }
  }
  return { results, ...(report ? { report } : {}) };
}

/**
 * Where the object `key` of the job `row` is copied under the output folder:
 * the bucket's layout. Every local copy's path comes from here.
 */
export function outputPath(outDir: string, row: Pick<LedgerRow, 'jobId'>, key: string): string {
  void row;
  const target = path.resolve(outDir, ...key.split('/'));
  // Keys come from the bridge's own layout, but never write outside the output folder.
  if (!target.startsWith(path.resolve(outDir) + path.sep)) throw new Error(`Refusing to write ${key} outside ${outDir}`);
  return target;
}

async function listObjects(s3: S3Client, bucket: string, prefix: string): Promise<{ key: string; size: number }[]> {
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const objects: { key: string; size: number }[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const object of page.Contents ?? []) if (object.Key && !object.Key.endsWith('/')) objects.push({ key: object.Key, size: object.Size ?? 0 });
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

async function sizeOf(file: string): Promise<number | undefined> {
  return stat(file).then((info) => info.size, () => undefined);
}

async function download(s3: S3Client, bucket: string, key: string, target: string): Promise<string> {
  const { GetObjectCommand } = await import('@aws-sdk/client-s3');
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  await mkdir(path.dirname(target), { recursive: true });
  // Written aside, then renamed: a copy cut short (a kill) is never taken for a whole one.
  const partial = `${target}.partial-${process.pid}`;
  try {
    await pipeline(object.Body as Readable, createWriteStream(partial));
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  return target;
}
