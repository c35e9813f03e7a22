/**
 * Copies what a job wrote to the bucket onto the local disk, a folder per job
 * (so the outputs of different jobs, of `npm start` and of `local run`, never
 * overwrite each other), mirroring the bucket layout inside it:
 *
 *   s3://<bucket>/results/<path>/<name>/<part>/result.geojson -> <out>/<jobId>/results/<path>/<name>/<part>/result.geojson
 *   s3://<bucket>/failed/<path>/<name>/report.json           -> <out>/<jobId>/failed/<path>/<name>/report.json
 *
 * (`<path>/<name>`: the input's key below the inbox, functions/routing/keys.ts.)
 *
 * Every local path comes from outputPath (the one place the layout lives).
 * The same job id can come from two ledgers (the id hashes bucket, key and
 * content): a job folder records the run it holds (OUTPUT_MARKER). A run
 * whose row stays in a ledger (`npm start`, the default) is never replaced by
 * another run of the same id (OutputConflict names the flag that allows it);
 * a `local run` (its ledger is gone when it exits, nothing points at its
 * copies) may be replaced by a later run.
 * Objects are streamed to disk, never held in memory.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
// The S3 commands are loaded when a job's outputs are copied, not with the command: `start` and
// `local run` import this module before they spawn DynamoDB Local, whose start should not wait on the SDK.
import type { S3Client } from '@aws-sdk/client-s3';
import type { LedgerRow } from 'mapflow-bridge/functions/core/model.ts';

/** Default output folder of `start` and `local run` (relative to the working directory). */
export const DEFAULT_OUTPUT_DIR = 'mapflow-output';

export interface JobOutputs {
  /** Local copies of every object under the job's results prefix. */
  results: string[];
  /** Local copy of the failure report, when the job wrote one. */
  report?: string;
}

/** The file in a job's output folder that says which run of the job the folder holds. */
export const OUTPUT_MARKER = '.mapflow-job.json';

/** The folder of a job's outputs: `<outDir>/<jobId>`. */
export function jobOutputDir(outDir: string, jobId: string): string {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(jobId)) throw new Error(`not a job id: ${JSON.stringify(jobId)}`);
  return path.resolve(outDir, jobId);
}

/** The local path of one of the job's bucket objects: `<outDir>/<jobId>/<key>`. Never outside the job's folder. */
export function outputPath(outDir: string, jobId: string, key: string): string {
  const folder = jobOutputDir(outDir, jobId);
  const target = path.resolve(folder, ...key.split('/'));
  // Keys come from the bridge's own layout, but never write outside the job's folder.
  if (!target.startsWith(folder + path.sep)) throw new Error(`Refusing to write ${key} outside ${folder}`);
  return target;
}

/** The job's output folder holds another run of the same job id (another ledger); nothing was written. */
export class OutputConflict extends Error {
  constructor(
    message: string,
    readonly folder: string,
  ) {
    super(message);
    this.name = 'OutputConflict';
  }
}

export interface CopyOptions {
  /** Replace the outputs of another run of the same job id (`local run --overwrite`). */
  overwrite?: boolean;
  /** The job's row stays in a ledger that points at these outputs (default true; false for `local run`). */
  persistent?: boolean;
  /** Copy only what the output folder lacks (or holds in another size, e.g. cut short by a kill); default false: every object. */
  onlyMissing?: boolean;
}

export async function copyJobOutputs(s3: S3Client, bucket: string, row: LedgerRow, outDir: string, options: CopyOptions = {}): Promise<JobOutputs> {
  await claimJobFolder(row, outDir, options);
  const results: string[] = [];
  if (row.resultPrefix) {
    for (const object of await listObjects(s3, bucket, row.resultPrefix)) {
      const target = outputPath(outDir, row.jobId, object.key);
      if (options.onlyMissing && (await sizeOf(target)) === object.size) continue;
      results.push(await download(s3, bucket, object.key, target));
    }
  }
  let report: string | undefined;
  if (row.reportKey) {
    const target = outputPath(outDir, row.jobId, row.reportKey);
    if (!options.onlyMissing || (await sizeOf(target)) === undefined) {
      report = await download(s3, bucket, row.reportKey, target).catch((error: unknown) => {
        if ((error as Error).name === 'NoSuchKey') return undefined;
        throw error;
      });
    }
  }
  return { results, ...(report ? { report } : {}) };
}

/** Writes the folder's marker, or refuses when the folder holds another run of this job id that a ledger still points at. */
async function claimJobFolder(row: LedgerRow, outDir: string, options: CopyOptions): Promise<void> {
  const folder = jobOutputDir(outDir, row.jobId);
  const marker = path.join(folder, OUTPUT_MARKER);
  const text = await readFile(marker, 'utf8').catch(() => undefined);
  let held: { createdAt?: string; persistent?: boolean } | undefined;
  try {
    held = text ? (JSON.parse(text) as typeof held) : undefined;
  } catch {
    held = { persistent: true }; // unreadable: assume the worst
  }
  const sameRun = held?.createdAt === row.createdAt;
  if (held && !sameRun && held.persistent !== false && !options.overwrite) {
    throw new OutputConflict(
      `${folder} holds the outputs of another run of job ${row.jobId} (created ${held.createdAt ?? 'at an unknown time'}; this one ${row.createdAt}), ` +
        'which a ledger still points at; nothing was replaced. Write elsewhere with --out <dir>, or replace them with --overwrite (local run).',
      folder,
    );
  }
  const persistent = (options.persistent ?? true) || (sameRun && held?.persistent !== false);
  await mkdir(folder, { recursive: true });
  await writeFile(marker, `${JSON.stringify({ jobId: row.jobId, createdAt: row.createdAt, input: `s3://${row.input.bucket}/${row.input.key}`, persistent }, null, 2)}\n`);
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
  // Written aside, then renamed: a copy cut short (a kill) is never taken for a whole one. Named per copy, not
  // per process: two copies of one job's outputs at once (the live copy and a resumed one) must not share it.
  const partial = `${target}.partial-${process.pid}-${randomUUID().slice(0, 8)}`;
  try {
    await pipeline(object.Body as Readable, createWriteStream(partial));
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  return target;
}
