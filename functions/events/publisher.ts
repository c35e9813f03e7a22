/**
 * Publishes job events: one EventBridge event per transition (detail-types in
 * EVENT_DETAIL_TYPES), source = EVENT_SOURCE, on EVENT_BUS_NAME. Locally
 * (BRIDGE_EVENTS_FILE) the same events are appended to a JSON-lines file, one
 * `{time, source, detailType, detail}` object per line.
 *
 * PutEvents reports per-entry failures in a 200 response (FailedEntryCount);
 * they are turned into an error here so a lost event fails the task (and is
 * retried) instead of vanishing.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { BridgeError } from '../core/errors.ts';
import type { EventDetailType, LedgerRow } from '../core/model.ts';
import type { JobEventDetail } from './types.ts';

export interface EventPublisher {
  publish(detailType: EventDetailType, detail: JobEventDetail): Promise<void>;
}

/** One line of the local events file. */
export interface LocalEventRecord {
  time: string;
  source: string;
  detailType: EventDetailType;
  detail: JobEventDetail;
}

/** EventBridge refused an event (or the call failed); keeps the cause. */
export class EventPublishError extends BridgeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('EVENT_NOT_PUBLISHED', message, options);
    this.name = 'EventPublishError';
  }
}

/** EventBridge's limit for a whole PutEvents entry. */
export const MAX_EVENT_BYTES = 256 * 1024;

export class EventBridgePublisher implements EventPublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly source: string,
    private readonly eventBusName: string,
  ) {}

  async publish(detailType: EventDetailType, detail: JobEventDetail): Promise<void> {
    const json = JSON.stringify(detail);
    if (Buffer.byteLength(json) > MAX_EVENT_BYTES - 1024) {
      throw new EventPublishError(`Event "${detailType}" of job ${detail.jobId} is larger than EventBridge accepts (256 KB).`);
    }
    let response;
    try {
      response = await this.client.send(
        new PutEventsCommand({
          Entries: [{ Source: this.source, DetailType: detailType, Detail: json, EventBusName: this.eventBusName, Time: eventTime(detail.at) }],
        }),
      );
    } catch (error) {
      throw new EventPublishError(`Cannot publish "${detailType}" for job ${detail.jobId}: ${(error as Error).name}.`, { cause: error });
    }
    if ((response.FailedEntryCount ?? 0) > 0) {
      const failed = response.Entries?.find((entry) => entry.ErrorCode);
      throw new EventPublishError(
        `EventBridge rejected "${detailType}" for job ${detail.jobId}: ${failed?.ErrorCode ?? 'unknown error'}` +
          (failed?.ErrorMessage ? ` (${failed.ErrorMessage})` : '') + '.',
      );
    }
  }
}

function eventTime(at: string): Date {
  const time = new Date(at);
  return Number.isNaN(time.getTime()) ? new Date() : time;
}

export class FileEventPublisher implements EventPublisher {
  private ready?: Promise<unknown>;

  constructor(
    readonly path: string,
    private readonly source: string,
  ) {}

  async publish(detailType: EventDetailType, detail: JobEventDetail): Promise<void> {
    this.ready ??= mkdir(dirname(this.path), { recursive: true });
    await this.ready;
    const record: LocalEventRecord = { time: eventTime(detail.at).toISOString(), source: this.source, detailType, detail };
    // One write per line with O_APPEND: concurrent publishers never interleave.
    await appendFile(this.path, `${JSON.stringify(record)}\n`, 'utf8');
  }
}

/** The event detail for a ledger row (what subscribers get). */
export function eventDetailFromRow(row: LedgerRow): JobEventDetail {
  const processingIds = [
    ...new Set([row.processingId, ...(row.parts ?? []).map((part) => part.processingId)].filter((id): id is string => Boolean(id))),
  ];
  const partialResults = (row.parts ?? []).flatMap((part) => (part.partialResult ? [{ part: part.name, ...part.partialResult }] : []));
  const detail: JobEventDetail = {
    jobId: row.jobId,
    status: row.status,
    kind: row.kind,
    input: row.input,
    routeName: row.routeName,
    projectId: row.projectId,
    mosaicId: row.mosaicId,
    imageId: row.imageId,
    processingIds: processingIds.length > 0 ? processingIds : undefined,
    percentCompleted: row.percentCompleted,
    estimatedCost: row.estimatedCost,
    actualCost: row.actualCost,
    resultPrefix: row.resultPrefix,
    reportKey: row.reportKey,
    partialResults: partialResults.length > 0 ? partialResults : undefined,
    error: row.error,
    imagery: row.imagery,
    messages: row.messages,
    at: row.updatedAt,
  };
  return Object.fromEntries(Object.entries(detail).filter(([, value]) => value !== undefined)) as JobEventDetail;
}
