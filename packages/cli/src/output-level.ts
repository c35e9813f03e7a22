/**
 * The output folder is derived state: copies of what final jobs wrote to the
 * bucket. A bridge copies a job's outputs when it sees its final event, and
 * follows events.jsonl from its end, so a job that ended just before a kill
 * -9 would never be copied. On start the folder is brought level with the
 * ledger instead: every final job's outputs that the folder lacks (or holds
 * cut short) are copied, through copyJobOutputs and its paths. Idempotent:
 * a second run copies nothing.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { JobStatus, LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import type { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
import { copyJobOutputs } from './outputs.ts';

/** Statuses whose jobs have outputs to copy: results (SUCCEEDED) or a report. */
const WITH_OUTPUTS: JobStatus[] = ['SUCCEEDED', 'FAILED', 'REJECTED'];

export interface OutputLevel {
  /** Final jobs looked at. */
  checked: number;
  /** Jobs some of whose outputs were missing, with the files copied now. */
  copied: { row: LedgerRow; files: string[] }[];
  /** Jobs whose outputs could not be copied (tried again on the next start). */
  failed: { jobId: string; message: string }[];
}

export async function levelOutputFolder(
  bridge: { ledger: Pick<Ledger, 'listByStatus'>; s3: S3Client; bucket: string },
  outDir: string,
  options: { concurrency?: number } = {},
): Promise<OutputLevel> {
  const level: OutputLevel = { checked: 0, copied: [], failed: [] };
  const rows: LedgerRow[] = [];
  for (const status of WITH_OUTPUTS) rows.push(...(await bridge.ledger.listByStatus(status, { limit: 1_000_000 })));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < rows.length) {
      const row = rows[next++] as LedgerRow;
      level.checked++;
      try {
        const outputs = await copyJobOutputs(bridge.s3, bridge.bucket, row, outDir, { onlyMissing: true });
        const files = [...outputs.results, ...(outputs.report ? [outputs.report] : [])];
        if (files.length > 0) level.copied.push({ row, files });
      } catch (error) {
        level.failed.push({ jobId: row.jobId, message: (error as Error).message });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, worker));
  return level;
}
