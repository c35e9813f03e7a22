/**
 * Concurrency slots: at most `max` Mapflow processings of this bridge run at
 * once (Mapflow accounts limit parallel processings; beyond them work queues or
 * fails). The slots are one ledger row, `jobId = '#slots'`, whose map `holders`
 * has one entry per running part, and whose number `waiting` counts the queue:
 *
 *   holders: { "<jobId>#<partIndex>": { executionArn, since } }, waiting: 3
 *
 * A holder is added only under the condition `size(holders) < max`, evaluated
 * by DynamoDB atomically, so concurrent acquires can never overshoot. Acquire
 * is idempotent for a holder that already has a slot (a retried task), release
 * is idempotent, and `reclaim` frees slots whose execution has died (the
 * reconciler) so a crash can never leak capacity forever.
 *
 * Admission is first come, first served and free while waiting (see
 * docs/architecture.md, "Admission"). Each place in the queue is a row of its
 * own, `#wait#<holder>`: its order key (`slotOrder`, the job's arrival), its
 * execution and, once the part waits, its Step Functions task token. While it
 * is queued it carries `slotQueue`, which puts it in the sparse GSI
 * `bySlotQueue`, sorted by arrival. Joining and leaving the queue are
 * transactions that also move `waiting`, so the `#slots` row stays a few
 * hundred bytes however long the queue is (a queue inside that row was
 * rewritten, and billed by its size, on every move, and would hit DynamoDB's
 * 400 KB item limit at a few thousand waiters).
 *
 * A part that finds no free slot parks its token and joins, then its execution
 * sleeps on `.waitForTaskToken`: no polling. Every release `pump`s: it reads the
 * oldest places from the index, checks each against its row (a consistent
 * read: the index lags the table), and moves the oldest waiting token into
 * `holders` in one transaction (`size(holders) < max`, so concurrent pumps
 * never overshoot), then hands it its token's success. The fast path `acquire`
 * refuses while `waiting > 0`, so nobody jumps the queue. A token that is gone
 * (its execution was stopped) frees the slot again and the next waiter gets
 * it; a token row left behind (a lost hand-over) is re-sent by the reconciler.
 *
 * A job takes its place in the queue when it arrives (`reserve`, at Register
 * Job), before it has a token: its row then has no token yet. The pump does
 * not hand a slot past such a place while it is fresh (the job is still in
 * Plan Processing, a short step): it waits for the job's token, so a job still
 * planning is never overtaken. A place older than `reservationHoldMs` (its job
 * is stuck or gone) no longer holds the others up; it keeps its place until
 * the reconciler drops it.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { GSI_BY_SLOT_QUEUE, SLOT_ORDER_ATTRIBUTE, SLOT_QUEUE_ATTRIBUTE, SLOTS_ROW_ID } from './schema.ts';
import { LedgerContention } from '../core/errors.ts';

export interface SlotHolder {
  holder: string;
  executionArn: string;
  since: string;
}

interface SlotsRow {
  jobId: typeof SLOTS_ROW_ID;
  holders: Record<string, { executionArn: string; since: string }>;
  /** How many places are queued (rows with `slotQueue`). */
  waiting?: number;
  updatedAt?: string;
}

/** Attempts of acquire() while the row it reads back shows a free slot it could not take. */
const ACQUIRE_ATTEMPTS = 8;

/** Attempts of a write that meets a transaction in flight on the same row (TransactionConflict). */
const CONFLICT_ATTEMPTS = 12;

/**
 * Pauses of a pump that is told someone waits but finds nobody in the index:
 * a place that joined a moment ago and is not in the eventually consistent
 * GSI yet (AWS: usually well under a second). About 1.5 s in all.
 */
const INDEX_LAG_PAUSES_MS = [50, 100, 200, 400, 800];

/** Places read from the index per page while walking the queue. */
const QUEUE_PAGE = 10;

/** The `slotQueue` value of a queued place: one queue per ledger table. */
const QUEUED = 'queued';

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

/** A place's row as read back: a parked token or a reservation, queued or not. */
type Place = (SlotWaiter | (SlotReservation & { since: string })) & { queued: boolean };

/**
 * Wakes a waiter that was given a slot (SendTaskSuccess of its token).
 * 'gone' when the token no longer exists (the execution was stopped or timed out).
 */
export type WakeWaiter = (waiter: SlotWaiter) => Promise<'sent' | 'gone'>;

const WAITER_ROW_PREFIX = '#wait#';
/** Quiet time on `#slots` before its count of waiters is checked against the queue (a GSI lags its table by well under a second). */
export const RECOUNT_QUIET_MS = 5 * 60_000;

/** Row id of a place in the queue (and of its task token). */
export function waiterRowId(holder: string): string {
  return `${WAITER_ROW_PREFIX}${holder}`;
}

/** Order key of a part: the job's arrival, then its id and the part index (zero padded). */
export function waiterOrder(createdAt: string, jobId: string, partIndex: number): string {
  return `${createdAt}#${jobId}#${String(partIndex).padStart(4, '0')}`;
}

/** The holder name of a job's part. */
export function slotHolder(jobId: string, partIndex: number): string {
  return `${jobId}#${partIndex}`;
}

const errorName = (error: unknown): string | undefined => (error as { name?: string } | null)?.name;
const cancellationCodes = (error: unknown): (string | undefined)[] =>
  ((error as { CancellationReasons?: { Code?: string }[] } | null)?.CancellationReasons ?? []).map((r) => r.Code);

/**
 * Cancellation reasons that say "not now" rather than "no": the same
 * transaction may succeed again. (DynamoDB returns the reasons, one per item,
 * in every SDK's response body; the API reference's "only Java" note is stale:
 * aws/aws-sdk-js-v3#3635.)
 */
const PASSING_CANCELLATIONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded']);

/**
 * A write refused only because a transaction on the same item was in flight,
 * or a transaction cancelled by a conflict or throttling of one of its items
 * (the SDK retries neither): try again.
 */
function isTransactionConflict(error: unknown): boolean {
  if (errorName(error) === 'TransactionConflictException') return true;
  if (errorName(error) !== 'TransactionCanceledException') return false;
  const codes = cancellationCodes(error);
  return codes.some((code) => code !== undefined && PASSING_CANCELLATIONS.has(code)) && codes.every((code) => code === 'None' || code === undefined || PASSING_CANCELLATIONS.has(code));
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
        const { Attributes } = (await this.write(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'SET holders.#holder = if_not_exists(holders.#holder, :entry), updatedAt = :now',
            // Nobody jumps the queue: a free slot goes to the oldest waiter (pump), not to a newcomer.
            ConditionExpression:
              'attribute_exists(holders) AND (attribute_exists(holders.#holder) OR ' +
              '(size(holders) < :max AND (attribute_not_exists(waiting) OR waiting <= :zero)))',
            ExpressionAttributeNames: { '#holder': holder },
            ExpressionAttributeValues: { ':entry': { executionArn, since: now }, ':max': this.max, ':now': now, ':zero': 0 },
            ReturnValues: 'ALL_NEW',
          }),
        )) as { Attributes?: Record<string, unknown> };
        return { acquired: true, inUse: Object.keys((Attributes as unknown as SlotsRow).holders).length };
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
        if (inUse >= this.max || (row.waiting ?? 0) > 0) return { acquired: false, inUse };
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
    const ofJob = (h: string) => h === jobId || h.startsWith(`${jobId}#`);
    for (const { holder } of await this.queuedPlaces(jobId)) if (ofJob(holder)) await this.leave(holder);
    const row = await this.read();
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
      await this.write(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { jobId: waiterRowId(place.holder) },
          UpdateExpression: 'SET holder = :holder, executionArn = :arn, since = :now, #order = if_not_exists(#order, :order)',
          // A token parked by a later step of the same job stays.
          ConditionExpression: 'attribute_not_exists(taskToken)',
          ExpressionAttributeNames: { '#order': SLOT_ORDER_ATTRIBUTE },
          ExpressionAttributeValues: { ':holder': place.holder, ':arn': place.executionArn, ':now': now, ':order': place.order },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return;
    }
    if ((await this.join(place.holder, now)) === 'holder') {
      // A retried registration of a job that already runs: no place to keep.
      await this.deleteRow(waiterRowId(place.holder), 'attribute_not_exists(taskToken) AND attribute_not_exists(#queue)');
    }
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
    // The token first: whoever grants the slot must find it. A reserved place keeps its order.
    const { Attributes: before } = (await this.write(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { jobId: waiterRowId(waiter.holder) },
        UpdateExpression:
          'SET holder = :holder, executionArn = :arn, taskToken = :token, since = :now, #order = if_not_exists(#order, :order)',
        ExpressionAttributeNames: { '#order': SLOT_ORDER_ATTRIBUTE },
        ExpressionAttributeValues: {
          ':holder': waiter.holder,
          ':arn': waiter.executionArn,
          ':token': waiter.taskToken,
          ':now': now,
          ':order': waiter.order,
        },
        ReturnValues: 'ALL_OLD',
      }),
    )) as { Attributes?: Record<string, unknown> };
    // A place reserved at arrival is queued already (no second join); otherwise join now.
    const queued = before?.[SLOT_QUEUE_ATTRIBUTE] === QUEUED;
    if (!queued && (await this.join(waiter.holder, now)) === 'holder') {
      // Already a holder: wake our own token (the grant may have raced us) and go on.
      await this.wakeHolder(waiter.holder);
      return 'acquired';
    }
    // A slot may have been freed between our failed acquire and joining the queue,
    // or our reserved place was the head that held the queue up.
    const granted = await this.pump();
    return granted.includes(waiter.holder) ? 'acquired' : 'waiting';
  }

  /**
   * Queues the place of `holder` (its row must exist): marks it `slotQueue` and
   * counts it in `waiting`, both in one transaction, unless it is queued already
   * or the holder already has its slot (a retry after the grant).
   */
  private async join(holder: string, now: string): Promise<'joined' | 'holder'> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const refused = await this.transact([
        {
          Update: {
            TableName: this.tableName,
            Key: { jobId: waiterRowId(holder) },
            UpdateExpression: 'SET #queue = :queue',
            ConditionExpression: 'attribute_exists(#order) AND attribute_not_exists(#queue)',
            ExpressionAttributeNames: { '#queue': SLOT_QUEUE_ATTRIBUTE, '#order': SLOT_ORDER_ATTRIBUTE },
            ExpressionAttributeValues: { ':queue': QUEUED },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'ADD waiting :one SET updatedAt = :now',
            ConditionExpression: 'attribute_exists(holders) AND attribute_not_exists(holders.#holder)',
            ExpressionAttributeNames: { '#holder': holder },
            ExpressionAttributeValues: { ':one': 1, ':now': now },
          },
        },
      ]);
      if (!refused) return 'joined';
      if (refused[1]) {
        const row = await this.read();
        if (!row) {
          await this.createRow(now);
          continue;
        }
        if (holder in row.holders) return 'holder';
      }
      // Queued already (a retry), or the place was given up meanwhile: nothing to do.
      return 'joined';
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
    const refused = await this.transact([
      {
        Delete: {
          TableName: this.tableName,
          Key: { jobId: waiterRowId(holder) },
          ConditionExpression: 'attribute_exists(#queue)',
          ExpressionAttributeNames: { '#queue': SLOT_QUEUE_ATTRIBUTE },
        },
      },
      {
        Update: {
          TableName: this.tableName,
          Key: { jobId: SLOTS_ROW_ID },
          UpdateExpression: 'ADD waiting :minusOne SET updatedAt = :now',
          ConditionExpression: 'attribute_exists(holders)',
          ExpressionAttributeValues: { ':minusOne': -1, ':now': this.clock().toISOString() },
        },
      },
    ]);
    // Not queued (granted, never joined, or gone): only its row, if any, goes.
    if (refused) await this.deleteRow(waiterRowId(holder));
  }

  /** Waiters, oldest first (from the index: on AWS it may lag a write by a moment). */
  async waiters(): Promise<{ holder: string; order: string }[]> {
    return this.queuedPlaces();
  }

  /**
   * Hands every free slot to the oldest waiters, one transaction each
   * (`size(holders) < max`, so concurrent pumps never overshoot; the loser of a
   * race for the same waiter reads again). A woken waiter whose token is gone
   * gives the slot back at once. Returns the holders granted by this call.
   */
  async pump(): Promise<string[]> {
    if (!this.wake) return [];
    const granted: string[] = [];
    let lagPauses = 0;
    for (let round = 0; round < 10_000; round++) {
      const row = await this.read();
      if (!row) return granted;
      const free = this.max - Object.keys(row.holders).length;
      if (free <= 0 || (row.waiting ?? 0) <= 0) return granted;
      const next = await this.nextToServe();
      if (next === 'held' || next === 'stale') return granted; // a job still planning goes first / only stale places wait
      if (next === 'none') {
        // `waiting` counts a place the index does not show yet: give the index a moment.
        const wait = INDEX_LAG_PAUSES_MS[lagPauses++];
        if (wait === undefined) return granted; // the reconciler's pump serves it later
        await pause(wait);
        continue;
      }
      const now = this.clock().toISOString();
      const refused = await this.transact([
        {
          Update: {
            TableName: this.tableName,
            Key: { jobId: waiterRowId(next.holder) },
            UpdateExpression: 'REMOVE #queue',
            ConditionExpression: '#queue = :queue AND taskToken = :token',
            ExpressionAttributeNames: { '#queue': SLOT_QUEUE_ATTRIBUTE },
            ExpressionAttributeValues: { ':queue': QUEUED, ':token': next.taskToken },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: { jobId: SLOTS_ROW_ID },
            UpdateExpression: 'SET holders.#holder = :entry, updatedAt = :now ADD waiting :minusOne',
            ConditionExpression: 'attribute_not_exists(holders.#holder) AND size(holders) < :max',
            ExpressionAttributeNames: { '#holder': next.holder },
            ExpressionAttributeValues: {
              ':entry': { executionArn: next.executionArn, since: now },
              ':max': this.max,
              ':now': now,
              ':minusOne': -1,
            },
          },
        },
      ]);
      if (refused) continue; // someone else moved the queue: look again
      granted.push(next.holder);
      if ((await this.wakeHolder(next.holder, next)) === 'gone') {
        // Its execution is gone: the slot goes straight back (to the next waiter, next round).
        await this.removeHolders([next.holder]);
        granted.pop();
      }
    }
    return granted;
  }

  /**
   * The oldest queued place that can be served now: a parked token. 'held'
   * when a fresh reservation (its job is still planning) comes first, 'stale'
   * when only stale reservations wait, 'none' when the index shows nobody.
   */
  private async nextToServe(): Promise<SlotWaiter | 'held' | 'stale' | 'none'> {
    let sawPlace = false;
    for await (const { holder } of this.walkQueue()) {
      const place = await this.readPlace(holder);
      if (!place?.queued) continue; // the index lags: granted or given up meanwhile
      sawPlace = true;
      if ('taskToken' in place) return place;
      // Its job is still planning: nobody behind it goes first.
      if (this.clock().getTime() - Date.parse(place.since) < this.reservationHoldMs) return 'held';
    }
    return sawPlace ? 'stale' : 'none';
  }

  /**
   * Re-sends the grant of holders whose token row is still there (a hand-over
   * that failed half way) and gives up the places of waiters whose execution is
   * gone; then pumps. The reconciler's safety net.
   */
  async repairQueue(
    isExecutionAlive: (executionArn: string) => Promise<boolean>,
    olderThanMs = 10_000,
  ): Promise<{ rewoken: string[]; dropped: string[]; recounted?: { from: number; to: number } }> {
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
    // The same walk counts the queue for recountWaiting.
    const walkedAt = this.clock().getTime();
    let queued = 0;
    for (const { holder } of await this.queuedPlaces()) {
      // A parked token or a reservation: both name the execution.
      const place = await this.readPlace(holder);
      if (!place?.queued) continue;
      queued++;
      if (await isExecutionAlive(place.executionArn)) continue;
      await this.leave(holder);
      dropped.push(holder);
    }
    const recounted = await this.recountWaiting(queued, walkedAt);
    await this.pump();
    return { rewoken, dropped, ...(recounted && { recounted }) };
  }

  /**
   * Puts `waiting` right when it no longer matches the queue (a place row
   * deleted by hand, or an item restored from a backup). Too high, it sends
   * every new part through the queue and makes each pump look for a waiter
   * that is not there; too low, it lets a new part take a free slot ahead of
   * the queue. `queued` is what a walk of the queue begun at `walkedAt`
   * counted; it is believed only if `#slots` had no admission write (every
   * join, grant and leave writes it) from RECOUNT_QUIET_MS before the walk
   * until now, so the index showed every place and none came or went during
   * the walk; and it is written only if `#slots` is still unchanged.
   */
  private async recountWaiting(queued: number, walkedAt: number): Promise<{ from: number; to: number } | undefined> {
    const row = await this.read();
    if (!row?.updatedAt || Date.parse(row.updatedAt) > walkedAt - RECOUNT_QUIET_MS) return undefined;
    const counted = row.waiting ?? 0;
    if (queued === counted) return undefined;
    try {
      await this.write(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { jobId: SLOTS_ROW_ID },
          UpdateExpression: 'SET waiting = :queued, updatedAt = :now',
          ConditionExpression: 'updatedAt = :seen AND (waiting = :counted OR attribute_not_exists(waiting))',
          ExpressionAttributeValues: { ':queued': queued, ':now': this.clock().toISOString(), ':seen': row.updatedAt, ':counted': counted },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined; // admission moved meanwhile: the next run looks again
      throw error;
    }
    return { from: counted, to: queued };
  }

  /** Wakes a holder's parked token, if one is parked, and deletes it once delivered (or gone). */
  private async wakeHolder(holder: string, known?: SlotWaiter): Promise<'sent' | 'gone' | 'none'> {
    const token = known ?? (await this.readToken(holder));
    if (!token || !this.wake) return 'none';
    const outcome = await this.wake(token);
    // A newer parking of the same holder (a retried task) keeps its row.
    await this.deleteRow(waiterRowId(holder), 'attribute_not_exists(#queue) AND (attribute_not_exists(taskToken) OR taskToken = :token)', {
      ':token': token.taskToken,
    });
    return outcome;
  }

  /** Queued places in order of arrival, from the index; only those of `jobId` when given. */
  private async queuedPlaces(jobId?: string): Promise<{ holder: string; order: string }[]> {
    const places: { holder: string; order: string }[] = [];
    for await (const place of this.walkQueue(jobId)) places.push(place);
    return places;
  }

  /** Walks the index `bySlotQueue`, oldest first, a page at a time (it lags the table by a moment on AWS). */
  private async *walkQueue(jobId?: string): AsyncGenerator<{ holder: string; order: string }> {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: GSI_BY_SLOT_QUEUE,
          KeyConditionExpression: '#queue = :queue',
          ...(jobId === undefined
            ? {}
            : { FilterExpression: 'jobId = :exact OR begins_with(jobId, :prefix)' }),
          ExpressionAttributeNames: { '#queue': SLOT_QUEUE_ATTRIBUTE },
          ExpressionAttributeValues: {
            ':queue': QUEUED,
            ...(jobId === undefined ? {} : { ':exact': waiterRowId(jobId), ':prefix': waiterRowId(`${jobId}#`) }),
          },
          ...(jobId === undefined ? { Limit: QUEUE_PAGE } : {}),
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        const id = String(item.jobId ?? '');
        if (id.startsWith(WAITER_ROW_PREFIX)) yield { holder: id.slice(WAITER_ROW_PREFIX.length), order: String(item[SLOT_ORDER_ATTRIBUTE] ?? '') };
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }

  /** A place's row (a consistent read): a parked token, a reservation (no token yet), or nothing. */
  private async readPlace(holder: string): Promise<Place | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { jobId: waiterRowId(holder) }, ConsistentRead: true }),
    );
    if (!Item || typeof Item.executionArn !== 'string') return undefined;
    const common = {
      holder,
      order: String(Item[SLOT_ORDER_ATTRIBUTE] ?? ''),
      executionArn: Item.executionArn,
      since: String(Item.since ?? ''),
      queued: Item[SLOT_QUEUE_ATTRIBUTE] === QUEUED,
    };
    return typeof Item.taskToken === 'string' ? { ...common, taskToken: Item.taskToken } : common;
  }

  private async readToken(holder: string): Promise<SlotWaiter | undefined> {
    const place = await this.readPlace(holder);
    return place && 'taskToken' in place ? place : undefined;
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
        await this.write(
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
      await this.write(
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

  /** Deletes a row, under a condition when given (a failed condition leaves it, quietly). */
  private async deleteRow(jobId: string, condition?: string, values?: Record<string, unknown>): Promise<void> {
    try {
      await this.write(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { jobId },
          ...(condition
            ? {
                ConditionExpression: condition,
                ...(condition.includes('#queue') ? { ExpressionAttributeNames: { '#queue': SLOT_QUEUE_ATTRIBUTE } } : {}),
                ...(values ? { ExpressionAttributeValues: values } : {}),
              }
            : {}),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /**
   * Writes items in one transaction. Returns undefined when written, or, when
   * a condition refused it, which items were refused (by position).
   */
  private async transact(items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>): Promise<boolean[] | undefined> {
    try {
      await this.write(new TransactWriteCommand({ TransactItems: items }));
      return undefined;
    } catch (error) {
      if (errorName(error) !== 'TransactionCanceledException') throw error;
      const codes = cancellationCodes(error);
      if (!codes.includes('ConditionalCheckFailed')) throw error;
      return items.map((_, i) => codes[i] === 'ConditionalCheckFailed');
    }
  }

  /** Sends a write; while a transaction on the same row is in flight (a hot `#slots`), again after a short random pause. */
  private async write(command: UpdateCommand | PutCommand | DeleteCommand | TransactWriteCommand): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.doc.send(command as UpdateCommand);
      } catch (error) {
        if (!isTransactionConflict(error)) throw error;
        if (attempt >= CONFLICT_ATTEMPTS) {
          throw new LedgerContention(`the concurrency slots row met a transaction in flight ${CONFLICT_ATTEMPTS} times in a row; the step is tried again`, { cause: error });
        }
        await pause(Math.random() * 10 * 2 ** Math.min(attempt, 6));
      }
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
      await this.write(
        new PutCommand({
          TableName: this.tableName,
          Item: { jobId: SLOTS_ROW_ID, holders: {}, waiting: 0, updatedAt: now },
          ConditionExpression: 'attribute_not_exists(holders)',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error; // another acquire created it
    }
  }
}
