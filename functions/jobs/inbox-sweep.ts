/**
 * The inbox sweep: every object under the inbox that has no ledger row is
 * dispatched again, through the same idempotent path as its notification
 * (job id = hash(bucket, key, ETag), execution named after it), so a
 * notification that arrives late still collapses into the same one job.
 *
 * Why: dispatch runs off a notification, and a notification can be missed.
 * Locally it lives in the memory of the bridge that a kill -9 ends between an
 * upload and its dispatch; on AWS an EventBridge delivery can be lost or a rule
 * disabled. Resuming and the reconciler only see jobs that have a row.
 *
 * Bounded per run (pages and objects), so a huge inbox cannot push the
 * reconciler past its timeout: a run that stops early records where
 * (`#inbox-sweep` row, `startAfter`), and the next run goes on from there,
 * wrapping around at the end of the inbox.
 *
 * An object whose row is gone (ledger retention, TTL) but which carries the
 * bridge's job-id tag for the same job was processed: it is never dispatched
 * again (that would spend credits twice).
 */
import { GetObjectTaggingCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { InputObject } from '../core/model.ts';
import { isHiddenPath, jobIdFor, keyProblem, normaliseEtag } from '../routing/index.ts';
import type { BridgeConfig } from '../runtime/config.ts';

/** The ledger row holding where a bounded sweep stopped. */
export const INBOX_SWEEP_ROW_ID = '#inbox-sweep';
const TAG_JOB_ID = 'mapflow-bridge:job-id';
/** Ledger lookups in flight at once. */
const LOOKUPS_AT_ONCE = 16;

export interface InboxSweepOptions {
  /** Only objects at least this old (their notification had its chance). Default 0. */
  minAgeSeconds?: number;
  /** ListObjectsV2 pages (up to 1,000 keys each) per run. Default 5. */
  maxPages?: number;
  /** Objects looked at per run. Default 2,000. */
  maxObjects?: number;
  /** Keep where a bounded run stopped in the ledger and go on from there next time. Default true. */
  resume?: boolean;
  now?: () => Date;
}

export interface InboxSweepSummary {
  /** Inbox objects looked at. */
  listed: number;
  /** Objects without a ledger row that were handed to dispatch. */
  dispatched: InputObject[];
  /** Without a row, but tagged as processed by the same job (the row expired): left alone. */
  processedWithoutRow: number;
  /** Younger than minAgeSeconds: left for their notification. */
  tooYoung: number;
  /** False when the run stopped at its bound; `startAfter` is where the next run begins. */
  complete: boolean;
  startAfter?: string;
}

export interface InboxSweepContext {
  config: Pick<BridgeConfig, 'ledgerTable' | 'prefixes'>;
  s3: S3Client;
  doc: DynamoDBDocumentClient;
}

/**
 * Finds the inbox objects of `bucket` without a ledger row and hands them to
 * `dispatch` (which must be the notification's own path), in batches.
 */
export async function sweepInbox(
  ctx: InboxSweepContext,
  bucket: string,
  dispatch: (objects: InputObject[]) => Promise<unknown>,
  options: InboxSweepOptions = {},
): Promise<InboxSweepSummary> {
  const now = (options.now ?? (() => new Date()))().getTime();
  const minAgeMs = (options.minAgeSeconds ?? 0) * 1000;
  const maxPages = options.maxPages ?? 5;
  const maxObjects = options.maxObjects ?? 2_000;
  const resume = options.resume ?? true;
  const inbox = ctx.config.prefixes.inbox;
  const summary: InboxSweepSummary = { listed: 0, dispatched: [], processedWithoutRow: 0, tooYoung: 0, complete: false };

  const startAfter = resume ? await readCursor(ctx) : undefined;
  let token: string | undefined;
  let lastKey: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await ctx.s3.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: inbox,
        MaxKeys: Math.min(1_000, maxObjects - summary.listed),
        ...(token ? { ContinuationToken: token } : startAfter ? { StartAfter: startAfter } : {}),
      }),
    );
    pages++;
    const candidates: InputObject[] = [];
    for (const item of page.Contents ?? []) {
      if (!item.Key) continue;
      summary.listed++;
      lastKey = item.Key;
      // What dispatch would skip has no row, ever: not worth a lookup.
      if (item.Key.endsWith('/') || (!keyProblem(item.Key) && isHiddenPath(item.Key, inbox))) continue;
      if (item.LastModified && now - item.LastModified.getTime() < minAgeMs) {
        summary.tooYoung++;
        continue;
      }
      candidates.push({ bucket, key: item.Key, etag: normaliseEtag(item.ETag ?? ''), size: item.Size ?? 0 });
    }
    const missing = await withoutRow(ctx, candidates);
    const unprocessed: InputObject[] = [];
    for (const object of missing) {
      if (await taggedAsProcessed(ctx.s3, object)) summary.processedWithoutRow++;
      else unprocessed.push(object);
    }
    if (unprocessed.length > 0) {
      await dispatch(unprocessed);
      summary.dispatched.push(...unprocessed);
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
    if (!token) {
      summary.complete = true;
      break;
    }
    if (pages >= maxPages || summary.listed >= maxObjects) break;
  }
  if (!summary.complete && lastKey) summary.startAfter = lastKey;
  // A complete run starts the next one from the top; a bounded one where it stopped.
  if (resume && (summary.startAfter !== startAfter)) await writeCursor(ctx, summary.startAfter);
  return summary;
}

/**
 * The objects among `objects` whose job has no ledger row: consistent
 * GetItems, LOOKUPS_AT_ONCE at a time (the reconciler's bundle has GetItem
 * already; BatchGetItem would cost the same reads and more bundle).
 */
async function withoutRow(ctx: InboxSweepContext, objects: InputObject[]): Promise<InputObject[]> {
  const missing: InputObject[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objects.length) {
      const object = objects[next++] as InputObject;
      const { Item } = await ctx.doc.send(
        new GetCommand({ TableName: ctx.config.ledgerTable, Key: { jobId: jobIdFor(object) }, ProjectionExpression: 'jobId', ConsistentRead: true }),
      );
      if (!Item) missing.push(object);
    }
  };
  await Promise.all(Array.from({ length: Math.min(LOOKUPS_AT_ONCE, objects.length) }, worker));
  // In listing order, as dispatch would see them.
  return objects.filter((object) => missing.includes(object));
}

async function taggedAsProcessed(s3: S3Client, object: InputObject): Promise<boolean> {
  try {
    const { TagSet } = await s3.send(new GetObjectTaggingCommand({ Bucket: object.bucket, Key: object.key }));
    return (TagSet ?? []).some((tag) => tag.Key === TAG_JOB_ID && tag.Value === jobIdFor(object));
  } catch (error) {
    // Gone since it was listed: nothing to dispatch either way; dispatch sees that too.
    if ((error as Error)?.name === 'NoSuchKey' || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
    throw error;
  }
}

async function readCursor(ctx: InboxSweepContext): Promise<string | undefined> {
  const { Item } = await ctx.doc.send(new GetCommand({ TableName: ctx.config.ledgerTable, Key: { jobId: INBOX_SWEEP_ROW_ID }, ConsistentRead: true }));
  return typeof Item?.startAfter === 'string' && Item.startAfter !== '' ? Item.startAfter : undefined;
}

async function writeCursor(ctx: InboxSweepContext, startAfter: string | undefined): Promise<void> {
  await ctx.doc.send(
    new PutCommand({
      TableName: ctx.config.ledgerTable,
      Item: { jobId: INBOX_SWEEP_ROW_ID, startAfter: startAfter ?? '', updatedAt: new Date().toISOString() },
    }),
  );
}
