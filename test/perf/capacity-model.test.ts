/**
 * The capacity model's admission figures (packages/bench/capacity.ts, docs/capacity.md)
 * against what DynamoDB Local bills for them: one part's reserve, enqueue,
 * grant and release, in steady state with a short and with a long queue. The
 * queue's places are rows of their own, so the bill per part must not grow
 * with the queue (with the queue inside the `#slots` row it grew by about one
 * write unit per 10 waiting parts on every write of the row).
 */
import type { ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { ADMISSION_READ_UNITS_PER_PART, ADMISSION_WRITE_UNITS_PER_PART, admissionCost } from '../../packages/bench/capacity.ts';
import { ConcurrencySlots, waiterOrder, type SlotWaiter } from '../../functions/ledger/slots.ts';
import { interceptedDoc, useDynamoDbLocal } from '../support/dynamodb.ts';

const ddb = useDynamoDbLocal();

/** A document client that asks DynamoDB for the capacity of every request and adds it up. */
function metered(doc: DynamoDBDocumentClient) {
  const units = { reads: 0, writes: 0, refusedWrites: 0 };
  const add = (consumed: ConsumedCapacity | ConsumedCapacity[] | undefined, kind: 'reads' | 'writes') => {
    for (const c of [consumed ?? []].flat()) units[kind] += c.CapacityUnits ?? 0;
  };
  const client = interceptedDoc(doc, async (command, pass) => {
    command.input.ReturnConsumedCapacity = 'TOTAL';
    const kind = command instanceof GetCommand || command instanceof QueryCommand ? 'reads' : 'writes';
    try {
      const output = (await pass()) as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] };
      add(output.ConsumedCapacity, kind);
      return output;
    } catch (error) {
      // A refused conditional write is billed too; DynamoDB does not say how much in the error.
      units.refusedWrites++;
      throw error;
    }
  });
  return { client, units, reset: () => Object.assign(units, { reads: 0, writes: 0, refusedWrites: 0 }) };
}

/** Capacity units per admitted part in steady state: `queued` parts wait while one arrives and one slot is released per cycle. */
async function unitsPerPart(queued: number, cycles = 20): Promise<{ reads: number; writes: number; refusedWrites: number }> {
  const meter = metered(ddb.doc);
  const woken: string[] = [];
  const table = await ddb.createLedgerTable();
  const slots = new ConcurrencySlots(meter.client, table, 2, () => new Date(), async (w) => {
    woken.push(w.holder);
    return 'sent';
  });
  const running = ['running-a#0', 'running-b#0'];
  for (const holder of running) await slots.acquire(holder, `arn:aws:states:us-east-1:123456789012:execution:bridge:${holder}`);
  let arrived = 0;
  // File names of a usual length: the job id is the name plus a 32-character hash.
  const arrive = async () => {
    const jobId = `area-${String(arrived).padStart(5, '0')}-geojson-0123456789abcdef0123456789abcdef`;
    const order = waiterOrder(new Date(Date.parse('2026-01-01T00:00:00.000Z') + arrived++ * 1000).toISOString(), jobId, 0);
    const executionArn = `arn:aws:states:us-east-1:123456789012:execution:MapflowBridgeStateMachine0123456789AB:${jobId}`;
    await slots.reserve({ holder: `${jobId}#0`, order, executionArn });
    const waiter: Omit<SlotWaiter, 'since'> = { holder: `${jobId}#0`, order, executionArn, taskToken: 'A'.repeat(700) };
    await slots.enqueue(waiter);
  };
  for (let i = 0; i < queued; i++) await arrive();
  meter.reset();
  for (let c = 0; c < cycles; c++) {
    await arrive();
    await slots.release(running.shift()!);
    running.push(woken.at(-1)!);
  }
  return { reads: meter.units.reads / cycles, writes: meter.units.writes / cycles, refusedWrites: meter.units.refusedWrites / cycles };
}

describe('capacity model: admission', () => {
  it("bills the model's units per admitted part on DynamoDB Local, the same with 0 and with 100 parts waiting", async () => {
    // Act
    const short = await unitsPerPart(0);
    const long = await unitsPerPart(100);

    console.log(`admission units per part: 0 waiting ${JSON.stringify(short)}, 100 waiting ${JSON.stringify(long)}`);
    // Assess: measured within a quarter of the model, and no growth with the queue
    for (const measured of [short, long]) {
      expect(measured.writes + measured.refusedWrites).toBeGreaterThan(0.75 * ADMISSION_WRITE_UNITS_PER_PART);
      expect(measured.writes + measured.refusedWrites).toBeLessThan(1.25 * ADMISSION_WRITE_UNITS_PER_PART);
      expect(measured.reads).toBeGreaterThan(0.75 * ADMISSION_READ_UNITS_PER_PART);
      expect(measured.reads).toBeLessThan(1.25 * ADMISSION_READ_UNITS_PER_PART);
    }
    expect(long.writes).toBeLessThanOrEqual(short.writes * 1.1);
    expect(long.reads).toBeLessThanOrEqual(short.reads * 1.1);
  });

  it('prices the first design (the queue inside #slots) by the row size, which fails past the 400 KB item limit', () => {
    // Act
    const empty = admissionCost(0);
    const deep = admissionCost(2_000);
    const full = admissionCost(4_000);

    // Assess
    expect(deep.dollarsPer1000).toBe(empty.dollarsPer1000);
    expect(deep.queueInRow.writeUnits).toBeGreaterThan(100 * empty.queueInRow.writeUnits / 2);
    expect(full.queueInRow.fits).toBe(false);
  });
});
