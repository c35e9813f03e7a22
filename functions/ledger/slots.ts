/**
 * Concurrency slots: at most `max` Mapflow processings of this bridge run at
 * once (Mapflow accounts limit parallel processings; beyond them work queues or
 * fails). The slots are one ledger row, `jobId = '#slots'`, whose map `holders`
 * has one entry per running part:
 *
 *   holders: { "<jobId>#<partIndex>": { executionArn, since } }
 *
 * A holder is added only under the condition `size(holders) < max`, evaluated
 * by DynamoDB atomically, so concurrent acquires can never overshoot. Acquire
 * is idempotent for a holder that already has a slot (a retried task), release
 * is idempotent, and `reclaim` frees slots whose execution has died (the
 * reconciler) so a crash can never leak capacity forever.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SLOTS_ROW_ID } from './schema.ts';

export interface SlotHolder {
  holder: string;
  executionArn: string;
  since: string;
}

interface SlotsRow {
  jobId: typeof SLOTS_ROW_ID;
  holders: Record<string, { executionArn: string; since: string }>;
  updatedAt?: string;
}

/** The holder name of a job's part. */
export function slotHolder(jobId: string, partIndex: number): string {
  return `${jobId}#${partIndex}`;
}

export class ConcurrencySlots {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    readonly max: number,
    private readonly clock: () => Date = () => new Date(),
  ) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`ConcurrencySlots max must be a whole number >= 1, got ${max}.`);
  }

  /**
   * Takes a slot for `holder` if one is free. `acquired: true` also when the
   * holder already had one. `inUse` is the number of slots taken afterwards.
   */
  async acquire(holder: string, executionArn: string): Promise<{ acquired: boolean; inUse: number }> {
    const now = this.clock().toISOString();
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const { Attributes } = await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'SET holders.#holder = if_not_exists(holders.#holder, :entry), updatedAt = :now',
            ConditionExpression: 'attribute_exists(holders) AND (attribute_exists(holders.#holder) OR size(holders) < :max)',
            ExpressionAttributeNames: { '#holder': holder },
            ExpressionAttributeValues: { ':entry': { executionArn, since: now }, ':max': this.max, ':now': now },
            ReturnValues: 'ALL_NEW',
          }),
        );
        return { acquired: true, inUse: Object.keys((Attributes as SlotsRow).holders).length };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const row = await this.read();
        if (!row) {
          await this.createRow(now); // first use of the table; then try again
          continue;
        }
        const inUse = Object.keys(row.holders).length;
        // A concurrent retry of the same holder may have won in between.
        return { acquired: holder in row.holders, inUse };
      }
    }
    throw new Error('The concurrency slots row could not be created; check the ledger table.');
  }

  /** Frees the holder's slot; nothing happens when it has none. */
  async release(holder: string): Promise<void> {
    await this.removeHolders([holder]);
  }

  /** Frees every slot of a job (all its parts). */
  async releaseJob(jobId: string): Promise<void> {
    const holders = (await this.holders()).filter((h) => h.holder === jobId || h.holder.startsWith(`${jobId}#`));
    await this.removeHolders(holders.map((h) => h.holder));
  }

  /** Current holders, oldest first. */
  async holders(): Promise<SlotHolder[]> {
    const row = await this.read();
    return Object.entries(row?.holders ?? {})
      .map(([holder, entry]) => ({ holder, executionArn: entry.executionArn, since: entry.since }))
      .sort((a, b) => a.since.localeCompare(b.since) || a.holder.localeCompare(b.holder));
  }

  /**
   * Frees the slots of executions that are no longer alive. A slot is removed
   * only if it still belongs to the execution that was checked (a holder that
   * was released and re-acquired meanwhile is left alone). Returns the freed holders.
   */
  async reclaim(isExecutionAlive: (executionArn: string) => Promise<boolean>): Promise<SlotHolder[]> {
    const freed: SlotHolder[] = [];
    const alive = new Map<string, boolean>();
    for (const entry of await this.holders()) {
      if (!alive.has(entry.executionArn)) alive.set(entry.executionArn, await isExecutionAlive(entry.executionArn));
      if (alive.get(entry.executionArn)) continue;
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'REMOVE holders.#holder SET updatedAt = :now',
            ConditionExpression: 'holders.#holder.executionArn = :arn AND holders.#holder.since = :since',
            ExpressionAttributeNames: { '#holder': entry.holder },
            ExpressionAttributeValues: { ':arn': entry.executionArn, ':since': entry.since, ':now': this.clock().toISOString() },
          }),
        );
        freed.push(entry);
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    return freed;
  }

  private async removeHolders(holders: string[]): Promise<void> {
    if (holders.length === 0) return;
    const names = Object.fromEntries(holders.map((h, i) => [`#h${i}`, h]));
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { jobId: SLOTS_ROW_ID },
          UpdateExpression: `REMOVE ${Object.keys(names).map((n) => `holders.${n}`).join(', ')} SET updatedAt = :now`,
          // Without the condition an update would create the row without `holders`.
          ConditionExpression: 'attribute_exists(holders)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ':now': this.clock().toISOString() },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  private async read(): Promise<SlotsRow | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { jobId: SLOTS_ROW_ID }, ConsistentRead: true }),
    );
    return Item && typeof Item.holders === 'object' ? (Item as SlotsRow) : undefined;
  }

  private async createRow(now: string): Promise<void> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { jobId: SLOTS_ROW_ID, holders: {}, updatedAt: now },
          ConditionExpression: 'attribute_not_exists(holders)',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error; // another acquire created it
    }
  }
}
