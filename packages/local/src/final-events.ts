/**
 * A job's final ledger write and its final event are two writes: a kill -9
 * between them (issue 24) left a final row whose event never went out, and
 * nothing to drive it on (a final row is not resumed). The final write marks
 * the row `finalEventPending` and the mark is removed once the event and the
 * input's tags are out (functions/jobs/finalize.ts), so on start the local
 * bridge finds what a killed run owed: each marked row's event is published,
 * unless events.jsonl already holds it (the kill came after the publish and
 * before the mark was removed), the input tagged, and the mark removed.
 * Exactly one final event a job.
 */
import { EVENT_DETAIL_TYPES, isFinalStatus, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import type { EventPublisher } from 'mapflow-bridge/functions/events/publisher.ts';
import type { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
import type { S3Client } from '@aws-sdk/client-s3';
import { finalEventDetail, TAG_JOB_ID, TAG_STATUS } from 'mapflow-bridge/functions/jobs/finalize.ts';
import { tagObject } from 'mapflow-bridge/functions/storage/s3.ts';
import { readEvents } from './events/file.ts';

export interface FinalEventsOwed {
  /** Jobs whose final event was published now. */
  published: string[];
  /** Jobs whose final event was in the events file already (only the mark was removed). */
  alreadyOut: string[];
}

export async function publishFinalEventsOwed(
  ledger: Pick<Ledger, 'listFinalEventsPending' | 'finalEventPublished'>,
  events: EventPublisher,
  eventsFile: string,
  options: { s3?: S3Client; now?: () => Date } = {},
): Promise<FinalEventsOwed> {
  const now = options.now ?? (() => new Date());
  const owed: FinalEventsOwed = { published: [], alreadyOut: [] };
  const rows = (await ledger.listFinalEventsPending({ limit: 10_000 })).filter((row) => isFinalStatus(row.status));
  if (rows.length === 0) return owed;
  // Read only when something is owed: after a kill in that window, not on every start.
  const out = new Set((await readEvents(eventsFile)).map((event) => `${event.detail.jobId} ${event.detailType}`));
  for (const row of rows) {
    const detailType = EVENT_DETAIL_TYPES[row.status as keyof typeof EVENT_DETAIL_TYPES];
    if (out.has(`${row.jobId} ${detailType}`)) {
      owed.alreadyOut.push(row.jobId);
    } else {
      await events.publish(detailType, finalEventDetail(row as LedgerRow, now()));
      owed.published.push(row.jobId);
    }
    // The input deleted or replaced since: the outcome stands without its tags, as in finalize.ts.
    if (options.s3) await tagObject(options.s3, row.input, { [TAG_JOB_ID]: row.jobId, [TAG_STATUS]: row.status }).catch(() => undefined);
    await ledger.finalEventPublished(row.jobId);
  }
  return owed;
}
