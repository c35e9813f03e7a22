/**
 * `jobs export`: the ledger for spreadsheets and BI tools, as CSV or JSON
 * lines, streamed: rows are read a page at a time (DynamoDB Scan) and written
 * as they come, so a ledger of any size passes in constant memory.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { JobPart, LedgerRow } from 'mapflow-bridge/functions/core/model.ts';

export type ExportFormat = 'csv' | 'jsonl';

/**
 * `--since`: an ISO 8601 date or time (`2025-05-01`, `2025-05-01T10:00:00Z`),
 * or an age: `90m`, `24h`, `7d`. Returns an ISO time.
 */
export function parseSince(value: string, now: Date = new Date()): string {
  const age = /^(\d{1,6})([mhd])$/.exec(value.trim());
  if (age) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as 'm' | 'h' | 'd'];
    return new Date(now.getTime() - Number(age[1]) * unit).toISOString();
  }
  if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim())) {
    const time = Date.parse(value.trim().length === 10 ? `${value.trim()}T00:00:00Z` : value.trim());
    if (Number.isFinite(time)) return new Date(time).toISOString();
  }
  throw new Error(`--since must be a date (2025-05-01), a time (2025-05-01T10:00:00Z) or an age (90m, 24h, 7d); got '${value}'.`);
}

/** Every job row created at or after `since` (all when undefined), a page at a time, in no particular order. */
export async function* scanJobs(doc: DynamoDBDocumentClient, table: string, options: { since?: string; pageSize?: number } = {}): AsyncGenerator<LedgerRow> {
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({
        TableName: table,
        Limit: options.pageSize ?? 500,
        ExclusiveStartKey: startKey,
        FilterExpression: options.since ? '#e = :job AND createdAt >= :since' : '#e = :job',
        ExpressionAttributeNames: { '#e': 'entity' },
        ExpressionAttributeValues: { ':job': 'JOB', ...(options.since ? { ':since': options.since } : {}) },
      }),
    );
    for (const item of page.Items ?? []) yield rowOf(item);
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/** A stored item as the model's row (parts as a list; storage-only attributes dropped), as the Ledger reads it. */
function rowOf(item: Record<string, unknown>): LedgerRow {
  const { statusRank: _rank, partsByIndex, ...rest } = item as Record<string, unknown> & { partsByIndex?: Record<string, JobPart> };
  const parts = Object.values(partsByIndex ?? {}).sort((a, b) => a.index - b.index);
  return { ...rest, ...(parts.length > 0 ? { parts } : {}) } as unknown as LedgerRow;
}

export const CSV_COLUMNS = [
  'jobId',
  'status',
  'kind',
  'route',
  'bucket',
  'key',
  'sizeBytes',
  'areaSqKm',
  'estimatedCost',
  'actualCost',
  'createdAt',
  'finishedAt',
  'durationSeconds',
  'processingIds',
  'projectId',
  'errorCode',
  'errorMessage',
  'resultPrefix',
  'reportKey',
  'retryOf',
  'attempt',
  'retriedBy',
] as const;

export function csvRecord(row: LedgerRow): Record<(typeof CSV_COLUMNS)[number], string | number | undefined> {
  const duration = row.finishedAt ? (Date.parse(row.finishedAt) - Date.parse(row.createdAt)) / 1000 : undefined;
  const processingIds = [...new Set([row.processingId, ...(row.parts ?? []).map((p) => p.processingId)].filter(Boolean))];
  return {
    jobId: row.jobId,
    status: row.status,
    kind: row.kind,
    route: row.routeName,
    bucket: row.input.bucket,
    key: row.input.key,
    sizeBytes: row.input.size,
    areaSqKm: row.areaSqKm,
    estimatedCost: row.estimatedCost,
    actualCost: row.actualCost,
    createdAt: row.createdAt,
    finishedAt: row.finishedAt,
    durationSeconds: duration !== undefined && Number.isFinite(duration) ? Math.round(duration) : undefined,
    processingIds: processingIds.join(' '),
    projectId: row.projectId,
    errorCode: row.error?.code,
    errorMessage: row.error?.message,
    resultPrefix: row.resultPrefix,
    reportKey: row.reportKey,
    retryOf: row.retryOf,
    attempt: row.attempt,
    retriedBy: row.retriedBy,
  };
}

/**
 * One CSV cell (RFC 4180 quoting). Keys and messages come from users: a cell
 * that a spreadsheet would run as a formula (=, +, -, @, tab, CR) is prefixed
 * with a quote, as OWASP advises against CSV injection.
 */
export function csvCell(value: string | number | undefined): string {
  if (value === undefined || value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Writes the rows to `out` as they come (waiting for `drain`), returns how many were written. */
export async function writeExport(rows: AsyncIterable<LedgerRow>, format: ExportFormat, out: Writable): Promise<number> {
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  let count = 0;
  if (format === 'csv') await write(`${CSV_COLUMNS.join(',')}\r\n`);
  for await (const row of rows) {
    if (format === 'csv') {
      const record = csvRecord(row);
      await write(`${CSV_COLUMNS.map((column) => csvCell(record[column])).join(',')}\r\n`);
    } else {
      await write(`${JSON.stringify(row)}\n`);
    }
    count++;
  }
  return count;
}
