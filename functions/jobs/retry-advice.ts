/**
 * How a finished job really runs again. A job is its bucket, key and ETag, and
 * runs exactly once: the same bytes dropped again under the same key are the
 * same, finished job and are not processed again. A module of its own: the
 * reconciler quotes it without the rest of outcome.ts (its bundle's 400 KiB goal).
 */
export const HOW_TO_RETRY =
  'to run it again, use `mapflow-bridge jobs retry <jobId>` (with --stack <name> on AWS), drop it again under a new name, or change the file (the same bytes under the same key are the same job, which has ended)';
