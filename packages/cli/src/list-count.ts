/**
 * `jobs list` shows at most --limit jobs; when the ledger holds more, it says
 * so ("showing the newest 50 of 55; --limit to see more") instead of letting a
 * short list pass for the whole ledger. The count is a DynamoDB COUNT query on
 * the byStatus index (no rows read back), made only when the list is full.
 */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { JOB_STATUSES, type JobStatus } from 'mapflow-bridge/functions/core/model.ts';
import { GSI_BY_STATUS } from 'mapflow-bridge/functions/ledger/ledger.ts';

/** How many jobs the ledger holds (in one status, or in all). */
export async function countJobs(doc: DynamoDBDocumentClient, table: string, status?: JobStatus): Promise<number> {
  const counts = await Promise.all((status ? [status] : [...JOB_STATUSES]).map((one) => countStatus(doc, table, one)));
  return counts.reduce((sum, count) => sum + count, 0);
}

async function countStatus(doc: DynamoDBDocumentClient, table: string, status: JobStatus): Promise<number> {
  let count = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new QueryCommand({
        TableName: table,
        IndexName: GSI_BY_STATUS,
        KeyConditionExpression: '#status = :status',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': status },
        Select: 'COUNT',
        ExclusiveStartKey: startKey,
      }),
    );
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return count;
}

/** The line under a list that shows fewer jobs than exist; undefined when it shows them all. */
export function moreJobsLine(shown: number, total: number, status?: string): string | undefined {
  if (total <= shown) return undefined;
  return `showing the newest ${shown} of ${total}${status ? ` ${status}` : ''} jobs; --limit to see more`;
}

/** The list's rows, and the line saying how many more exist (when the list is full). */
export async function totalLine(
  doc: DynamoDBDocumentClient,
  table: string,
  shown: number,
  limit: number,
  status?: JobStatus,
): Promise<string | undefined> {
  if (shown < limit) return undefined;
  return moreJobsLine(shown, await countJobs(doc, table, status), status);
}
