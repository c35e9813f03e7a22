/**
 * The capacity model of docs/capacity.md: for a number of files a day, what
 * the bridge asks of AWS and Mapflow, what it costs at list prices, and which
 * quota binds first. The per-job counts follow the state machine (the local
 * definition, same as deployed) and the poll policy of the code, so the figures
 * move when the code does; `npm run bench` prints them.
 *
 * Run it:  npx tsx bench/capacity.ts [--json]
 */
import { pathToFileURL } from 'node:url';
import { DEFAULTS } from '../functions/runtime/config.ts';
import { meanPolls } from './polling.ts';

/** The stated workload: shares of the inputs and what each kind does. */
export const WORKLOAD = {
  /** GeoJSON AOIs, one part each (splitFeatures is the exception). */
  geojsonShare: 0.7,
  /** GeoTIFFs uploaded and processed with a model. */
  geotiffModelShare: 0.2,
  /** GeoTIFFs only uploaded (no model on the route). */
  geotiffUploadOnlyShare: 0.1,
  /** Mean GeoTIFF size (MiB) and mean GeoJSON size (KiB). */
  geotiffMiB: 200,
  geojsonKiB: 50,
  /** Processing durations (minutes) and their shares: most are short, a tail is long. */
  durations: [
    { minutes: 5, share: 0.5 },
    { minutes: 20, share: 0.3 },
    { minutes: 60, share: 0.15 },
    { minutes: 180, share: 0.05 },
  ],
  /** Share of GeoTIFF jobs whose image waits for Mapflow's preprocessing (one extra wait loop of ~4 looks). */
  preprocessingLooks: 4,
} as const;

/** us-east-1 list prices (USD), November 2026 price pages; arm64 Lambda. */
export const PRICES = {
  sfnPerTransition: 0.025 / 1_000,
  lambdaPerRequest: 0.2 / 1_000_000,
  lambdaPerGbSecond: 0.0000133334,
  /** On demand, per write request unit (one per KB of the item written, rounded up). */
  dynamoPerWrite: 0.625 / 1_000_000,
  /** On demand, per read request unit (a strongly consistent read: one per 4 KB, rounded up). */
  dynamoPerRead: 0.125 / 1_000_000,
  s3PerPut: 0.005 / 1_000,
  s3PerGet: 0.0004 / 1_000,
  eventBridgePerEvent: 1 / 1_000_000,
  sqsPerRequest: 0.4 / 1_000_000,
  secretsPerCall: 0.05 / 10_000,
} as const;

/** Quotas the design relies on (defaults; most can be raised). */
export const QUOTAS = {
  startExecutionPerSecond: 300, // us-east-1 refill rate (bucket 1,300); 150/s (bucket 800) in smaller regions
  stateTransitionsPerSecond: 5_000, // us-east-1 Standard refill (bucket 5,000); 800 in smaller regions
  openMapRuns: 1_000,
  lambdaConcurrency: 1_000,
  historyEvents: 25_000,
} as const;

/**
 * Polls of one processing of `seconds` with the default policy: the mean of
 * the policy's end estimator on the polling suite's simulated processings
 * (bench/polling.ts: stalls, bursts, AWAITING), the look that sees it done included.
 */
export function pollsFor(seconds: number): number {
  return meanPolls(seconds / 60);
}

interface PerJob {
  transitions: number;
  invocations: number;
  gbSeconds: number;
  dynamoWrites: number;
  dynamoReads: number;
  mapflowCalls: number;
  s3Puts: number;
  s3Gets: number;
  events: number;
  secretsCalls: number;
}

/**
 * One job of each kind. State transitions: each state entered (Task, Choice,
 * Wait, Map, Succeed/Fail), child executions of the Distributed Map included.
 * Admission waits cost nothing per second waited (task token): 2 transitions
 * (Admit Job) and 0 polls, whatever the queue.
 */
function perJob(kind: 'geojson' | 'geotiffModel' | 'geotiffUpload', polls: number): PerJob {
  // Top level: Register Job, Already Final?, Which Kind?, ..., Finish Job.
  const top = { transitions: 3, invocations: 1, writes: 2, reads: 1 }; // Register Job: get + put + RECEIVED event
  let transitions = top.transitions + 1; // + Finish Job
  let invocations = top.invocations + 1;
  let writes = top.writes + 2; // Finish Job: final status, part
  let reads = top.reads + 1;
  let mapflow = 1; // Finish Job reads the final cost
  let s3Puts = 2; // job.json + tags
  let s3Gets = 1;
  let events = 2; // RECEIVED, SUCCEEDED
  if (kind !== 'geojson') {
    // Inspect, Ensure Mosaic, Upload Image (+ preprocessing looks: Choice + Wait + Upload Image), Has Model?
    transitions += 3 + 1 + WORKLOAD.preprocessingLooks * 3;
    invocations += 3 + WORKLOAD.preprocessingLooks;
    mapflow += 2 + 1 + WORKLOAD.preprocessingLooks;
    s3Gets += 3; // header ranges + the streamed object
    writes += 3;
    reads += 2;
    events += 1; // UPLOADED
  }
  if (kind !== 'geotiffUpload') {
    // Plan, Admit Job, Process Parts (Map + one child execution), in the part:
    // Admitted Part? (Admit Job holds its slot: no Acquire Slot), Create, Poll (+ Outcome? + Wait) x polls, Store Results, Finish Part.
    transitions += 1 + 1 + 1 + 1 + 1 + 1 + polls * 3 + 1 + 1;
    invocations += 1 + 1 + 1 + polls + 1 + 1;
    mapflow += 1 + 2 + polls + 2; // plan (project), create (+ look-up), polls, results + processing record
    s3Puts += 3; // geometry, request, result.geojson
    s3Gets += 3;
    // slots: place at Register Job (3), Admit Job (refused fast path, token, join x2, grant, token delete: 6),
    // QUEUED/SUBMITTED, progress writes on change, part, release at detection + Finish Part (2)
    writes += 9 + 2 + 2 + polls * 0.3 + 2 + 2;
    reads += 4 + 1 + polls * 0.3 + 2; // slots row + place at admission, a pump read per release
    events += 2; // SUBMITTED, IN_PROGRESS
  }
  // Lambda: about 0.35 s at 512 MB per short call, uploads/results stream longer at 1 GB.
  const gbSeconds = invocations * 0.35 * 0.5 + (kind !== 'geojson' ? (WORKLOAD.geotiffMiB / 60) * 1 : 0);
  return { transitions, invocations, gbSeconds, dynamoWrites: writes, dynamoReads: reads, mapflowCalls: mapflow, s3Puts, s3Gets, events, secretsCalls: 0.01 * invocations };
}

export interface CapacityFigures {
  filesPerDay: number;
  perDay: PerJob & { sqs: number };
  dollarsPer1000Jobs: number;
  dollarsPerDay: number;
  /** Peak rates at 5x the mean (drops come in bursts). */
  peakStartsPerSecond: number;
  peakTransitionsPerSecond: number;
  mapflowCallsPerMinute: number;
  /** Processings running at once on average (Little's law) = slots needed to keep up. */
  processingsInFlight: number;
  binding: string;
}

export function capacityModel(filesPerDay: number): CapacityFigures {
  const sum: PerJob = { transitions: 0, invocations: 0, gbSeconds: 0, dynamoWrites: 0, dynamoReads: 0, mapflowCalls: 0, s3Puts: 0, s3Gets: 0, events: 0, secretsCalls: 0 };
  let processingMinutes = 0;
  for (const d of WORKLOAD.durations) {
    const polls = pollsFor(d.minutes * 60);
    for (const [kind, share] of [
      ['geojson', WORKLOAD.geojsonShare],
      ['geotiffModel', WORKLOAD.geotiffModelShare],
      ['geotiffUpload', WORKLOAD.geotiffUploadOnlyShare],
    ] as const) {
      const job = perJob(kind, polls);
      const n = filesPerDay * share * d.share;
      for (const key of Object.keys(sum) as (keyof PerJob)[]) sum[key] += job[key] * n;
      if (kind !== 'geotiffUpload') processingMinutes += n * d.minutes;
    }
  }
  const sqs = filesPerDay * 3; // send, receive, delete
  const dollarsPerDay =
    sum.transitions * PRICES.sfnPerTransition +
    sum.invocations * PRICES.lambdaPerRequest +
    sum.gbSeconds * PRICES.lambdaPerGbSecond +
    sum.dynamoWrites * PRICES.dynamoPerWrite +
    sum.dynamoReads * PRICES.dynamoPerRead +
    sum.s3Puts * PRICES.s3PerPut +
    sum.s3Gets * PRICES.s3PerGet +
    sum.events * PRICES.eventBridgePerEvent +
    sqs * PRICES.sqsPerRequest +
    sum.secretsCalls * PRICES.secretsPerCall;
  const perSecond = filesPerDay / 86_400;
  const peakStartsPerSecond = perSecond * 5;
  const peakTransitionsPerSecond = (sum.transitions / 86_400) * 5;
  const processingsInFlight = processingMinutes / (24 * 60);
  const slots = DEFAULTS.maxConcurrentProcessings;
  const findings: string[] = [];
  if (processingsInFlight > slots) {
    findings.push(
      `Mapflow concurrency: ${processingsInFlight.toFixed(0)} processings in flight on average need as many slots (MAX_CONCURRENT_PROCESSINGS, default ${slots}, and the account tier); with fewer, jobs wait (free: task tokens, FIFO) and the backlog grows by ${Math.round(filesPerDay * (1 - slots / processingsInFlight))} jobs a day; ` +
        `the queue's row (#slots) holds about ${queueCapacity(slots).toLocaleString('en-US')} waiting jobs, reached in ${(queueCapacity(slots) / (filesPerDay * (1 - slots / processingsInFlight))).toFixed(1)} days, after which new jobs fail to join (and every write of the row costs more as it grows: see the #slots table)`,
    );
  }
  if (processingsInFlight > QUOTAS.openMapRuns) {
    findings.push(`open Map Runs: with slots raised to ${processingsInFlight.toFixed(0)}, admitted jobs hold that many Map Runs (quota ${QUOTAS.openMapRuns.toLocaleString('en-US')}): ask for a raise or split the bridge`);
  }
  if (peakTransitionsPerSecond > QUOTAS.stateTransitionsPerSecond) findings.push('state transitions per second (Standard)');
  if (peakStartsPerSecond > QUOTAS.startExecutionPerSecond) findings.push('StartExecution per second');
  const binding = findings.length > 0 ? findings.join('; then ') : `none at the default quotas (slots ${slots} suffice: ${processingsInFlight.toFixed(1)} in flight)`;
  return {
    filesPerDay,
    perDay: { ...sum, sqs },
    dollarsPer1000Jobs: (dollarsPerDay / filesPerDay) * 1_000,
    dollarsPerDay,
    peakStartsPerSecond,
    peakTransitionsPerSecond,
    mapflowCallsPerMinute: sum.mapflowCalls / (24 * 60),
    processingsInFlight,
    binding,
  };
}

/**
 * The `#slots` row (functions/ledger/slots.ts) holds the slot holders and the
 * queue, so it grows with the backlog, and DynamoDB bills a write by the
 * item's size (one write unit per KB) and a strongly consistent read per 4 KB.
 * The per-job counts above price every write as one unit; this is what the
 * row adds when `queued` jobs wait. Per admitted part the row is written about
 * SLOTS_ROW_WRITES_PER_PART times (Register Job's reserve and Admit Job's
 * enqueue join the queue, their fast paths, the grant by a pump, the release
 * and its pump) and read SLOTS_ROW_READS_PER_PART times (the pumps'
 * consistent reads). Sizes: a holder about 220 bytes (its key, the execution
 * ARN, the time), a waiter about 110 bytes (key and order; up to 180 with the
 * longest file names), see docs/architecture.md, Admission.
 */
export const SLOTS_ROW_WRITES_PER_PART = 7;
export const SLOTS_ROW_READS_PER_PART = 3;
const SLOTS_ROW_BASE_BYTES = 200;
const SLOT_HOLDER_BYTES = 220;
const SLOT_WAITER_BYTES = 110;
/** DynamoDB's item size limit: beyond it a join fails (docs/architecture.md). */
export const DYNAMODB_ITEM_LIMIT_BYTES = 400 * 1024;

export interface SlotsRowCost {
  queued: number;
  rowBytes: number;
  /** Write units of one write of the row, read units of one consistent read. */
  writeUnits: number;
  readUnits: number;
  /** What the row costs per 1,000 admitted parts, beyond the one unit per request the per-job model counts. */
  extraDollarsPer1000: number;
  fits: boolean;
}

/** Waiting jobs the `#slots` row holds before the item limit (short file names). */
export function queueCapacity(slots: number = DEFAULTS.maxConcurrentProcessings): number {
  return Math.floor((DYNAMODB_ITEM_LIMIT_BYTES - SLOTS_ROW_BASE_BYTES - slots * SLOT_HOLDER_BYTES) / SLOT_WAITER_BYTES);
}

export function slotsRowCost(queued: number, slots: number = DEFAULTS.maxConcurrentProcessings): SlotsRowCost {
  const rowBytes = SLOTS_ROW_BASE_BYTES + slots * SLOT_HOLDER_BYTES + queued * SLOT_WAITER_BYTES;
  const writeUnits = Math.ceil(rowBytes / 1024);
  const readUnits = Math.ceil(rowBytes / 4096);
  const extraPerPart = SLOTS_ROW_WRITES_PER_PART * (writeUnits - 1) * PRICES.dynamoPerWrite + SLOTS_ROW_READS_PER_PART * (readUnits - 1) * PRICES.dynamoPerRead;
  return { queued, rowBytes, writeUnits, readUnits, extraDollarsPer1000: extraPerPart * 1_000, fits: rowBytes <= DYNAMODB_ITEM_LIMIT_BYTES };
}

/** The `#slots` row's cost at several backlogs (markdown), beside the model's $ per 1,000 jobs. */
export function slotsRowTable(queues: readonly number[] = [0, 100, 1_000, 2_000, 3_000]): string {
  const base = capacityModel(1_000).dollarsPer1000Jobs;
  return [
    '| jobs waiting | `#slots` row | write units per write | read units per read | extra $ per 1,000 jobs | vs the model\'s $ per 1,000 |',
    '|---:|---:|---:|---:|---:|---:|',
    ...queues.map((q) => {
      const c = slotsRowCost(q);
      return `| ${q.toLocaleString('en-US')} | ${(c.rowBytes / 1024).toFixed(1)} KB${c.fits ? '' : ' (over 400 KB: joins fail)'} | ${c.writeUnits} | ${c.readUnits} | ${c.extraDollarsPer1000.toFixed(2)} | +${((c.extraDollarsPer1000 / base) * 100).toFixed(0)} % |`;
    }),
  ].join('\n');
}

/** The table docs/capacity.md shows (markdown). */
export function capacityTable(volumes: readonly number[] = [1_000, 10_000, 100_000]): string {
  const rows = volumes.map(capacityModel);
  const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(n >= 10 ? 1 : 2));
  const line = (label: string, f: (c: CapacityFigures) => number | string) => `| ${label} | ${rows.map((c) => (typeof f(c) === 'number' ? fmt(f(c) as number) : f(c))).join(' | ')} |`;
  return [
    `| per day | ${volumes.map((v) => `${v.toLocaleString('en-US')} files`).join(' | ')} |`,
    `|---|${volumes.map(() => '---:').join('|')}|`,
    line('Lambda invocations', (c) => c.perDay.invocations),
    line('Lambda GB-s', (c) => c.perDay.gbSeconds),
    line('state transitions', (c) => c.perDay.transitions),
    line('DynamoDB writes', (c) => c.perDay.dynamoWrites),
    line('DynamoDB reads', (c) => c.perDay.dynamoReads),
    line('S3 PUT / GET', (c) => `${fmt(c.perDay.s3Puts)} / ${fmt(c.perDay.s3Gets)}`),
    line('EventBridge events', (c) => c.perDay.events),
    line('Mapflow calls per minute (mean)', (c) => c.mapflowCallsPerMinute),
    line('StartExecution per s (peak, 5x mean)', (c) => c.peakStartsPerSecond),
    line('state transitions per s (peak, 5x mean)', (c) => c.peakTransitionsPerSecond),
    line('processings in flight (mean)', (c) => c.processingsInFlight),
    line('$ per 1,000 jobs (AWS, list)', (c) => c.dollarsPer1000Jobs),
    line('$ per day (AWS, list)', (c) => c.dollarsPerDay),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify([1_000, 10_000, 100_000].map(capacityModel), null, 2)}\n`);
  else {
    process.stdout.write(`${capacityTable()}\n\n`);
    for (const c of [1_000, 10_000, 100_000].map(capacityModel)) process.stdout.write(`${c.filesPerDay} files/day: binds first: ${c.binding}\n`);
    process.stdout.write(`\nthe #slots row while jobs wait (billed by its size):\n${slotsRowTable()}\n`);
  }
}
