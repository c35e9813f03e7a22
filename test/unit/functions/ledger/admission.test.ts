/**
 * Admission (functions/ledger/slots.ts on DynamoDB Local): waiters queue with
 * their task token and a released slot is handed to the oldest one; nobody
 * jumps the queue; concurrent releases never put more than `max` holders in;
 * a waiter whose execution is gone (killed while waiting) gives its place up.
 * A job takes its place at arrival (reserve, at Register Job) and a job still
 * planning is not overtaken; a stale place stops holding the others up.
 */
import { describe, expect, it } from 'vitest';
import { ConcurrencySlots, waiterOrder, waiterRowId, type SlotWaiter, type WakeWaiter } from '../../../../functions/ledger/slots.ts';
import { TransactionCanceledException, TransactionConflictException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, QueryCommand, ScanCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SLOTS_ROW_ID } from '../../../../functions/ledger/schema.ts';
import { LedgerContention } from '../../../../functions/core/errors.ts';
import { interceptedDoc, useDynamoDbLocal } from '../../../support/dynamodb.ts';

const ddb = useDynamoDbLocal();
const arn = (n: number | string) => `arn:aws:states:us-east-1:123456789012:execution:bridge:job-${n}`;
const order = (i: number) => waiterOrder(`2026-01-01T00:00:${String(i).padStart(2, '0')}.000Z`, `job-${i}`, 0);

/** A waker that records who was woken, in order; `gone` holders answer like a stopped execution. */
function recordingWaker(gone: Set<string> = new Set()): { wake: WakeWaiter; woken: string[] } {
  const woken: string[] = [];
  return {
    woken,
    wake: async (waiter: SlotWaiter) => {
      if (gone.has(waiter.holder)) return 'gone';
      woken.push(waiter.holder);
      return 'sent';
    },
  };
}

async function freshSlots(
  max: number,
  wake: WakeWaiter,
  clock: () => Date = () => new Date(),
  reservationHoldMs?: number,
): Promise<{ slots: ConcurrencySlots; table: string }> {
  const table = await ddb.createLedgerTable();
  return { slots: new ConcurrencySlots(ddb.doc, table, max, clock, wake, reservationHoldMs), table };
}

const place = (i: number) => ({ holder: `job-${i}#0`, order: order(i), executionArn: arn(i) });

const waiter = (i: number): Omit<SlotWaiter, 'since'> => ({ holder: `job-${i}#0`, order: order(i), executionArn: arn(i), taskToken: `token-${i}` });

describe('admission: FIFO hand-over of slots to waiting task tokens', () => {
  it('admits waiters in order of arrival, whatever the order they joined in, and lets nobody jump the queue', async () => {
    // Prepare: one slot, taken; five waiters join in shuffled order
    const { wake, woken } = recordingWaker();
    const { slots } = await freshSlots(1, wake);
    expect((await slots.acquire('first#0', arn('first'))).acquired).toBe(true);
    for (const i of [3, 1, 5, 2, 4]) expect(await slots.enqueue(waiter(i))).toBe('waiting');

    // Act: a newcomer tries the fast path while the queue is not empty, then the slot goes round
    const newcomer = await slots.release('first#0').then(() => slots.acquire('late#0', arn('late')));
    for (let i = 1; i <= 5; i++) await slots.release(`job-${i}#0`);

    // Assess
    expect(newcomer.acquired).toBe(false);
    expect(woken).toEqual(['job-1#0', 'job-2#0', 'job-3#0', 'job-4#0', 'job-5#0']);
    expect(await slots.waiters()).toEqual([]);
    expect(await slots.holders()).toEqual([]);
  });

  it('never holds more than max slots while many holders release at the same time', async () => {
    // Prepare: 3 slots taken, 30 waiters; every woken waiter releases again at once (a burst of concurrent releases)
    const max = 3;
    let slots!: ConcurrencySlots;
    let most = 0;
    const woken: string[] = [];
    const releases: Promise<void>[] = [];
    const wake: WakeWaiter = async (w) => {
      woken.push(w.holder);
      most = Math.max(most, (await slots.holders()).length);
      releases.push(slots.release(w.holder));
      return 'sent';
    };
    ({ slots } = await freshSlots(max, wake));
    for (let i = 0; i < max; i++) await slots.acquire(`holder-${i}#0`, arn(`h${i}`));
    await Promise.all(Array.from({ length: 30 }, (_, i) => slots.enqueue(waiter(i + 10))));

    // Act: the three holders release concurrently; then wait for every chained release
    await Promise.all(Array.from({ length: max }, (_, i) => slots.release(`holder-${i}#0`)));
    for (let settled = 0; settled < releases.length; ) {
      const batch = releases.slice(settled);
      settled += batch.length;
      await Promise.all(batch);
    }

    // Assess: every waiter was woken exactly once, never above max, nothing left behind
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(max);
    expect([...woken].sort()).toEqual(Array.from({ length: 30 }, (_, i) => `job-${i + 10}#0`).sort());
    expect(new Set(woken).size).toBe(30);
    expect(await slots.holders()).toEqual([]);
    expect(await slots.waiters()).toEqual([]);
  });

  it('gives up the place of a waiter whose execution was stopped: the slot goes to the next one', async () => {
    // Prepare: job-2 was killed while waiting (its token is gone); job-4 leaves the queue explicitly (fail-job)
    const { wake, woken } = recordingWaker(new Set(['job-2#0']));
    const { slots, table } = await freshSlots(1, wake);
    await slots.acquire('first#0', arn('first'));
    for (const i of [1, 2, 3, 4, 5]) await slots.enqueue(waiter(i));

    // Act
    await slots.releaseJob('job-4');
    for (const holder of ['first#0', 'job-1#0', 'job-3#0']) await slots.release(holder);

    // Assess: 2 was skipped (gone), 4 had left; 5 holds the slot now
    expect(woken).toEqual(['job-1#0', 'job-3#0', 'job-5#0']);
    expect((await slots.holders()).map((h) => h.holder)).toEqual(['job-5#0']);
    expect(await slots.waiters()).toEqual([]);
    const tokenRow = await ddb.doc.send(new GetCommand({ TableName: table, Key: { jobId: waiterRowId('job-4#0') } }));
    expect(tokenRow.Item).toBeUndefined();
  });

  it('admits at once when a slot is free and nobody waits, and the reconciler drops waiters of dead executions', async () => {
    // Prepare
    const { wake, woken } = recordingWaker();
    const { slots } = await freshSlots(1, wake);
    await slots.acquire('first#0', arn('first'));
    await slots.enqueue(waiter(1));
    await slots.enqueue(waiter(2));

    // Act: job-1's execution is gone; the reconciler repairs the queue; then the slot is released
    const repaired = await slots.repairQueue(async (executionArn) => executionArn !== arn(1));
    await slots.release('first#0');
    const lone = await freshSlots(2, wake);
    const immediate = await lone.slots.enqueue(waiter(9));

    // Assess
    expect(repaired.dropped).toEqual(['job-1#0']);
    expect(woken).toEqual(['job-2#0', 'job-9#0']);
    expect(immediate).toBe('acquired');
  });

  it('keeps the place a job took at arrival: a job still planning is not overtaken by a later one that is ready first', async () => {
    // Prepare: two free slots; jobs 1, 2, 3 arrive (register) in that order; job 1 is still in Plan Processing
    const { wake, woken } = recordingWaker();
    const { slots } = await freshSlots(2, wake);
    await slots.acquire('running#0', arn('running')); // one slot busy, one free
    for (const i of [1, 2, 3]) await slots.reserve(place(i));

    // Act: 3 and 2 reach Admit Job first (a free slot, but 1 is ahead), a newcomer tries the fast path, then 1 arrives
    const third = await slots.enqueue(waiter(3));
    const second = await slots.enqueue(waiter(2));
    const newcomer = await slots.acquire('late#0', arn('late'));
    const first = await slots.enqueue(waiter(1));
    await slots.release('running#0');

    // Assess: the free slot waited for job 1; then 2 (the order of arrival, not of readiness); 3 waits
    expect([third, second, newcomer.acquired, first]).toEqual(['waiting', 'waiting', false, 'acquired']);
    expect(woken).toEqual(['job-1#0', 'job-2#0']);
    expect((await slots.waiters()).map((w) => w.holder)).toEqual(['job-3#0']);
  });

  it('a place whose job is stuck holds the queue up only for reservationHoldMs; it keeps its place; a job killed while planning gives it up', async () => {
    // Prepare: a clock the test moves; places taken by 1 (will be stuck), 2 and 3 (killed while planning)
    let now = Date.parse('2026-01-01T00:00:00.000Z');
    const { wake, woken } = recordingWaker();
    const { slots } = await freshSlots(1, wake, () => new Date(now), 5_000);
    for (const i of [1, 2, 3]) await slots.reserve(place(i));

    // Act: 2 is ready while 1 is fresh (blocked), then 1 goes stale (2 passes it);
    // 3 is killed while planning (Fail Job / cancel: releaseJob); 1 finally arrives
    const blocked = await slots.enqueue(waiter(2));
    now += 6_000;
    const granted = await slots.pump();
    await slots.releaseJob('job-3');
    const late = await slots.enqueue(waiter(1));
    const queueBefore = (await slots.waiters()).map((w) => w.holder);
    await slots.release('job-2#0');

    // Assess
    expect(blocked).toBe('waiting');
    expect(granted).toEqual(['job-2#0']);
    expect(late).toBe('waiting');
    expect(queueBefore).toEqual(['job-1#0']); // 3 gave its place up
    expect(woken).toEqual(['job-2#0', 'job-1#0']);
    expect(await slots.waiters()).toEqual([]);
  });

  it('the reconciler drops a place whose execution died while planning, and reserve leaves a parked token alone', async () => {
    // Prepare
    const { wake, woken } = recordingWaker();
    const { slots, table } = await freshSlots(1, wake);
    await slots.acquire('running#0', arn('running'));
    await slots.reserve(place(1));
    await slots.reserve(place(2));
    await slots.enqueue(waiter(2));
    await slots.reserve(place(2)); // a retried Register Job must not undo the parked token

    // Act: job 1's execution is gone
    const repaired = await slots.repairQueue(async (executionArn) => executionArn !== arn(1));
    await slots.release('running#0');

    // Assess
    expect(repaired.dropped).toEqual(['job-1#0']);
    expect(woken).toEqual(['job-2#0']);
    const row = await ddb.doc.send(new GetCommand({ TableName: table, Key: { jobId: waiterRowId('job-1#0') } }));
    expect(row.Item).toBeUndefined();
  });
});

describe('admission: the queue lives in rows of its own, not in the #slots row', () => {
  /** The ledger's rows as stored: the #slots row and every place row. */
  async function stored(table: string): Promise<{ slotsRow: Record<string, unknown>; placeRows: number }> {
    const { Items = [] } = await ddb.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
    const slotsRow = Items.find((item) => item.jobId === SLOTS_ROW_ID) ?? {};
    return { slotsRow, placeRows: Items.filter((item) => String(item.jobId).startsWith('#wait#')).length };
  }

  it('keeps the #slots row a few hundred bytes with 100 waiting, counts them, and serves them in order of arrival', async () => {
    // Prepare: both slots taken; 100 parts arrive and wait, joining in parallel
    const { wake, woken } = recordingWaker();
    const { slots, table } = await freshSlots(2, wake);
    await slots.acquire('a#0', arn('a'));
    await slots.acquire('b#0', arn('b'));
    const many = (i: number): Omit<SlotWaiter, 'since'> => ({
      holder: `job-${i}#0`,
      order: waiterOrder(new Date(Date.parse('2026-01-01T00:00:00.000Z') + i * 1000).toISOString(), `job-${i}`, 0),
      executionArn: arn(i),
      taskToken: `token-${i}-${'t'.repeat(600)}`,
    });
    const outcomes = await Promise.all(Array.from({ length: 100 }, (_, i) => slots.enqueue(many(100 - i))));
    const whileWaiting = await stored(table);

    // Act: every holder releases in turn until the queue is empty
    await slots.release('a#0');
    await slots.release('b#0');
    for (let i = 1; i <= 100; i++) await slots.release(`job-${i}#0`);

    // Assess
    expect(outcomes.every((o) => o === 'waiting')).toBe(true);
    expect(whileWaiting.slotsRow.waiting).toBe(100);
    expect(whileWaiting.placeRows).toBe(100);
    expect(JSON.stringify(whileWaiting.slotsRow).length).toBeLessThan(600);
    expect(woken).toEqual(Array.from({ length: 100 }, (_, i) => `job-${i + 1}#0`));
    const after = await stored(table);
    expect(after.slotsRow.waiting).toBe(0);
    expect(after.placeRows).toBe(0);
  });

  it('a pump that does not see a fresh place in the index yet (it lags on AWS) looks again, and the reconciler serves a place the index shows late', async () => {
    // Prepare: a client whose index hides the queue for the next `hidden` queries; the first
    // two transactions after the slot is freed are cancelled: a transaction in flight, then throttling
    let hidden = 0;
    let conflicts = 0;
    const lagging = interceptedDoc(ddb.doc, async (command, pass) => {
      if (command instanceof QueryCommand && hidden > 0) {
        hidden--;
        return { Items: [] };
      }
      if (command instanceof TransactWriteCommand && conflicts > 0) {
        // First a transaction cancelled because another one held an item, then one whose item was throttled.
        if (conflicts-- % 2 === 0) throw new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: {} });
        throw new TransactionCanceledException({
          message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]',
          CancellationReasons: [{ Code: 'None' }, { Code: 'ThrottlingError' }],
          $metadata: {},
        });
      }
      return pass();
    });
    const { wake, woken } = recordingWaker();
    const table = await ddb.createLedgerTable();
    const slots = new ConcurrencySlots(lagging, table, 1, () => new Date(), wake);
    await slots.acquire('first#0', arn('first'));
    await slots.enqueue(waiter(1));
    await slots.enqueue(waiter(2));

    // Act: the index misses the queue twice, then a grant meets a conflict; later it misses for longer than the pump waits
    hidden = 2;
    conflicts = 2;
    await slots.release('first#0');
    const afterShortLag = [...woken];
    hidden = 1_000;
    await slots.release('job-1#0');
    const afterLongLag = [...woken];
    hidden = 0;
    await slots.repairQueue(async () => true);

    // Assess
    expect(afterShortLag).toEqual(['job-1#0']);
    expect(conflicts).toBe(0);
    expect(afterLongLag).toEqual(['job-1#0']);
    expect(woken).toEqual(['job-1#0', 'job-2#0']);
    expect((await slots.holders()).map((h) => h.holder)).toEqual(['job-2#0']);
  });

  it('gives up a write that meets a transaction in flight on every attempt with LedgerContention, which the state machine retries (issue 37 point 6)', async () => {
    // Prepare: every write of the slots row is cancelled by a transaction in flight, as DynamoDB answers
    // (TransactionCanceledException, one CancellationReasons entry per item: docs of TransactWriteItems)
    let cancelled = 0;
    const contended = interceptedDoc(ddb.doc, async (command, pass) => {
      if (command instanceof UpdateCommand || command instanceof TransactWriteCommand) {
        cancelled++;
        throw new TransactionCanceledException({
          message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]',
          CancellationReasons: [{ Code: 'TransactionConflict' }],
          $metadata: {},
        });
      }
      return pass();
    });
    const table = await ddb.createLedgerTable();
    await new ConcurrencySlots(ddb.doc, table, 1, () => new Date()).acquire('first#0', arn('first'));
    const slots = new ConcurrencySlots(contended, table, 1, () => new Date());

    // Act
    const error = await slots.release('first#0').then(
      () => undefined,
      (e: unknown) => e,
    );

    // Assess: a typed, transient error (its name is what Retry matches) that keeps DynamoDB's as its cause
    expect(error).toBeInstanceOf(LedgerContention);
    expect((error as Error).name).toBe('LedgerContention');
    expect((error as Error).cause).toBeInstanceOf(TransactionCanceledException);
    expect(cancelled).toBe(12);
  });

  it('skips places the index still shows after they were granted or given up: a stale index never grants twice or drops another job\'s place', async () => {
    // Prepare: an index frozen at its first answer (every later Query sees the queue as it was)
    let frozen: unknown;
    const stale = interceptedDoc(ddb.doc, async (command, pass) => (command instanceof QueryCommand ? (frozen ??= await pass()) : pass()));
    const { wake, woken } = recordingWaker();
    const table = await ddb.createLedgerTable();
    const slots = new ConcurrencySlots(stale, table, 1, () => new Date(), wake);
    await slots.acquire('first#0', arn('first'));
    for (const i of [1, 2, 3]) await slots.enqueue(waiter(i));

    // Act: 1 is granted (the index still lists it first); 3 leaves (the index, even filtered, still lists 1, 2, 3)
    await slots.release('first#0');
    await slots.releaseJob('job-3');
    await slots.release('job-1#0');
    await slots.release('job-2#0');
    const { Item } = await ddb.doc.send(new GetCommand({ TableName: table, Key: { jobId: SLOTS_ROW_ID }, ConsistentRead: true }));

    // Assess
    expect(woken).toEqual(['job-1#0', 'job-2#0']);
    expect(await slots.holders()).toEqual([]);
    expect(Item?.waiting).toBe(0);
  });
});

describe('admission: the count of waiters is put right when it drifts from the queue', () => {
  const waitingOf = async (table: string) =>
    (await ddb.doc.send(new GetCommand({ TableName: table, Key: { jobId: SLOTS_ROW_ID }, ConsistentRead: true }))).Item?.waiting as number;

  it('recounts after five quiet minutes: a place deleted by hand no longer sends newcomers through the queue', async () => {
    // Prepare: one slot, taken; two waiters; then one place row deleted by hand (what docs/operations.md warns against)
    let now = Date.parse('2026-11-26T10:00:00.000Z');
    const { wake, woken } = recordingWaker();
    const { slots, table } = await freshSlots(1, wake, () => new Date(now));
    await slots.acquire('first#0', arn('first'));
    for (const i of [1, 2]) expect(await slots.enqueue(waiter(i))).toBe('waiting');
    await ddb.doc.send(new DeleteCommand({ TableName: table, Key: { jobId: waiterRowId('job-2#0') } }));

    // Act: the reconciler's repair a minute later (too soon), then six minutes later
    now += 60_000;
    const soon = await slots.repairQueue(async () => true);
    const countAfterSoon = await waitingOf(table);
    now += 5 * 60_000;
    const later = await slots.repairQueue(async () => true);
    const countAfterLater = await waitingOf(table);
    await slots.release('first#0');
    await slots.release('job-1#0');
    const newcomer = await slots.acquire('late#0', arn('late'));

    // Assess
    expect(soon.recounted).toBeUndefined();
    expect(countAfterSoon).toBe(2);
    expect(later.recounted).toEqual({ from: 2, to: 1 });
    expect(countAfterLater).toBe(1);
    expect(woken).toEqual(['job-1#0']);
    // The queue is empty and counted so: the fast path is open again.
    expect(newcomer.acquired).toBe(true);
    expect(await waitingOf(table)).toBe(0);
  });

  it('raises a count that is too low, so a newcomer cannot take a free slot ahead of a waiter', async () => {
    // Prepare: one slot, taken; a waiter queued; then the count set to 0 by hand (an item restored from an old backup)
    let now = Date.parse('2026-11-26T10:00:00.000Z');
    const { wake } = recordingWaker();
    const { slots, table } = await freshSlots(1, wake, () => new Date(now));
    await slots.acquire('first#0', arn('first'));
    expect(await slots.enqueue(waiter(1))).toBe('waiting');
    await ddb.doc.send(new UpdateCommand({ TableName: table, Key: { jobId: SLOTS_ROW_ID }, UpdateExpression: 'SET waiting = :zero', ExpressionAttributeValues: { ':zero': 0 } }));

    // Act
    now += 6 * 60_000;
    const repaired = await slots.repairQueue(async () => true);

    // Assess
    expect(repaired.recounted).toEqual({ from: 0, to: 1 });
    expect(await waitingOf(table)).toBe(1);
  });

  it('leaves the count alone when admission wrote #slots between the recount\'s read and its write', async () => {
    // Prepare: a drifted count, and a join that lands just before the recount writes
    let now = Date.parse('2026-11-26T10:00:00.000Z');
    const { wake } = recordingWaker();
    const table = await ddb.createLedgerTable();
    let slots!: ConcurrencySlots;
    let joined = false;
    const doc = interceptedDoc(ddb.doc, async (command, pass) => {
      if (!joined && String(command.input.UpdateExpression ?? '').startsWith('SET waiting = :queued')) {
        joined = true;
        await slots.enqueue(waiter(3));
      }
      return pass();
    });
    slots = new ConcurrencySlots(doc, table, 1, () => new Date(now), wake);
    await slots.acquire('first#0', arn('first'));
    for (const i of [1, 2]) await slots.enqueue(waiter(i));
    await ddb.doc.send(new DeleteCommand({ TableName: table, Key: { jobId: waiterRowId('job-2#0') } }));

    // Act
    now += 6 * 60_000;
    const repaired = await slots.repairQueue(async () => true);

    // Assess: the join counted itself (2 + 1); the recount, refused, changed nothing
    expect(joined).toBe(true);
    expect(repaired.recounted).toBeUndefined();
    expect(await waitingOf(table)).toBe(3);
  });
});
