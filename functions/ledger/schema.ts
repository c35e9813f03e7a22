/**
 * The ledger table: one DynamoDB table, partition key `jobId`.
 *
 * - Job rows (`entity = 'JOB'`): see `LedgerRow` in functions/core/model.ts,
 *   stored with a numeric `statusRank` (the forward-only condition) and the parts
 *   as a map `partsByIndex` (so parallel parts update atomically).
 * - The concurrency slots row `jobId = '#slots'` (functions/ledger/slots.ts).
 *
 * GSIs (projection ALL), both sparse (the slots row has neither key):
 * - `byStatus`: partition `status`, sort `createdAt` (jobs by status and time);
 * - `byProcessingId`: partition `processingId` (a job from its Mapflow processing).
 *
 * The CDK construct (lib/) mirrors these names; keep them in sync.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

export const LEDGER_KEY = 'jobId';
export const GSI_BY_STATUS = 'byStatus';
export const GSI_BY_PROCESSING_ID = 'byProcessingId';
export const SLOTS_ROW_ID = '#slots';

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
    ],
  };
}
