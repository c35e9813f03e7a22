/**
 * Which Mapflow object a name the bridge chose stands for: a route's mosaic,
 * or a route's project found or created by name.
 *
 * Jobs run in parallel, and "find by name, else create" done by each of them
 * creates the same object several times. So the id is claimed in the ledger
 * table, in a row keyed `<kind>#<name>`, with a conditional put: the first id
 * written wins, and a job whose freshly created object lost deletes it (it is
 * empty: every job goes through the claim and uses the winner). For mosaics
 * the row is also the only way back to an id: the Mapflow API cannot list
 * mosaics. The rows carry no `entity`/`status`, so they never show in the job
 * indexes.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type NamedKind = 'mosaic' | 'project';

export interface NameEntry {
  name: string;
  id: string;
  createdAt: string;
}

export class NameRegistry {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly kind: NamedKind,
  ) {}

  keyOf(name: string): string {
    return `${this.kind}#${name}`;
  }

  async get(name: string): Promise<NameEntry | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { jobId: this.keyOf(name) }, ConsistentRead: true }));
    const item = out.Item as (NameEntry & { jobId: string }) | undefined;
    return item ? { name: item.name, id: item.id, createdAt: item.createdAt } : undefined;
  }

  /**
   * Records `id` for `name` unless another id is recorded already
   * (`replacing` names an id known to be gone, which may be overwritten).
   * Returns the id that is recorded afterwards.
   */
  async claim(name: string, id: string, now: Date, replacing?: string): Promise<string> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { jobId: this.keyOf(name), name, id, createdAt: now.toISOString() },
          ConditionExpression: replacing ? 'attribute_not_exists(jobId) OR id = :old' : 'attribute_not_exists(jobId)',
          ...(replacing && { ExpressionAttributeValues: { ':old': replacing } }),
        }),
      );
      return id;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException) && (err as Error).name !== 'ConditionalCheckFailedException') throw err;
      const winner = await this.get(name);
      if (!winner) throw err;
      return winner.id;
    }
  }
}
