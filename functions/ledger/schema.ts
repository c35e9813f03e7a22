/**
 * The ledger table: one DynamoDB table, partition key `jobId`.
 *
 * - Job rows (`entity = 'JOB'`): see `LedgerRow` in functions/core/model.ts,
 *   stored with a numeric `statusRank` (the forward-only condition) and the parts
 *   as a map `partsByIndex` (so parallel parts update atomically).
 * - The concurrency slots row `jobId = '#slots'` and one row per place in the
 *   admission queue, `jobId = '#wait#<holder>'` (functions/ledger/slots.ts).
 *
 * GSIs, all sparse (each row kind has only its own index's keys):
 * - `byStatus` (ALL): partition `status`, sort `createdAt` (jobs by status and time);
 * - `byProcessingId` (ALL): partition `processingId` (a job from its Mapflow processing);
 * - `bySlotQueue` (KEYS_ONLY): partition `slotQueue`, sort `slotOrder`: the
 *   places waiting for a slot, oldest arrival first. A place leaves the index
 *   when it is granted its slot or gives it up.
 *
 * The CDK construct (lib/) mirrors these names; keep them in sync.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

export const LEDGER_KEY = 'jobId';
export const GSI_BY_STATUS = 'byStatus';
export const GSI_BY_PROCESSING_ID = 'byProcessingId';
export const GSI_BY_SLOT_QUEUE = 'bySlotQueue';
export const SLOTS_ROW_ID = '#slots';
/** Attributes of a queued place (the keys of `bySlotQueue`). */
export const SLOT_QUEUE_ATTRIBUTE = 'slotQueue';
export const SLOT_ORDER_ATTRIBUTE = 'slotOrder';

/** Table definition for local mode and tests (on-demand billing, like the stack). */
export function ledgerTableSchema(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: LEDGER_KEY, AttributeType: 'S' },
      { AttributeName: 'status', AttributeType: 'S' },
      { AttributeName: 'createdAt', AttributeType: 'S' },
      { AttributeName: 'processingId', AttributeType: 'S' },
      { AttributeName: SLOT_QUEUE_ATTRIBUTE, AttributeType: 'S' },
      { AttributeName: SLOT_ORDER_ATTRIBUTE, AttributeType: 'S' },
    ],
    KeySchema: [{ AttributeName: LEDGER_KEY, KeyType: 'HASH' }],
    GlobalSecondaryIndexes: [
      {
        IndexName: GSI_BY_STATUS,
        KeySchema: [
          { AttributeName: 'status', KeyType: 'HASH' },
          { AttributeName: 'createdAt', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
      {
        IndexName: GSI_BY_PROCESSING_ID,
        KeySchema: [{ AttributeName: 'processingId', KeyType: 'HASH' }],
        Projection: { ProjectionType: 'ALL' },
      },
      {
        // Only the order is needed: the place itself is read consistently from the table.
        IndexName: GSI_BY_SLOT_QUEUE,
        KeySchema: [
          { AttributeName: SLOT_QUEUE_ATTRIBUTE, KeyType: 'HASH' },
          { AttributeName: SLOT_ORDER_ATTRIBUTE, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
    ],
  };
}
