/**
 * Dispatch: turns "Object Created" notifications into one state machine
 * execution per job.
 *
 * On AWS the function reads an SQS queue fed by an EventBridge rule, so each
 * message body is an EventBridge event (`detail.bucket.name`, `detail.object.*`).
 * It also accepts S3 notification bodies (`Records[].s3`), which is what
 * s3rver emits locally and what an S3 -> SQS notification would send.
 *
 * Keys: S3 notification records form-URL-encode them ('+' is a space), as S3
 * documents, and are decoded here, once. For EventBridge events the encoding is
 * not documented, and real events show raw keys (a ':' where a notification
 * has '%3A'), so a key that decoding would change ('+' or '%' in it) is looked
 * up: the decoded key when that object exists, else the raw one (matching the
 * event's ETag when both exist). s3rver's records carry the raw key: the local
 * mode passes `{ keysEncoded: false }`.
 *
 * Duplicates collapse on the execution name: name = jobId, a pure function of
 * (bucket, key, etag), and Step Functions refuses a second execution with the
 * same name (ExecutionAlreadyExists), so an event delivered several times, even
 * concurrently, yields one execution.
 *
 * What becomes an execution: every object under the inbox except folder
 * markers (keys ending in '/') and hidden files (a path segment below the
 * inbox starting with '.', as editors and sync tools use for partial copies),
 * which are ignored. A file the bridge cannot take (an unsupported extension,
 * or a key with '.', '..' or empty segments or control characters) is started
 * too, so that Register Job rejects it (UNSUPPORTED_FILE_TYPE, INVALID_KEY):
 * one path, exactly once by the execution name, and the same ledger row,
 * report and Job Rejected event as any other rejection, here and locally.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { ExecutionAlreadyExists, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { ConfigurationError } from '../core/errors.ts';
import type { ExecutionInput, InputObject } from '../core/model.ts';
import { decodeS3EventKey, isHiddenPath, jobIdFor, keyProblem, normaliseEtag } from '../routing/index.ts';
// The smallest context (configuration, logger, S3, Step Functions): no ledger,
// slots, events or Mapflow client in this bundle (lean bundles, docs/architecture.md).
import { serviceContext, type ServiceContext as BridgeContext } from '../runtime/providers.ts';
import '../runtime/with-s3.ts';
import '../runtime/with-sfn.ts';

export type StartOutcome = 'started' | 'duplicate';
export type StartExecution = (name: string, input: ExecutionInput) => Promise<StartOutcome>;

/** An object named by a notification; etag/size may be missing (s3rver copies) and are then read with HeadObject. */
export interface ObjectCreatedRef {
  bucket: string;
  key: string;
  /** The key as the event wrote it, when decoding changed it and it is not known which is meant. */
  rawKey?: string;
  etag?: string;
  size?: number;
  versionId?: string;
}

export interface DispatchSummary {
  started: string[];
  duplicates: string[];
  skipped: { key: string; reason: string }[];
}

/** A message body that is not an object notification we understand. */
export class UnrecognisedMessage extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnrecognisedMessage';
  }
}

/**
 * The objects a message body names: an EventBridge "Object Created" event, or
 * an S3 notification with `Records`. S3 test events and other event names give
 * no objects. Anything else throws UnrecognisedMessage.
 */
export function objectsFromMessage(body: unknown, options: { keysEncoded?: boolean } = {}): ObjectCreatedRef[] {
  const decode = (key: string) => (options.keysEncoded === false ? key : decodeS3EventKey(key));
  if (!isRecord(body)) throw new UnrecognisedMessage('the message body is not a JSON object');

  if (isRecord(body.detail) && 'detail-type' in body) {
    if (body['detail-type'] !== 'Object Created') return [];
    const bucket = (body.detail.bucket as { name?: unknown } | undefined)?.name;
    const object = body.detail.object as Record<string, unknown> | undefined;
    if (typeof bucket !== 'string' || !isRecord(object) || typeof object.key !== 'string') {
      throw new UnrecognisedMessage('an "Object Created" event without detail.bucket.name / detail.object.key');
    }
    const key = decode(object.key);
    return [
      compact({
        bucket,
        key,
        rawKey: key !== object.key ? object.key : undefined,
        etag: typeof object.etag === 'string' ? normaliseEtag(object.etag) : undefined,
        size: typeof object.size === 'number' ? object.size : undefined,
        versionId: typeof object['version-id'] === 'string' ? object['version-id'] : undefined,
      }),
    ];
  }

  if (Array.isArray(body.Records)) {
    const objects: ObjectCreatedRef[] = [];
    for (const record of body.Records as unknown[]) {
      if (!isRecord(record) || !isRecord(record.s3)) throw new UnrecognisedMessage('a notification record without "s3"');
      if (typeof record.eventName === 'string' && !record.eventName.startsWith('ObjectCreated:')) continue;
      const bucket = (record.s3.bucket as { name?: unknown } | undefined)?.name;
      const object = record.s3.object as Record<string, unknown> | undefined;
      if (typeof bucket !== 'string' || !isRecord(object) || typeof object.key !== 'string') {
        throw new UnrecognisedMessage('a notification record without s3.bucket.name / s3.object.key');
      }
      objects.push(
        compact({
          bucket,
          key: decode(object.key),
          etag: typeof object.eTag === 'string' ? normaliseEtag(object.eTag) : undefined,
          size: typeof object.size === 'number' ? object.size : undefined,
          versionId: typeof object.versionId === 'string' ? object.versionId : undefined,
        }),
      );
    }
    return objects;
  }

  if (body.Event === 's3:TestEvent') return [];
  throw new UnrecognisedMessage('neither an EventBridge event nor an S3 notification');
}

/**
 * Settles which key an event means (see the header) and fills a missing
 * etag/size from S3 (s3rver's copy events carry neither).
 */
export async function completeObject(ctx: Pick<BridgeContext, 's3'>, given: ObjectCreatedRef): Promise<InputObject> {
  const { rawKey, ...ref } = given;
  if (rawKey !== undefined && rawKey !== ref.key) ref.key = await existingKey(ctx, ref, [ref.key, rawKey]);
  if (ref.etag !== undefined && ref.size !== undefined) {
    return { bucket: ref.bucket, key: ref.key, ...(ref.versionId ? { versionId: ref.versionId } : {}), etag: ref.etag, size: ref.size };
  }
  const head = await ctx.s3.send(
    new HeadObjectCommand({ Bucket: ref.bucket, Key: ref.key, ...(ref.versionId ? { VersionId: ref.versionId } : {}) }),
  );
  const versionId = ref.versionId ?? head.VersionId;
  return {
    bucket: ref.bucket,
    key: ref.key,
    ...(versionId && versionId !== 'null' ? { versionId } : {}),
    etag: ref.etag ?? normaliseEtag(head.ETag ?? ''),
    size: ref.size ?? head.ContentLength ?? 0,
  };
}

/** The first candidate key whose object exists (with the event's ETag, when both exist); else the first. */
async function existingKey(ctx: Pick<BridgeContext, 's3'>, ref: ObjectCreatedRef, candidates: string[]): Promise<string> {
  const found: { key: string; etag?: string }[] = [];
  for (const key of candidates) {
    try {
      const head = await ctx.s3.send(new HeadObjectCommand({ Bucket: ref.bucket, Key: key, ...(ref.versionId ? { VersionId: ref.versionId } : {}) }));
      found.push({ key, etag: head?.ETag ? normaliseEtag(head.ETag) : undefined });
    } catch (error) {
      if (!isNotThisOne(error)) throw error;
    }
  }
  const sameContent = found.find((f) => ref.etag !== undefined && f.etag === ref.etag);
  return (sameContent ?? found[0])?.key ?? candidates[0]!;
}

/**
 * An answer to HeadObject that means "no such object under this key": 404;
 * 403 (S3 answers a missing key with 403 to a principal without s3:ListBucket
 * on that key, which the dispatch role has only on the inbox, and a deployment
 * may have narrowed); 400 when the event's version id belongs to the other key.
 */
function isNotThisOne(error: unknown): boolean {
  const name = (error as Error)?.name;
  const status = (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
  return name === 'NotFound' || name === 'NoSuchKey' || name === 'Forbidden' || name === 'AccessDenied' || status === 404 || status === 403 || status === 400;
}

/**
 * Starts one execution per object under the inbox (decoded keys). Objects
 * outside the inbox, folder markers and hidden files are skipped, with the
 * reason logged and returned; everything else is started (see the header).
 */
export async function dispatchObjectCreated(
  ctx: Pick<BridgeContext, 'config' | 'logger'>,
  objects: InputObject[],
  start: StartExecution,
): Promise<DispatchSummary> {
  const summary: DispatchSummary = { started: [], duplicates: [], skipped: [] };
  const inbox = ctx.config.prefixes.inbox;
  for (const object of objects) {
    const reason = skipReason(object.key, inbox);
    if (reason) {
      ctx.logger.info('object skipped', { bucket: object.bucket, key: object.key, reason });
      summary.skipped.push({ key: object.key, reason });
      continue;
    }
    const jobId = jobIdFor(object);
    // Fixed field order: duplicates of one event produce byte-identical input.
    const input: ExecutionInput = {
      jobId,
      input: {
        bucket: object.bucket,
        key: object.key,
        ...(object.versionId ? { versionId: object.versionId } : {}),
        etag: normaliseEtag(object.etag),
        size: object.size,
      },
    };
    const outcome = await start(jobId, input);
    ctx.logger.info(outcome === 'started' ? 'execution started' : 'duplicate event: execution already exists', {
      jobId,
      bucket: object.bucket,
      key: object.key,
    });
    (outcome === 'started' ? summary.started : summary.duplicates).push(jobId);
  }
  return summary;
}

function skipReason(key: string, inbox: string): string | undefined {
  if (!key.startsWith(inbox)) return `outside the inbox prefix "${inbox}"`;
  if (key.endsWith('/')) return 'a folder marker, not a file';
  // A bad key is rejected (INVALID_KEY), even when a segment such as '..' starts with a dot.
  if (keyProblem(key)) return undefined;
  if (isHiddenPath(key, inbox)) return 'a hidden file or folder (a name starting with ".")';
  return undefined;
}

/** StartExecution on AWS: name = jobId; ExecutionAlreadyExists is a duplicate. */
export function stepFunctionsStarter(ctx: Pick<BridgeContext, 'config' | 'sfn'>): StartExecution {
  const stateMachineArn = ctx.config.stateMachineArn;
  if (!stateMachineArn) throw new ConfigurationError('STATE_MACHINE_ARN is required by the dispatch function.');
  return async (name, input) => {
    try {
      await ctx.sfn().send(new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(input) }));
      return 'started';
    } catch (error) {
      if (error instanceof ExecutionAlreadyExists || (error as Error)?.name === 'ExecutionAlreadyExists') return 'duplicate';
      throw error;
    }
  };
}

/**
 * Processes an SQS batch. A message that fails (unreadable body, S3 or Step
 * Functions error) is reported in `batchItemFailures` so SQS redelivers it and,
 * after maxReceiveCount, moves it to the dead-letter queue: nothing is dropped.
 */
export async function handleSqsBatch(
  ctx: BridgeContext,
  event: SQSEvent,
  start: StartExecution = stepFunctionsStarter(ctx),
): Promise<SQSBatchResponse> {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      const refs = objectsFromMessage(JSON.parse(record.body));
      const objects = await Promise.all(refs.map((ref) => completeObject(ctx, ref)));
      await dispatchObjectCreated(ctx, objects, start);
    } catch (error) {
      ctx.logger.error('message not dispatched; SQS will redeliver it', { messageId: record.messageId, error });
      batchItemFailures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures };
}

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => handleSqsBatch(serviceContext(), event);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function compact(ref: ObjectCreatedRef): ObjectCreatedRef {
  return Object.fromEntries(Object.entries(ref).filter(([, value]) => value !== undefined)) as unknown as ObjectCreatedRef;
}

/** The catalogue name of this handler: a bundle says which handler it is (test/cdk/assembly-bundles.test.ts). */
export const BRIDGE_HANDLER = 'dispatch';
