/**
 * The capacity model's `#slots` row (bench/capacity.ts, docs/capacity.md):
 * DynamoDB bills a write by the item's size (per KB) and a consistent read per
 * 4 KB, so the row's cost grows with the queue. (The modelled sizes per holder
 * and waiter are estimates from docs/architecture.md, not yet measured
 * against a real row.)
 */
import { describe, expect, it } from 'vitest';
import { queueCapacity, slotsRowCost } from '../../bench/capacity.ts';

describe('capacity model: the #slots row', () => {
  it('bills a write of the row per KB and a consistent read per 4 KB, so a long queue costs more per job', () => {
    const empty = slotsRowCost(0, 5);
    const deep = slotsRowCost(2_000, 5);
    expect(empty).toMatchObject({ writeUnits: 2, readUnits: 1, fits: true });
    expect(deep.writeUnits).toBe(Math.ceil(deep.rowBytes / 1024));
    expect(deep.readUnits).toBe(Math.ceil(deep.rowBytes / 4096));
    expect(deep.extraDollarsPer1000).toBeGreaterThan(100 * empty.extraDollarsPer1000);
    expect(slotsRowCost(queueCapacity(5) + 1, 5).fits).toBe(false);
  });
});
