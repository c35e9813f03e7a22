import { describe, expect, it } from 'vitest';
import { ConcurrencySlots, slotHolder } from '../../../../functions/ledger/slots.ts';
import { useDynamoDbLocal } from '../../../support/dynamodb.ts';

const ddb = useDynamoDbLocal();
const arn = (n: number | string) => `arn:aws:states:us-east-1:123456789012:execution:bridge:job-${n}`;

async function freshSlots(max: number) {
  const table = await ddb.createLedgerTable();
  return new ConcurrencySlots(ddb.doc, table, max);
}

describe('ConcurrencySlots', () => {
  it('grants exactly max slots to 10 parallel acquires', async () => {
    // Prepare
    const slots = await freshSlots(3);
    // Act
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => slots.acquire(slotHolder(`job-${i}`, 0), arn(i))));
    // Assess
    expect(results.filter((r) => r.acquired)).toHaveLength(3);
    expect(await slots.holders()).toHaveLength(3);
    expect(Math.max(...results.map((r) => r.inUse))).toBe(3);
  });

  it('takes a free slot when the row appeared between its failed update and its read (parallel first use of a table)', async () => {
    // Prepare: the first update finds no row; before this acquire reads the row back,
    // another acquire creates it (empty), as parallel first acquires on a new table do.
    const table = await ddb.createLedgerTable();
    const other = new ConcurrencySlots(ddb.doc, table, 3);
    let interleaved = false;
    const doc = {
      send: async (command: { constructor: { name: string } }, ...rest: unknown[]) => {
        if (command.constructor.name === 'GetCommand' && !interleaved) {
          interleaved = true;
          await other.acquire('other#0', arn('other'));
          await other.release('other#0');
        }
        return (ddb.doc.send as (...args: unknown[]) => Promise<unknown>)(command, ...rest);
      },
    } as unknown as typeof ddb.doc;
    const slots = new ConcurrencySlots(doc, table, 3);
    // Act
    const result = await slots.acquire('first#0', arn('first'));
    // Assess: a slot was free all along, so it is taken
    expect(interleaved).toBe(true);
    expect(result).toEqual({ acquired: true, inUse: 1 });
    expect(await slots.holders()).toHaveLength(1);
  });

  it('is idempotent for a holder that already has a slot, even when all are taken', async () => {
    // Prepare
    const slots = await freshSlots(2);
    await slots.acquire('a#0', arn('a'));
    await slots.acquire('b#0', arn('b'));
    const before = await slots.holders();
    // Act
    const again = await slots.acquire('a#0', arn('a'));
    const other = await slots.acquire('c#0', arn('c'));
    // Assess
    expect(again).toEqual({ acquired: true, inUse: 2 });
    expect(other).toEqual({ acquired: false, inUse: 2 });
    expect(await slots.holders()).toEqual(before);
  });

  it('releases idempotently and frees every slot of a job', async () => {
    // Prepare
    const slots = await freshSlots(5);
    await slots.acquire('job-x#0', arn('x'));
    await slots.acquire('job-x#1', arn('x'));
    await slots.acquire('job-xy#0', arn('xy'));
    await slots.acquire('job-y#0', arn('y'));
    // Act
    await slots.release('job-y#0');
    await slots.release('job-y#0');
    await slots.release('never-held');
    await slots.releaseJob('job-x');
    // Assess
    expect((await slots.holders()).map((h) => h.holder)).toEqual(['job-xy#0']);
  });

  it('release and releaseJob do nothing before the slots row exists', async () => {
    // Prepare
    const slots = await freshSlots(1);
    // Act
    await slots.release('a#0');
    await slots.releaseJob('a');
    const first = await slots.acquire('a#0', arn('a'));
    // Assess
    expect(first).toEqual({ acquired: true, inUse: 1 });
  });

  it('reclaims slots of dead executions only', async () => {
    // Prepare
    const slots = await freshSlots(3);
    await slots.acquire('live#0', arn('live'));
    await slots.acquire('dead#0', arn('dead'));
    await slots.acquire('dead#1', arn('dead'));
    const checked: string[] = [];
    // Act
    const freed = await slots.reclaim(async (executionArn) => {
      checked.push(executionArn);
      return executionArn === arn('live');
    });
    // Assess
    expect(freed.map((f) => f.holder).sort()).toEqual(['dead#0', 'dead#1']);
    expect((await slots.holders()).map((h) => h.holder)).toEqual(['live#0']);
    expect(checked.sort()).toEqual([arn('dead'), arn('live')]);
    expect((await slots.acquire('next#0', arn('next'))).acquired).toBe(true);
  });
});
