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
 *
 * Admission is first come, first served and free while waiting (see
 * docs/architecture.md, "Admission"): a part that finds no free slot joins
 * `waiters` (holder -> its order key, the job's arrival time) and parks its
 * Step Functions task token in a row of its own (`#wait#<holder>`, since tokens
 * are long), then its execution sleeps on `.waitForTaskToken`: no polling.
 * Every release `pump`s: it moves the oldest waiter into `holders` (the same
 * atomic `size(holders) < max` condition) and hands it its token's success.
 * The fast path `acquire` refuses while anyone waits, so nobody jumps the queue.
 * A token that is gone (its execution was stopped) frees the slot again and
 * the next waiter gets it; a token row left behind (a lost hand-over) is
 * re-sent by the reconciler.
 *
 * A job takes its place in the queue when it arrives (`reserve`, at Register
 * Job), before it has a token: its row `#wait#<holder>` then has no token yet.
 * The pump does not hand a slot past such a place while it is fresh (the job
 * is still in Plan Processing, a short step): it waits for the job's token, so
 * a job still planning is never overtaken. A place older than
 * `reservationHoldMs` (its job is stuck or gone) no longer holds the others
 * up; it keeps its place until the reconciler drops it.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SLOTS_ROW_ID } from './schema.ts';

export interface SlotHolder {
  holder: string;
  executionArn: string;
  since: string;
}

interface SlotsRow {
  jobId: typeof SLOTS_ROW_ID;
  holders: Record<string, { executionArn: string; since: string }>;
  /** Waiting holders -> order key (oldest first is served first). */
  waiters?: Record<string, string>;
  updatedAt?: string;
}

/** Attempts of acquire() while the row it reads back shows a free slot it could not take. */
const ACQUIRE_ATTEMPTS = 8;

/** Default: how long a place taken without a token yet holds up the queue behind it. */
export const DEFAULT_RESERVATION_HOLD_MS = 30_000;

/** A place in the queue taken at arrival, before the job has a token. */
export interface SlotReservation {
  holder: string;
  order: string;
  executionArn: string;
}

/** A parked waiter: what its hand-over needs. */
export interface SlotWaiter {
  holder: string;
  /** Sorts like arrival: the job's registration time, then job id and part. */
  order: string;
  executionArn: string;
  taskToken: string;
  since: string;
}

/**
 * Wakes a waiter that was given a slot (SendTaskSuccess of its token).
 * 'gone' when the token no longer exists (the execution was stopped or timed out).
 */
export type WakeWaiter = (waiter: SlotWaiter) => Promise<'sent' | 'gone'>;

/** Row id of a waiter's task token. */
export function waiterRowId(holder: string): string {
  return `#wait#${holder}`;
}

/** Order key of a part: the job's arrival, then its id and the part index (zero padded). */
export function waiterOrder(createdAt: string, jobId: string, partIndex: number): string {
  return `${createdAt}#${jobId}#${String(partIndex).padStart(4, '0')}`;
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
    /** How a waiter is woken; without it nobody can wait (acquire only). */
    private readonly wake?: WakeWaiter,
    /** How long a reserved place without a token holds up the queue behind it. */
    private readonly reservationHoldMs = DEFAULT_RESERVATION_HOLD_MS,
  ) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`ConcurrencySlots max must be a whole number >= 1, got ${max}.`);
  }

  /**
   * Takes a slot for `holder` if one is free. `acquired: true` also when the
   * holder already had one. `inUse` is the number of slots taken afterwards.
   */
  async acquire(holder: string, executionArn: string): Promise<{ acquired: boolean; inUse: number }> {
    const now = this.clock().toISOString();
    // Optimistic: the condition is judged on the row as the update finds it. When it fails but
    // the row read afterwards would let this holder in (the row was created, or a slot freed, in
    // between: parallel first acquires on a new table), try again rather than report no slot.
    for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
      try {
        const { Attributes } = await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'SET holders.#holder = if_not_exists(holders.#holder, :entry), updatedAt = :now',
            // Nobody jumps the queue: a free slot goes to the oldest waiter (pump), not to a newcomer.
            ConditionExpression:
              'attribute_exists(holders) AND (attribute_exists(holders.#holder) OR ' +
              '(size(holders) < :max AND (attribute_not_exists(waiters) OR size(waiters) = :zero)))',
            ExpressionAttributeNames: { '#holder': holder },
            ExpressionAttributeValues: { ':entry': { executionArn, since: now }, ':max': this.max, ':now': now, ':zero': 0 },
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
        if (holder in row.holders) return { acquired: true, inUse };
        const queueEmpty = Object.keys(row.waiters ?? {}).length === 0;
        if (inUse >= this.max || !queueEmpty) return { acquired: false, inUse };
      }
    }
    throw new Error(`The concurrency slots row kept changing under ${ACQUIRE_ATTEMPTS} attempts to take a slot; try again.`);
  }

  /** Frees the holder's slot (nothing happens when it has none) and hands free slots to the oldest waiters. */
  async release(holder: string): Promise<void> {
    await this.removeHolders([holder]);
    await this.pump();
  }

  /** Frees every slot of a job (all its parts), gives up its places in the queue, and hands the slots on. */
  async releaseJob(jobId: string): Promise<void> {
    const row = await this.read();
    const ofJob = (h: string) => h === jobId || h.startsWith(`${jobId}#`);
    const waiting = Object.keys(row?.waiters ?? {}).filter(ofJob);
    for (const holder of waiting) await this.leave(holder);
    await this.removeHolders(Object.keys(row?.holders ?? {}).filter(ofJob));
    await this.pump();
  }

  /**
   * Takes a place in the queue for `holder` at its arrival, before it can
   * wait (no token yet). Its later `enqueue` keeps this place (the order key of
   * the first join stays). Idempotent; a holder that already has a slot or a
   * parked token is left as it is.
   */
  async reserve(place: SlotReservation): Promise<void> {
    if (!this.wake) return; // nobody can wait here, so there is no queue to keep a place in
    const now = this.clock().toISOString();
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { jobId: waiterRowId(place.holder), ...place, since: now },
          // A token parked by a later step of the same job stays.
          ConditionExpression: 'attribute_not_exists(taskToken)',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return;
    }
    await this.join(place.holder, place.order, now);
  }

  /**
   * Takes a slot for `holder` or joins the queue with its task token. Returns
   * 'acquired' when it holds a slot now (its token has then been woken too, or
   * is woken by whoever granted it), 'waiting' when it sleeps until a release
   * hands it one. Idempotent: a retried call finds its place or its slot.
   */
  async enqueue(waiter: Omit<SlotWaiter, 'since'>): Promise<'acquired' | 'waiting'> {
    if (!this.wake) throw new Error('ConcurrencySlots: waiting needs a way to wake waiters (SendTaskSuccess).');
    const now = this.clock().toISOString();
    // The token first: whoever grants the slot must find it.
    await this.doc.send(
      new PutCommand({ TableName: this.tableName, Item: { jobId: waiterRowId(waiter.holder), ...waiter, since: now } }),
    );
    if ((await this.join(waiter.holder, waiter.order, now)) === 'holder') {
      // Already a holder: wake our own token (the grant may have raced us) and go on.
      await this.wakeHolder(waiter.holder);
      return 'acquired';
    }
    // A slot may have been freed between our failed acquire and joining the queue,
    // or our reserved place was the head that held the queue up.
    const granted = await this.pump();
    return granted.includes(waiter.holder) ? 'acquired' : 'waiting';
  }

  /** Adds `holder` to `waiters` unless it is there (its first order key stays) or already holds a slot. */
  private async join(holder: string, order: string, now: string): Promise<'joined' | 'holder'> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'SET waiters = if_not_exists(waiters, :empty), updatedAt = :now',
            ConditionExpression: 'attribute_exists(holders)',
            ExpressionAttributeValues: { ':empty': {}, ':now': now },
          }),
        );
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'SET waiters.#holder = if_not_exists(waiters.#holder, :order), updatedAt = :now',
            // A holder that already has its slot (a retry after the grant) does not queue again.
            ConditionExpression: 'attribute_not_exists(holders.#holder)',
            ExpressionAttributeNames: { '#holder': holder },
            ExpressionAttributeValues: { ':order': order, ':now': now },
          }),
        );
        return 'joined';
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        if (!(await this.read())) {
          await this.createRow(now);
          continue;
        }
        return 'holder';
      }
    }
    throw new Error('The concurrency slots row could not be created; check the ledger table.');
  }

  /** Wakes a token whose holder took its slot on the fast path (no queue row needed). */
  async wakeOwn(waiter: SlotWaiter): Promise<void> {
    if (!this.wake) throw new Error('ConcurrencySlots: waiting needs a way to wake waiters (SendTaskSuccess).');
    if ((await this.wake(waiter)) === 'gone') await this.release(waiter.holder);
  }

  /** Gives up a place in the queue (the job was stopped, failed or cancelled). */
  async leave(holder: string): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { jobId: SLOTS_ROW_ID },
          UpdateExpression: 'REMOVE waiters.#holder SET updatedAt = :now',
          ConditionExpression: 'attribute_exists(waiters.#holder)',
          ExpressionAttributeNames: { '#holder': holder },
          ExpressionAttributeValues: { ':now': this.clock().toISOString() },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: { jobId: waiterRowId(holder) } }));
  }

  /** Waiters, oldest first. */
  async waiters(): Promise<{ holder: string; order: string }[]> {
    const row = await this.read();
    return Object.entries(row?.waiters ?? {})
      .map(([holder, order]) => ({ holder, order }))
      .sort((a, b) => a.order.localeCompare(b.order) || a.holder.localeCompare(b.holder));
  }

  /**
   * Hands every free slot to the oldest waiters, one conditional write each
   * (`size(holders) < max`, so concurrent pumps never overshoot; the loser of a
   * race for the same waiter reads again). A woken waiter whose token is gone
   * gives the slot back at once. Returns the holders granted by this call.
   */
  async pump(): Promise<string[]> {
    if (!this.wake) return [];
    const granted: string[] = [];
    for (let round = 0; round < 10_000; round++) {
      const row = await this.read();
      if (!row) return granted;
      const free = this.max - Object.keys(row.holders).length;
      const queue = Object.entries(row.waiters ?? {}).sort(([ha, a], [hb, b]) => a.localeCompare(b) || ha.localeCompare(hb));
      if (free <= 0 || queue.length === 0) return granted;
      // The oldest place that can be served: a parked token. A fresh reservation
      // (its job is still planning) holds up everyone behind it; a stale one does not.
      let next: { holder: string; token: SlotWaiter } | undefined;
      let voided = false;
      for (const [candidate] of queue) {
        const place = await this.readPlace(candidate);
        if (!place) {
          // Nobody could be woken: the place is void (a waiter that left half way).
          await this.leave(candidate);
          voided = true;
          break;
        }
        if ('taskToken' in place) {
          next = { holder: candidate, token: place };
          break;
        }
        // Its job is still planning: nobody behind it goes first.
        if (this.clock().getTime() - Date.parse(place.since) < this.reservationHoldMs) return granted;
      }
      if (voided) continue;
      if (!next) return granted; // only stale reservations wait
      const { holder, token } = next;
      const now = this.clock().toISOString();
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'REMOVE waiters.#holder SET holders.#holder = :entry, updatedAt = :now',
            ConditionExpression: 'attribute_exists(waiters.#holder) AND attribute_not_exists(holders.#holder) AND size(holders) < :max',
            ExpressionAttributeNames: { '#holder': holder },
            ExpressionAttributeValues: {
              ':entry': { executionArn: token.executionArn, since: now },
              ':max': this.max,
              ':now': now,
            },
          }),
        );
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        continue; // someone else moved the queue: look again
      }
      granted.push(holder);
      if ((await this.wakeHolder(holder, token)) === 'gone') {
        // Its execution is gone: the slot goes straight back (to the next waiter, next round).
        await this.removeHolders([holder]);
        granted.pop();
      }
    }
    return granted;
  }

  /**
   * Re-sends the grant of holders whose token row is still there (a hand-over
   * that failed half way) and gives up the places of waiters whose execution is
   * gone; then pumps. The reconciler's safety net.
   */
  async repairQueue(isExecutionAlive: (executionArn: string) => Promise<boolean>, olderThanMs = 10_000): Promise<{ rewoken: string[]; dropped: string[] }> {
    const row = await this.read();
    const rewoken: string[] = [];
    const dropped: string[] = [];
    const now = this.clock().getTime();
    for (const holder of Object.keys(row?.holders ?? {})) {
      const token = await this.readToken(holder);
      if (!token || now - Date.parse(token.since) < olderThanMs) continue;
      const outcome = await this.wakeHolder(holder, token);
      if (outcome === 'gone') await this.removeHolders([holder]);
      rewoken.push(holder);
    }
    for (const holder of Object.keys(row?.waiters ?? {})) {
      // A parked token or a reservation: both name the execution.
      const place = await this.readPlace(holder);
      if (place && (await isExecutionAlive(place.executionArn))) continue;
      await this.leave(holder);
      dropped.push(holder);
    }
    await this.pump();
    return { rewoken, dropped };
  }

  /** Wakes a holder's parked token, if one is parked, and deletes it once delivered (or gone). */
  private async wakeHolder(holder: string, known?: SlotWaiter): Promise<'sent' | 'gone' | 'none'> {
    const token = known ?? (await this.readToken(holder));
    if (!token || !this.wake) return 'none';
    const outcome = await this.wake(token);
    await this.doc.send(
      new DeleteCommand({
        TableName: this.tableName,
        Key: { jobId: waiterRowId(holder) },
        // A newer parking of the same holder (a retried task) keeps its row.
        ConditionExpression: 'attribute_not_exists(taskToken) OR taskToken = :token',
        ExpressionAttributeValues: { ':token': token.taskToken },
      }),
    ).catch((error: unknown) => {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    });
    return outcome;
  }

  /** A place's row: a parked token, a reservation (no token yet), or nothing. */
  private async readPlace(holder: string): Promise<SlotWaiter | (SlotReservation & { since: string }) | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { jobId: waiterRowId(holder) }, ConsistentRead: true }),
    );
    if (!Item || typeof Item.executionArn !== 'string') return undefined;
    if (typeof Item.taskToken === 'string') return Item as unknown as SlotWaiter;
    return { holder, order: String(Item.order ?? ''), executionArn: Item.executionArn, since: String(Item.since ?? '') };
  }

  private async readToken(holder: string): Promise<SlotWaiter | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { jobId: waiterRowId(holder) }, ConsistentRead: true }),
    );
    return Item && typeof Item.taskToken === 'string' ? (Item as unknown as SlotWaiter) : undefined;
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
    if (freed.length > 0) await this.pump();
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
