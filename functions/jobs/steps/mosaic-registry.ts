/**
 * Which Mapflow mosaic a mosaic name stands for.
 *
 * The Mapflow API has no "list mosaics" call, so the bridge remembers the id
 * of each mosaic it created in the ledger table, in a row keyed
 * `mosaic#<name>`. The row carries no `entity`/`status`, so it never shows in
 * the job indexes. Two jobs creating the same mosaic at once are settled by a
 * conditional put: the first id written wins.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface MosaicEntry {
  name: string;
  mosaicId: string;
  createdAt: string;
}

export class MosaicRegistry {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  static keyOf(name: string): string {
    return `mosaic#${name}`;
  }

  async get(name: string): Promise<MosaicEntry | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { jobId: MosaicRegistry.keyOf(name) }, ConsistentRead: true }));
    const item = out.Item as (MosaicEntry & { jobId: string }) | undefined;
    return item ? { name: item.name, mosaicId: item.mosaicId, createdAt: item.createdAt } : undefined;
  }

  /**
   * Records `mosaicId` for `name` unless another id is recorded already
   * (`replacing` names an id known to be gone, which may be overwritten).
   * Returns the id that is recorded afterwards.
   */
  async claim(name: string, mosaicId: string, now: Date, replacing?: string): Promise<string> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { jobId: MosaicRegistry.keyOf(name), name, mosaicId, createdAt: now.toISOString() },
          ConditionExpression: replacing ? 'attribute_not_exists(jobId) OR mosaicId = :old' : 'attribute_not_exists(jobId)',
          ...(replacing && { ExpressionAttributeValues: { ':old': replacing } }),
        }),
      );
      return mosaicId;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException) && (err as Error).name !== 'ConditionalCheckFailedException') throw err;
      const winner = await this.get(name);
      if (!winner) throw err;
      return winner.mosaicId;
    }
  }
}
