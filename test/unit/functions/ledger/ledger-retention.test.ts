/**
 * ledgerRetentionDays: a final status also writes `expiresAt` (epoch seconds)
 * for DynamoDB TTL; without a retention, and before a final status, there is none.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { Ledger } from '../../../../functions/ledger/ledger.ts';
import { loadConfig } from '../../../../functions/runtime/config.ts';
import { useDynamoDbLocal } from '../../../support/dynamodb.ts';

const ddb = useDynamoDbLocal();
const START = Date.parse('2025-01-01T00:00:00Z');

async function ledgerWith(retentionDays?: number) {
  const table = await ddb.createLedgerTable();
  let tick = START;
  const ledger = new Ledger(ddb.doc, table, () => new Date((tick += 1000)), { retentionDays });
  const stored = async (jobId: string) => (await ddb.doc.send(new GetCommand({ TableName: table, Key: { jobId } }))).Item!;
  await ledger.register({ jobId: 'job-1', input: { bucket: 'b', key: 'inbox/a.geojson', etag: 'e', size: 1 }, kind: 'geojson', routeName: 'default' });
  return { ledger, stored };
}

describe('ledger retention (TTL)', () => {
  it('sets expiresAt = finishedAt + retention days on the final status only', async () => {
    // Prepare
    const { ledger, stored } = await ledgerWith(30);

    // Act
    await ledger.transition('job-1', 'IN_PROGRESS');
    const running = await stored('job-1');
    await ledger.transition('job-1', 'SUCCEEDED');
    const finished = await stored('job-1');

    // Assess
    expect(running.expiresAt).toBeUndefined();
    expect(finished.expiresAt).toBe(Math.floor(Date.parse(finished.finishedAt as string) / 1000) + 30 * 86_400);
  });

  it('writes no expiresAt without a retention', async () => {
    // Prepare
    const { ledger, stored } = await ledgerWith(undefined);

    // Act
    await ledger.transition('job-1', 'FAILED');

    // Assess
    expect((await stored('job-1')).expiresAt).toBeUndefined();
  });

  it('reads LEDGER_RETENTION_DAYS from the environment and refuses a bad value', () => {
    expect(loadConfig({ LEDGER_TABLE: 'ledger', LEDGER_RETENTION_DAYS: '7' }).ledgerRetentionDays).toBe(7);
    expect(loadConfig({ LEDGER_TABLE: 'ledger' }).ledgerRetentionDays).toBeUndefined();
    expect(() => loadConfig({ LEDGER_TABLE: 'ledger', LEDGER_RETENTION_DAYS: '0' })).toThrow(/LEDGER_RETENTION_DAYS "0" must be a whole number/);
  });
});
