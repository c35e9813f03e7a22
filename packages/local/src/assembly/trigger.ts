/**
 * The trigger and the schedule of the template, locally, delivering the event
 * shapes AWS delivers:
 *
 *   S3 "Object Created" -> EventBridge rule (its event pattern) -> SQS queue
 *     (visibility timeout, maxReceiveCount, dead-letter queue) -> dispatch,
 *     in batches of the event source mapping's BatchSize, with
 *     ReportBatchItemFailures
 *   the reconcile rule's "Scheduled Event" -> reconcile
 *
 * A batch that fails (the function's error or timeout) or the messages it
 * reports as failed come back after the visibility timeout; a message
 * received maxReceiveCount times goes to the dead-letter queue instead.
 */
import { createHash, randomUUID } from 'node:crypto';
import { LOCAL_AWS } from '../local-account.ts';
import type { S3NotificationRecord } from '../s3/server.ts';
import type { LocalFunction } from './functions.ts';
import type { ScheduleSpec, TriggerSpec } from './template.ts';

/** Lambda's SQS pollers start with five concurrent batches. */
const POLLER_CONCURRENCY = 5;

interface Message {
  messageId: string;
  body: string;
  sentAt: number;
  firstReceivedAt?: number;
  receiveCount: number;
  visibleAt: number;
  /** In a batch being dispatched: not received again before that batch ends (the template's visibility timeout, six times the function's, would outlast it anyway). */
  inBatch?: boolean;
  /** Fault injection: delivered twice, a copy sent once this one is first received (see DuplicateDelivery). */
  duplicate?: boolean;
}

/**
 * Fault injection (--inject-faults duplicate-delivery, packages/local/src/faults.ts):
 * S3's notifications are delivered at least once, so now and then twice. A
 * notification drawn gets a second SQS message with the same body, sent when
 * the first is received: it goes in another batch, dispatched beside the
 * first's (concurrent, the harder case for a duplicate).
 */
export interface DuplicateDelivery {
  draw(kind: 'duplicateDelivery'): boolean;
  count(kind: 'duplicateDelivery'): void;
}

/** The EventBridge event S3 sends for a created object (S3 -> EventBridge notifications). */
export function objectCreatedEvent(record: S3NotificationRecord): Record<string, unknown> {
  const time = record.eventTime ?? new Date().toISOString();
  const { bucket, object } = record.s3;
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Object Created',
    source: 'aws.s3',
    account: LOCAL_AWS.account,
    time,
    region: LOCAL_AWS.region,
    resources: [`arn:${LOCAL_AWS.partition}:s3:::${bucket.name}`],
    detail: {
      version: '0',
      bucket: { name: bucket.name },
      object: {
        // Keys arrive URL-encoded, as in S3's notifications (a space is '+').
        key: encodeURIComponent(object.key).replace(/%2F/g, '/').replace(/%20/g, '+'),
        ...(object.size !== undefined ? { size: object.size } : {}),
        ...(object.eTag ? { etag: object.eTag.replace(/"/g, '') } : {}),
        ...(object.versionId ? { 'version-id': object.versionId } : {}),
        sequencer: object.sequencer ?? Date.now().toString(16).toUpperCase(),
      },
      'request-id': randomUUID(),
      requester: LOCAL_AWS.account,
      'source-ip-address': '127.0.0.1',
      reason: 'PutObject',
    },
  };
}

/**
 * EventBridge pattern matching for what rules hold: exact values, `prefix`,
 * `exists`, nested objects. An unknown operator never matches (a rule the
 * local side cannot evaluate must not deliver).
 */
export function matchesPattern(pattern: unknown, event: unknown): boolean {
  if (Array.isArray(pattern)) {
    return pattern.some((condition) => {
      if (condition !== null && typeof condition === 'object') {
        const [operator, operand] = Object.entries(condition as Record<string, unknown>)[0] ?? [];
        if (operator === 'prefix') return typeof event === 'string' && typeof operand === 'string' && event.startsWith(operand);
        if (operator === 'exists') return (event !== undefined) === operand;
        return false;
      }
      return Array.isArray(event) ? event.includes(condition) : event === condition;
    });
  }
  if (pattern !== null && typeof pattern === 'object') {
    if (event === null || typeof event !== 'object') return false;
    return Object.entries(pattern as Record<string, unknown>).every(([key, sub]) => matchesPattern(sub, (event as Record<string, unknown>)[key]));
  }
  return pattern === event;
}

export interface LocalTriggerOptions {
  spec: TriggerSpec;
  dispatch: LocalFunction;
  log: (message: string) => void;
  duplicateDelivery?: DuplicateDelivery;
}

export class LocalTrigger {
  private readonly messages: Message[] = [];
  /** Messages moved to the dead-letter queue (bodies), in order. */
  readonly deadLetters: string[] = [];
  private inFlight = 0;
  private readonly batches = new Set<Promise<void>>();
  private scheduled = false;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: LocalTriggerOptions) {}

  /** An S3 notification of s3rver: to EventBridge, through the rule to the queue. */
  onS3Record(record: S3NotificationRecord): void {
    if (!record.eventName.startsWith('ObjectCreated:')) return;
    const event = objectCreatedEvent(record);
    if (!matchesPattern(this.options.spec.eventPattern, event)) return;
    this.send(JSON.stringify(event), this.options.duplicateDelivery?.draw('duplicateDelivery') ?? false);
  }

  /** SendMessage to the trigger queue (`duplicate`: fault injection, delivered twice). */
  send(body: string, duplicate = false): void {
    if (this.closed) return;
    this.messages.push({ messageId: randomUUID(), body, sentAt: Date.now(), receiveCount: 0, visibleAt: 0, ...(duplicate ? { duplicate } : {}) });
    this.schedule();
  }

  /** Messages waiting to be received (visible now) or being processed. */
  get pending(): number {
    const now = Date.now();
    return this.messages.filter((m) => m.inBatch || m.visibleAt <= now).length;
  }

  /** Resolves when no message is visible or in a batch (messages waiting out a visibility timeout are not waited for). */
  async idle(): Promise<void> {
    for (;;) {
      if (this.batches.size === 0 && !this.scheduled) return;
      await Promise.all([...this.batches, new Promise((resolve) => setImmediate(resolve))]);
    }
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    // Messages sent in the same turn go in one batch (no batching window).
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    const { spec } = this.options;
    while (!this.closed && this.inFlight < POLLER_CONCURRENCY) {
      const now = Date.now();
      const batch: Message[] = [];
      for (const message of [...this.messages]) {
        if (batch.length >= spec.batchSize) break;
        if (message.inBatch || message.visibleAt > now) continue;
        if (spec.queue.maxReceiveCount !== undefined && message.receiveCount >= spec.queue.maxReceiveCount) {
          this.remove(message);
          this.deadLetters.push(message.body);
          this.options.log(`local bridge: a trigger message was received ${message.receiveCount} times and moved to the dead-letter queue ${spec.deadLetterQueue?.name ?? ''}`);
          continue;
        }
        message.receiveCount++;
        message.firstReceivedAt ??= now;
        message.visibleAt = now + spec.queue.visibilityTimeoutSeconds * 1000;
        message.inBatch = true;
        batch.push(message);
      }
      if (batch.length === 0) break;
      // Injected duplicates: their copy is sent now, so the next round of this loop puts it in a batch of its own.
      for (const message of batch) {
        if (!message.duplicate) continue;
        delete message.duplicate;
        this.options.duplicateDelivery?.count('duplicateDelivery');
        this.messages.push({ messageId: randomUUID(), body: message.body, sentAt: Date.now(), receiveCount: 0, visibleAt: 0 });
      }
      this.inFlight++;
      const run = this.deliver(batch).finally(() => {
        this.inFlight--;
        this.batches.delete(run);
        this.schedule();
      });
      this.batches.add(run);
    }
    this.armTimer();
  }

  /** Wakes the pump when the next hidden message becomes visible again. */
  private armTimer(): void {
    clearTimeout(this.timer);
    const hidden = this.messages.map((m) => m.visibleAt).filter((at) => at > Date.now());
    if (hidden.length === 0 || this.closed) return;
    this.timer = setTimeout(() => this.schedule(), Math.min(...hidden) - Date.now() + 1);
    this.timer.unref();
  }

  private async deliver(batch: Message[]): Promise<void> {
    const { spec } = this.options;
    const event = {
      Records: batch.map((message) => ({
        messageId: message.messageId,
        receiptHandle: `${message.messageId}#${message.receiveCount}`,
        body: message.body,
        attributes: {
          ApproximateReceiveCount: String(message.receiveCount),
          SentTimestamp: String(message.sentAt),
          SenderId: 'AIDAEVENTBRIDGE',
          ApproximateFirstReceiveTimestamp: String(message.firstReceivedAt ?? message.sentAt),
        },
        messageAttributes: {},
        md5OfBody: createHash('md5').update(message.body).digest('hex'),
        eventSource: 'aws:sqs',
        eventSourceARN: spec.queue.arn,
        awsRegion: LOCAL_AWS.region,
      })),
    };
    let failed: Set<string>;
    const release = () => {
      for (const message of batch) message.inBatch = false;
    };
    try {
      const response = (await this.options.dispatch.invoke(event)) as { batchItemFailures?: { itemIdentifier?: unknown }[] } | null;
      failed = this.failuresOf(batch, response);
    } catch (error) {
      release();
      this.options.log(`local bridge: dispatch failed on a batch of ${batch.length}: ${(error as Error).name}: ${(error as Error).message} (the messages come back after ${spec.queue.visibilityTimeoutSeconds} s)`);
      return;
    }
    release();
    // Deleted on success; the failed ones stay hidden until their visibility timeout ends.
    for (const message of batch) if (!failed.has(message.messageId)) this.remove(message);
    if (failed.size > 0) this.options.log(`local bridge: dispatch reported ${failed.size} failed message(s); they come back after ${spec.queue.visibilityTimeoutSeconds} s`);
  }

  /** The messages to keep, as Lambda reads a partial batch response (a malformed one fails the whole batch). */
  private failuresOf(batch: Message[], response: { batchItemFailures?: { itemIdentifier?: unknown }[] } | null): Set<string> {
    if (!this.options.spec.reportBatchItemFailures || !response || !Array.isArray(response.batchItemFailures)) return new Set();
    const ids = new Set(batch.map((m) => m.messageId));
    const failed = response.batchItemFailures.map((f) => f?.itemIdentifier);
    if (failed.some((id) => typeof id !== 'string' || !ids.has(id))) return ids;
    return new Set(failed as string[]);
  }

  private remove(message: Message): void {
    const at = this.messages.indexOf(message);
    if (at >= 0) this.messages.splice(at, 1);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await Promise.allSettled([...this.batches]);
  }
}

/** The event an EventBridge schedule delivers to its target. */
export function scheduledEvent(spec: ScheduleSpec): Record<string, unknown> {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: LOCAL_AWS.account,
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: LOCAL_AWS.region,
    resources: [spec.ruleArn],
    detail: {},
  };
}
