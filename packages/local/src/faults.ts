/**
 * Fault injection in local mode (`--inject-faults`, MAPFLOW_BRIDGE_INJECT_FAULTS):
 * what AWS does now and then, at chosen rates, so the bridge's handling of it
 * runs on one machine. Off by default.
 *
 *   dynamodb-conflict=R   the DynamoDB gate answers R of TransactWriteItems
 *                         with TransactionCanceledException, one item's
 *                         reason TransactionConflict, without forwarding it
 *   gsi-lag=R             R of the Query and Scan requests on a global
 *                         secondary index answer as an index that has not
 *                         caught up: items written less than gsi-lag-ms ago
 *                         are left out ("not yet indexed")
 *   gsi-lag-ms=N          that window, ms (default 500; AWS: "within 1 second")
 *   duplicate-delivery=R  R of the S3 notifications reach dispatch twice: a
 *                         second SQS message with the same body, received in
 *                         a batch of its own beside the first
 *   lambda-throttle=R     R of the Task states' Lambda invocations are refused
 *                         with Lambda.TooManyRequestsException before the
 *                         function runs (the state's Retry decides)
 *   seed=N                the pseudo-random draws (default: a random seed, printed)
 *
 * e.g. `dynamodb-conflict=0.2,gsi-lag=0.3,duplicate-delivery=0.3,seed=42`.
 * Each kind draws from a stream of its own, so the same seed gives the same
 * draws in the order requests arrive; which request meets which draw still
 * follows the run's timing.
 */
import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { seededRandom } from '@mapflow-bridge/simulator/random';

/** The variable that sets --inject-faults when the option is not given. */
export const INJECT_FAULTS_ENV = 'MAPFLOW_BRIDGE_INJECT_FAULTS';

/** The default window of gsi-lag: writes younger than this are not in the index yet. */
export const DEFAULT_GSI_LAG_MS = 500;

export type FaultKind = 'dynamodbConflict' | 'gsiLag' | 'duplicateDelivery' | 'lambdaThrottle';

export interface FaultSettings {
  /** Rates from 0 to 1. */
  dynamodbConflict: number;
  gsiLag: number;
  duplicateDelivery: number;
  lambdaThrottle: number;
  gsiLagMs: number;
  seed: number;
}

/** Thrown for a fault specification the bridge does not understand. */
export class FaultSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FaultSpecError';
  }
}

const RATE_KEYS: Record<string, FaultKind> = {
  'dynamodb-conflict': 'dynamodbConflict',
  'gsi-lag': 'gsiLag',
  'duplicate-delivery': 'duplicateDelivery',
  'lambda-throttle': 'lambdaThrottle',
};
const KEYS = [...Object.keys(RATE_KEYS), 'gsi-lag-ms', 'seed'];

/** `key=value,...` read and checked (`name` in the messages: the option or the variable); an unknown key, a rate outside 0..1 or a bad number is refused. */
export function parseFaults(text: string, name = '--inject-faults', randomSeed: () => number = () => Math.floor(Math.random() * 1_000_000)): FaultSettings {
  const settings: Partial<FaultSettings> = {};
  const pairs = text.split(',').map((pair) => pair.trim()).filter(Boolean);
  if (pairs.length === 0) throw new FaultSpecError(`${name} is empty: give e.g. dynamodb-conflict=0.2,gsi-lag=0.3,duplicate-delivery=0.3,seed=42`);
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const key = at < 0 ? pair : pair.slice(0, at).trim();
    const value = at < 0 ? '' : pair.slice(at + 1).trim();
    if (!KEYS.includes(key)) throw new FaultSpecError(`${name}: unknown fault '${key}' (known: ${KEYS.join(', ')})`);
    if (value === '' || !/^\d+(\.\d+)?$/.test(value)) throw new FaultSpecError(`${name}: ${key} needs a number, not '${value}'`);
    const number = Number(value);
    const kind = RATE_KEYS[key];
    if (kind) {
      if (number > 1) throw new FaultSpecError(`${name}: ${key} is a rate from 0 to 1, not '${value}'`);
      settings[kind] = number;
    } else if (!Number.isSafeInteger(number)) {
      throw new FaultSpecError(`${name}: ${key} must be a whole number, not '${value}'`);
    } else if (key === 'seed') {
      settings.seed = number;
    } else {
      settings.gsiLagMs = number;
    }
  }
  return {
    dynamodbConflict: settings.dynamodbConflict ?? 0,
    gsiLag: settings.gsiLag ?? 0,
    duplicateDelivery: settings.duplicateDelivery ?? 0,
    lambdaThrottle: settings.lambdaThrottle ?? 0,
    gsiLagMs: settings.gsiLagMs ?? DEFAULT_GSI_LAG_MS,
    seed: settings.seed ?? randomSeed(),
  };
}

/** The settings written back as the option takes them (printed at start, so a run can be repeated). */
export function formatFaults(settings: FaultSettings): string {
  return `dynamodb-conflict=${settings.dynamodbConflict},gsi-lag=${settings.gsiLag},gsi-lag-ms=${settings.gsiLagMs},duplicate-delivery=${settings.duplicateDelivery},lambda-throttle=${settings.lambdaThrottle},seed=${settings.seed}`;
}

/** Draws faults at their rates, one seeded stream per kind, and counts those injected. */
export class FaultInjector {
  /** Faults injected so far, by kind (a gsi-lag counts when it left at least one item out). */
  readonly injected: Record<FaultKind, number> = { dynamodbConflict: 0, gsiLag: 0, duplicateDelivery: 0, lambdaThrottle: 0 };
  private readonly streams: Record<FaultKind, () => number>;

  constructor(readonly settings: FaultSettings) {
    this.streams = {
      dynamodbConflict: seededRandom(settings.seed),
      gsiLag: seededRandom(settings.seed ^ 0x9e3779b9),
      duplicateDelivery: seededRandom(settings.seed ^ 0x85ebca6b),
      lambdaThrottle: seededRandom(settings.seed ^ 0xc2b2ae35),
    };
  }

  /** Whether this occasion gets the fault (not counted: `count` when it was injected). */
  draw(kind: FaultKind): boolean {
    const rate = this.settings[kind];
    return rate > 0 && this.streams[kind]() < rate;
  }

  count(kind: FaultKind): void {
    this.injected[kind]++;
  }

  /** A draw for picking among n (the item of a transaction that conflicts). */
  pick(n: number): number {
    return Math.floor(this.streams.dynamodbConflict() * n);
  }
}

/** What the DynamoDB gate does with one request (packages/local/src/auth/json-gate-proxy.ts). */
export type JsonGateInterception =
  /** Answered here, not forwarded. */
  | { answer: { status: number; headers: Record<string, string>; body: string } }
  /** Forwarded; the service's answer (its status and whole body) may be replaced. */
  | { onAnswer: (status: number, body: Buffer) => Buffer | undefined };

export type JsonGateInterceptor = (target: string, body: Buffer) => JsonGateInterception | undefined;

type AttributeMap = Record<string, unknown>;

/** The answer DynamoDB gives a TransactWriteItems cancelled by a conflict (wire shape of the JSON 1.0 protocol). */
export function transactionConflictAnswer(items: number, conflicting: number): { status: number; headers: Record<string, string>; body: string } {
  const reasons = Array.from({ length: Math.max(items, 1) }, (_, i) => (i === conflicting ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' } : { Code: 'None' }));
  const body = JSON.stringify({
    __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
    Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
    CancellationReasons: reasons,
  });
  return { status: 400, headers: dynamodbHeaders(body), body };
}

function dynamodbHeaders(body: string | Buffer): Record<string, string> {
  return {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': String(Buffer.byteLength(body)),
    'x-amzn-requestid': randomUUID(),
    'x-amz-crc32': String(crc32(body)),
  };
}

/** The operation of an X-Amz-Target (`DynamoDB_20120810.Query` -> `Query`). */
function operationOf(target: string): string {
  return target.slice(target.lastIndexOf('.') + 1);
}

/**
 * The DynamoDB faults, as the gate applies them. For gsi-lag it keeps, per
 * table, the keys written lately (from successful PutItem, UpdateItem,
 * DeleteItem, BatchWriteItem and TransactWriteItems through the gate) and the
 * table's key attributes (from CreateTable, DescribeTable and every request's
 * `Key`).
 */
export function dynamodbFaults(injector: FaultInjector, now: () => number = Date.now): JsonGateInterceptor {
  const keyNames = new Map<string, string[]>();
  /** table -> canonical key -> when written. */
  const written = new Map<string, Map<string, number>>();
  const learn = (table: string | undefined, names: string[] | undefined) => {
    if (table && names && names.length > 0 && !keyNames.has(table)) keyNames.set(table, [...names].sort());
  };
  const keyOf = (table: string, item: AttributeMap | undefined): string | undefined => {
    const names = keyNames.get(table);
    if (!names || !item || names.some((name) => item[name] === undefined)) return undefined;
    return JSON.stringify(names.map((name) => item[name]));
  };
  const record = (table: string | undefined, item: AttributeMap | undefined) => {
    if (!table) return;
    const key = keyOf(table, item);
    if (key === undefined) return;
    const keys = written.get(table) ?? new Map<string, number>();
    written.set(table, keys);
    keys.delete(key);
    keys.set(key, now());
    // Forget what is older than the window (oldest first: insertion order).
    for (const [old, at] of keys) {
      if (now() - at <= injector.settings.gsiLagMs) break;
      keys.delete(old);
    }
  };
  const recent = (table: string, item: AttributeMap): boolean => {
    const key = keyOf(table, item);
    const at = key === undefined ? undefined : written.get(table)?.get(key);
    return at !== undefined && now() - at < injector.settings.gsiLagMs;
  };
  /** The items a write request touches, by table. */
  const writesOf = (operation: string, request: AttributeMap): [string | undefined, AttributeMap | undefined][] => {
    switch (operation) {
      case 'PutItem':
        return [[request.TableName as string, request.Item as AttributeMap]];
      case 'UpdateItem':
      case 'DeleteItem':
        return [[request.TableName as string, request.Key as AttributeMap]];
      case 'TransactWriteItems':
        return ((request.TransactItems as AttributeMap[] | undefined) ?? []).flatMap((entry) => {
          const put = entry.Put as AttributeMap | undefined;
          const change = (entry.Update ?? entry.Delete) as AttributeMap | undefined;
          if (put) return [[put.TableName as string, put.Item as AttributeMap]] as [string, AttributeMap][];
          if (change) return [[change.TableName as string, change.Key as AttributeMap]] as [string, AttributeMap][];
          return [];
        });
      case 'BatchWriteItem':
        return Object.entries((request.RequestItems as Record<string, AttributeMap[]> | undefined) ?? {}).flatMap(([table, entries]) =>
          entries.map((entry) => [table, ((entry.PutRequest as AttributeMap | undefined)?.Item ?? (entry.DeleteRequest as AttributeMap | undefined)?.Key) as AttributeMap | undefined] as [string, AttributeMap | undefined]),
        );
      default:
        return [];
    }
  };
  const learnFromKeys = (operation: string, request: AttributeMap) => {
    if (operation === 'CreateTable') learn(request.TableName as string, (request.KeySchema as { AttributeName: string }[] | undefined)?.map((k) => k.AttributeName));
    const withKey = [request, ...((request.TransactItems as AttributeMap[] | undefined) ?? []).map((entry) => Object.values(entry)[0] as AttributeMap)];
    for (const part of withKey) if (part?.Key && typeof part.Key === 'object') learn(part.TableName as string, Object.keys(part.Key as AttributeMap));
  };

  return (target, body) => {
    const operation = operationOf(target);
    let request: AttributeMap;
    try {
      request = JSON.parse(body.toString('utf8')) as AttributeMap;
    } catch {
      return undefined; // DynamoDB's own answer to a malformed body
    }
    learnFromKeys(operation, request);
    if (operation === 'TransactWriteItems' && injector.draw('dynamodbConflict')) {
      const items = ((request.TransactItems as unknown[] | undefined) ?? []).length;
      injector.count('dynamodbConflict');
      return { answer: transactionConflictAnswer(items, injector.pick(Math.max(items, 1))) };
    }
    if (operation === 'DescribeTable') {
      return {
        onAnswer: (status, answer) => {
          if (status === 200) {
            const table = (JSON.parse(answer.toString('utf8')) as { Table?: { TableName?: string; KeySchema?: { AttributeName: string }[] } }).Table;
            learn(table?.TableName, table?.KeySchema?.map((k) => k.AttributeName));
          }
          return undefined;
        },
      };
    }
    const writes = writesOf(operation, request);
    if (writes.length > 0) {
      if (injector.settings.gsiLag === 0) return undefined;
      return {
        onAnswer: (status) => {
          if (status === 200) for (const [table, item] of writes) record(table, item);
          return undefined;
        },
      };
    }
    if ((operation === 'Query' || operation === 'Scan') && typeof request.IndexName === 'string' && typeof request.TableName === 'string') {
      const table = request.TableName;
      // Only an index: a Query of the table itself (or of an LSI asked ConsistentRead) is not delayed here.
      if (request.ConsistentRead === true || !injector.draw('gsiLag')) return undefined;
      return {
        onAnswer: (status, answer) => {
          if (status !== 200) return undefined;
          const page = JSON.parse(answer.toString('utf8')) as { Items?: AttributeMap[]; Count?: number };
          if (!Array.isArray(page.Items)) return undefined;
          const kept = page.Items.filter((item) => !recent(table, item));
          if (kept.length === page.Items.length) return undefined;
          injector.count('gsiLag');
          return Buffer.from(JSON.stringify({ ...page, Items: kept, Count: kept.length }), 'utf8');
        },
      };
    }
    return undefined;
  };
}

/** Headers of a DynamoDB answer whose body was replaced: its length and CRC32 recomputed. */
export function replacedBodyHeaders(headers: Record<string, string | string[] | undefined>, body: Buffer): Record<string, string | string[] | undefined> {
  const { 'transfer-encoding': _chunked, ...rest } = headers;
  return { ...rest, 'content-length': String(body.length), ...(headers['x-amz-crc32'] !== undefined ? { 'x-amz-crc32': String(crc32(body)) } : {}) };
}
