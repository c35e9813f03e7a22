/**
 * The job ledger: one row per job, updated only with conditional writes so
 * that retried tasks, duplicate executions and the reconciler can race without
 * corrupting a row.
 *
 * Rules enforced by DynamoDB itself (not by read-then-write):
 * - `register` creates a row only if none exists (a re-delivered event finds the first one);
 * - `transition` only moves forward by status rank; IN_PROGRESS may be re-entered
 *   (a restarted processing); a waiting status (QUEUED) is entered from any
 *   status before SUBMITTED and keeps the row's rank; a final status
 *   (SUCCEEDED, FAILED, REJECTED) is never left, so the first outcome written wins;
 * - parts are stored as a map by index, so parallel parts never overwrite each other.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { BridgeError } from '../core/errors.ts';
import {
  FINAL_STATUSES,
  JOB_STATUSES,
  isFinalStatus,
  isWaitingStatus,
  statusRank,
  WAITING_ENDS_AT,
  type JobPart,
  type JobStatus,
  type LedgerRow,
} from '../core/model.ts';
import { GSI_BY_PROCESSING_ID, GSI_BY_STATUS } from './schema.ts';

export { ledgerTableSchema, GSI_BY_PROCESSING_ID, GSI_BY_STATUS, SLOTS_ROW_ID } from './schema.ts';

/** A ledger operation could not be done (the row is missing, or DynamoDB failed); keeps the cause. */
export class LedgerError extends BridgeError {
  constructor(code: 'JOB_NOT_FOUND' | 'INVALID_PATCH' | 'LEDGER_WRITE_FAILED', message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'LedgerError';
  }
}

export type RegisterInput = Omit<LedgerRow, 'statusHistory' | 'createdAt' | 'updatedAt' | 'entity' | 'status'>;

/** Attributes a patch may not set: they are owned by register/transition. */
const PROTECTED_FIELDS = new Set(['jobId', 'status', 'statusRank', 'statusHistory', 'createdAt', 'updatedAt', 'entity', 'finishedAt', 'partsByIndex', 'finalEventPending']);
const FIRST_FINAL_RANK = Math.min(...FINAL_STATUSES.map(statusRank));
const DEFAULT_LIST_LIMIT = 100;

/** How a row is stored: the model's row plus the rank and the parts map. */
interface StoredRow extends Omit<LedgerRow, 'parts'> {
  statusRank: number;
  partsByIndex?: Record<string, JobPart>;
}

export class Ledger {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly clock: () => Date = () => new Date(),
    /** retentionDays: a final status also sets `expiresAt` (epoch seconds) for DynamoDB TTL. */
    private readonly options: { retentionDays?: number } = {},
  ) {}

  /**
   * Creates the job row in status RECEIVED unless it exists. Returns the row
   * and whether this call created it (false: a duplicate; the row is the first one).
   */
  async register(row: RegisterInput): Promise<{ created: boolean; row: LedgerRow }> {
    const now = this.clock().toISOString();
    const { parts, ...rest } = row as RegisterInput & { parts?: JobPart[] };
    const item: StoredRow = {
      ...stripUndefined(rest),
      entity: 'JOB',
      status: 'RECEIVED',
      statusRank: statusRank('RECEIVED'),
      statusHistory: [{ status: 'RECEIVED', at: now }],
      partsByIndex: partsMap(parts ?? []),
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.doc.send(
        new PutCommand({ TableName: this.tableName, Item: item, ConditionExpression: 'attribute_not_exists(jobId)' }),
      );
      return { created: true, row: toRow(item) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw writeFailed('register', row.jobId, error);
      const existing = await this.get(row.jobId);
      if (!existing) throw writeFailed('register', row.jobId, error);
      return { created: false, row: existing };
    }
  }

  /** The row, read consistently; undefined when there is none. */
  async get(jobId: string): Promise<LedgerRow | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { jobId }, ConsistentRead: true }));
    return Item && Item.entity === 'JOB' ? toRow(Item as StoredRow) : undefined;
  }

  /**
   * Moves the job to `status` (and applies `patch`) if that is a step forward.
   * `changed: false` means the row already was at or past that status (or final):
   * nothing was written and `row` is the current row.
   */
  async transition(
    jobId: string,
    status: JobStatus,
    patch: Partial<LedgerRow> = {},
    note?: string,
  ): Promise<{ changed: boolean; row: LedgerRow }> {
    const rank = statusRank(status);
    if (rank < 0) throw new LedgerError('INVALID_PATCH', `Unknown job status "${status}"; expected one of ${JOB_STATUSES.join(', ')}.`);
    const now = this.clock().toISOString();
    const waiting = isWaitingStatus(status);
    const update = new UpdateBuilder();
    const statusName = update.name('status');
    update.expressions.push(`${statusName} = ${update.value(status)}`);
    // A waiting status keeps the rank of where the job was (see WAITING_STATUSES).
    if (!waiting) update.set('statusRank', rank);
    update.set('updatedAt', now);
    update.append('statusHistory', [{ status, at: now, ...(note ? { note } : {}) }]);
    if (isFinalStatus(status)) update.set('finishedAt', now);
    // The final event is owed until finalEventPublished: a crash between this write and the publish leaves the mark.
    if (isFinalStatus(status)) update.set('finalEventPending', true);
    if (isFinalStatus(status) && this.options.retentionDays) {
      update.set('expiresAt', Math.floor(Date.parse(now) / 1000) + this.options.retentionDays * 86_400);
    }
    applyPatch(update, patch);

    // Forward only; IN_PROGRESS may be re-entered; a waiting status from anywhere
    // before WAITING_ENDS_AT, not twice in a row; never out of a final status.
    update.values[':rank'] = waiting ? statusRank(WAITING_ENDS_AT) : rank;
    update.values[':firstFinalRank'] = FIRST_FINAL_RANK;
    const forward = waiting
      ? `statusRank < :rank AND ${statusName} <> ${update.value(status)}`
      : status === 'IN_PROGRESS'
        ? 'statusRank <= :rank'
        : 'statusRank < :rank';
    const condition = `attribute_exists(jobId) AND ${forward} AND statusRank < :firstFinalRank`;
    try {
      return { changed: true, row: await this.updateRow(jobId, update, condition) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw writeFailed(`transition to ${status}`, jobId, error);
      const current = await this.get(jobId);
      if (!current) throw new LedgerError('JOB_NOT_FOUND', `Job ${jobId} is not in the ledger; cannot move it to ${status}.`, { cause: error });
      return { changed: false, row: current };
    }
  }

  /**
   * The final event of the job is out: removes `finalEventPending` (set by the
   * final transition). Nothing else changes, `updatedAt` included.
   */
  async finalEventPublished(jobId: string): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({ TableName: this.tableName, Key: { jobId }, UpdateExpression: 'REMOVE finalEventPending', ConditionExpression: 'attribute_exists(jobId)' }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return; // the row is gone (retention): nothing owed
      throw writeFailed('final event mark', jobId, error);
    }
  }

  /**
   * Final rows whose final event was never published (`finalEventPending`):
   * the process died, or the publish failed, after the final write.
   */
  async listFinalEventsPending(options: { limit?: number } = {}): Promise<LedgerRow[]> {
    const limit = options.limit ?? 1_000;
    const rows: LedgerRow[] = [];
    for (const status of FINAL_STATUSES) {
      if (rows.length >= limit) break;
      rows.push(
        ...(await this.queryAll(
          {
            TableName: this.tableName,
            IndexName: GSI_BY_STATUS,
            KeyConditionExpression: '#status = :status',
            FilterExpression: 'attribute_exists(finalEventPending)',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':status': status },
          },
          limit - rows.length,
        )),
      );
    }
    return rows;
  }

  /** Sets non-status fields (percent completed, ids, costs...). The row must exist. */
  async update(jobId: string, patch: Partial<LedgerRow>): Promise<LedgerRow> {
    const update = new UpdateBuilder();
    update.set('updatedAt', this.clock().toISOString());
    applyPatch(update, patch);
    try {
      return await this.updateRow(jobId, update, 'attribute_exists(jobId)');
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw new LedgerError('JOB_NOT_FOUND', `Job ${jobId} is not in the ledger; cannot update it.`, { cause: error });
      }
      throw writeFailed('update', jobId, error);
    }
  }

  /**
   * Raises the job's percentCompleted to `percent`, never lowers it (a
   * conditional write, so parts polled in parallel cannot write an older,
   * lower figure over a newer one). Returns the row, changed or not.
   */
  async raisePercent(jobId: string, percent: number): Promise<LedgerRow> {
    const update = new UpdateBuilder();
    update.set('updatedAt', this.clock().toISOString());
    const name = update.name('percentCompleted');
    const value = update.value(percent);
    update.expressions.push(`${name} = ${value}`);
    try {
      return await this.updateRow(jobId, update, `attribute_exists(jobId) AND (attribute_not_exists(${name}) OR ${name} < ${value})`);
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw writeFailed('raise the percent of', jobId, error);
      const current = await this.get(jobId);
      if (!current) throw new LedgerError('JOB_NOT_FOUND', `Job ${jobId} is not in the ledger; cannot record its percent.`, { cause: error });
      return current;
    }
  }

  /**
   * Writes one part (replacing the part with the same index). The first part
   * with a processing id also sets the row's `processingId` (GSI byProcessingId).
   */
  async upsertPart(jobId: string, part: JobPart): Promise<LedgerRow> {
    if (!Number.isInteger(part.index) || part.index < 0) {
      throw new LedgerError('INVALID_PATCH', `Part index must be a whole number >= 0, got ${String(part.index)}.`);
    }
    const update = new UpdateBuilder();
    const partName = update.name('partsByIndex');
    const indexName = update.name(String(part.index));
    update.expressions.push(`${partName}.${indexName} = ${update.value(stripUndefined(part))}`);
    update.set('updatedAt', this.clock().toISOString());
    if (part.processingId) {
      const pid = update.name('processingId');
      update.expressions.push(`${pid} = if_not_exists(${pid}, ${update.value(part.processingId)})`);
    }
    const condition = `attribute_exists(jobId) AND attribute_type(${partName}, ${update.value('M')})`;
    try {
      return await this.updateRow(jobId, update, condition);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw new LedgerError('JOB_NOT_FOUND', `Job ${jobId} is not in the ledger; cannot record part ${part.index}.`, { cause: error });
      }
      throw writeFailed(`record part ${part.index}`, jobId, error);
    }
  }

  /** Jobs in a status, newest first (GSI byStatus). */
  async listByStatus(status: JobStatus, options: { limit?: number } = {}): Promise<LedgerRow[]> {
    return this.queryAll(
      {
        TableName: this.tableName,
        IndexName: GSI_BY_STATUS,
        KeyConditionExpression: '#status = :status',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': status },
        ScanIndexForward: false,
      },
      options.limit ?? DEFAULT_LIST_LIMIT,
    );
  }

  /** The most recently created jobs over all statuses, newest first. */
  async listRecent(options: { limit?: number } = {}): Promise<LedgerRow[]> {
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    const perStatus = await Promise.all(JOB_STATUSES.map((status) => this.listByStatus(status, { limit })));
    return perStatus
      .flat()
      .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.jobId.localeCompare(b.jobId)))
      .slice(0, limit);
  }

  /** The job whose first processing is `processingId` (GSI byProcessingId). */
  async findByProcessingId(processingId: string): Promise<LedgerRow | undefined> {
    const rows = await this.queryAll(
      {
        TableName: this.tableName,
        IndexName: GSI_BY_PROCESSING_ID,
        KeyConditionExpression: 'processingId = :pid',
        ExpressionAttributeValues: { ':pid': processingId },
      },
      1,
    );
    return rows[0];
  }

  /**
   * Writes `update` to the job's row if `condition` holds and returns the row
   * as written (ALL_NEW). A failed condition or call is thrown as DynamoDB
   * threw it: each caller says what it means.
   */
  private async updateRow(jobId: string, update: UpdateBuilder, condition: string): Promise<LedgerRow> {
    const { Attributes } = await this.doc.send(
      new UpdateCommand({ TableName: this.tableName, Key: { jobId }, ...update.build(), ConditionExpression: condition, ReturnValues: 'ALL_NEW' }),
    );
    return toRow(Attributes as StoredRow);
  }

  private async queryAll(input: QueryCommandInput, limit: number): Promise<LedgerRow[]> {
    const rows: LedgerRow[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({ ...input, Limit: Math.min(limit - rows.length, 1_000), ExclusiveStartKey: startKey }),
      );
      for (const item of page.Items ?? []) if (item.entity === 'JOB') rows.push(toRow(item as StoredRow));
      startKey = page.LastEvaluatedKey;
    } while (startKey && rows.length < limit);
    return rows.slice(0, limit);
  }
}

/** Builds SET expressions with placeholder names and values. */
class UpdateBuilder {
  readonly expressions: string[] = [];
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private counter = 0;

  name(attribute: string): string {
    const placeholder = `#n${Object.keys(this.names).length}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:v${this.counter++}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  set(attribute: string, value: unknown): void {
    this.expressions.push(`${this.name(attribute)} = ${this.value(value)}`);
  }

  append(attribute: string, items: unknown[]): void {
    const name = this.name(attribute);
    const empty = this.value([]);
    this.expressions.push(`${name} = list_append(if_not_exists(${name}, ${empty}), ${this.value(items)})`);
  }

  build(): { UpdateExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues: Record<string, unknown> } {
    return {
      UpdateExpression: `SET ${this.expressions.join(', ')}`,
      ExpressionAttributeNames: this.names,
      ExpressionAttributeValues: this.values,
    };
  }
}

function applyPatch(update: UpdateBuilder, patch: Partial<LedgerRow>): void {
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (PROTECTED_FIELDS.has(key)) {
      throw new LedgerError('INVALID_PATCH', `A ledger patch may not set "${key}"; use register/transition for it.`);
    }
    if (key === 'parts') {
      update.set('partsByIndex', partsMap(value as JobPart[]));
      continue;
    }
    if (key === 'processingId' && value === '') continue; // GSI keys cannot be empty strings
    update.set(key, typeof value === 'object' && value !== null ? stripUndefined(value) : value);
  }
}

function partsMap(parts: JobPart[]): Record<string, JobPart> {
  return Object.fromEntries(parts.map((part) => [String(part.index), stripUndefined(part)]));
}

/** The model's row from a stored item: parts as a list ordered by index, no storage-only attributes. */
function toRow(item: StoredRow): LedgerRow {
  const { statusRank: _rank, partsByIndex, ...rest } = item;
  const parts = Object.values(partsByIndex ?? {}).sort((a, b) => a.index - b.index);
  return { ...rest, ...(parts.length > 0 ? { parts } : {}) } as LedgerRow;
}

function stripUndefined<T>(value: T): T {
  if (Array.isArray(value)) return value.map(stripUndefined) as T;
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, stripUndefined(v)]),
  ) as T;
}

function writeFailed(operation: string, jobId: string, cause: unknown): LedgerError {
  return new LedgerError('LEDGER_WRITE_FAILED', `Ledger ${operation} failed for job ${jobId}: ${(cause as Error)?.name ?? 'error'}.`, { cause });
}
