/**
 * On start, the local bridge looks for inbox objects without a ledger row:
 * their notification lived in the memory of a bridge killed between the
 * upload and the dispatch (the drop folder had already moved the file to
 * uploaded/). Each goes through the dispatcher as the notification would have
 * (same job id, so a notification still in flight collapses into it).
 */
import type { InputObject } from 'mapflow-bridge/functions/core/model.ts';
import { sweepInbox, type InboxSweepContext } from 'mapflow-bridge/functions/jobs/inbox-sweep.ts';
import type { S3NotificationRecord } from './s3/server.ts';

export async function sweepInboxOnStart(
  context: InboxSweepContext,
  bucket: string,
  dispatch: (record: S3NotificationRecord) => void,
  log: (message: string) => void,
): Promise<InputObject[]> {
  // The whole local inbox, in one go: there is no timeout to keep to here.
  const summary = await sweepInbox(context, bucket, async (objects) => objects.forEach((object) => dispatch(recordOf(object))), {
    resume: false,
    maxPages: Number.POSITIVE_INFINITY,
    maxObjects: Number.POSITIVE_INFINITY,
  });
  const keys = summary.dispatched.map((object) => object.key.slice(context.config.prefixes.inbox.length));
  if (keys.length > 0) log(`local bridge: ${keys.length} file(s) in the inbox had no job yet (the bridge stopped before their dispatch): dispatching ${keys.join(', ')}`);
  return summary.dispatched;
}

/** The notification s3rver would have sent for this object. */
function recordOf(object: InputObject): S3NotificationRecord {
  return {
    eventName: 'ObjectCreated:Put',
    s3: { bucket: { name: object.bucket }, object: { key: object.key, eTag: object.etag, size: object.size } },
  };
}
