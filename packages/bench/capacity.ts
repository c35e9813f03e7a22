/**
 * The capacity model of docs/capacity.md: for a number of files a day, what
 * the bridge asks of AWS and Mapflow, what it costs at list prices, and which
 * quota binds first. The per-job counts follow the state machine (the local
 * definition, same as deployed) and the poll policy of the code, so the figures
 * move when the code does; `npm run bench` prints them.
 *
 * Run it:  npx tsx packages/bench/capacity.ts [--json]
 */
import { pathToFileURL } from 'node:url';
import { DEFAULTS } from 'mapflow-bridge/functions/runtime/config.ts';
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
 * (packages/bench/polling.ts: stalls, bursts, AWAITING), the look that sees it done included.
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
        'each waiting place is a row of its own, so the backlog costs no more per job as it grows (see the admission table)',
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
 * Admission's DynamoDB bill per admitted part, in capacity units (DynamoDB
 * bills a write per KB of the item, twice inside a transaction, and a strongly
 * consistent read per 4 KB). The queue's places are rows of their own and the
 * `#slots` row holds only the holders and a count (functions/ledger/slots.ts),
 * so these do not grow with the queue: measured on DynamoDB Local's
 * ConsumedCapacity for one part's reserve, enqueue, grant and release with 0
 * and with 100 parts waiting (test/perf/capacity-model.test.ts checks both
 * against these figures).
 */
export const ADMISSION_WRITE_UNITS_PER_PART = 20;
export const ADMISSION_READ_UNITS_PER_PART = 4.5;

/**
 * The first design kept the queue inside the `#slots` row (about 110 bytes per
 * waiting part), which every join, grant and release rewrote: kept here to show
 * what moving the queue out saved. DynamoDB's item limit is 400 KB.
 */
const MAP_QUEUE_ROW_BASE_BYTES = 200 + 5 * 220;
const MAP_QUEUE_BYTES_PER_WAITER = 110;
const MAP_QUEUE_ROW_WRITES_PER_PART = 7;
const MAP_QUEUE_ROW_READS_PER_PART = 3;
export const DYNAMODB_ITEM_LIMIT_BYTES = 400 * 1024;

export interface AdmissionCost {
  queued: number;
  /** Capacity units per admitted part, and their price per 1,000 parts. */
  writeUnits: number;
  readUnits: number;
  dollarsPer1000: number;
  /** The same with the queue inside the `#slots` row (the first design); `fits` false past the item limit. */
  queueInRow: { rowBytes: number; writeUnits: number; readUnits: number; dollarsPer1000: number; fits: boolean };
}

export function admissionCost(queued: number): AdmissionCost {
  const price = (w: number, r: number) => (w * PRICES.dynamoPerWrite + r * PRICES.dynamoPerRead) * 1_000;
  const rowBytes = MAP_QUEUE_ROW_BASE_BYTES + queued * MAP_QUEUE_BYTES_PER_WAITER;
  const rowWrites = MAP_QUEUE_ROW_WRITES_PER_PART * Math.ceil(rowBytes / 1024);
  const rowReads = MAP_QUEUE_ROW_READS_PER_PART * Math.ceil(rowBytes / 4096);
  return {
    queued,
    writeUnits: ADMISSION_WRITE_UNITS_PER_PART,
    readUnits: ADMISSION_READ_UNITS_PER_PART,
    dollarsPer1000: price(ADMISSION_WRITE_UNITS_PER_PART, ADMISSION_READ_UNITS_PER_PART),
    queueInRow: { rowBytes, writeUnits: rowWrites, readUnits: rowReads, dollarsPer1000: price(rowWrites, rowReads), fits: rowBytes <= DYNAMODB_ITEM_LIMIT_BYTES },
  };
}

/** Admission's cost per 1,000 jobs at several backlogs (markdown), against the first design's and the model's $ per 1,000. */
export function admissionCostTable(queues: readonly number[] = [0, 100, 1_000, 2_000, 3_000, 10_000]): string {
  const base = capacityModel(1_000).dollarsPer1000Jobs;
  return [
    '| jobs waiting | write / read units per part | $ per 1,000 jobs | vs the model\'s $ per 1,000 | queue in `#slots` (first design): row, write / read units | $ per 1,000 jobs |',
    '|---:|---:|---:|---:|---:|---:|',
    ...queues.map((q) => {
      const c = admissionCost(q);
      const old = c.queueInRow;
      const oldCells = old.fits ? `${(old.rowBytes / 1024).toFixed(1)} KB, ${old.writeUnits} / ${old.readUnits} | ${old.dollarsPer1000.toFixed(2)}` : 'over 400 KB: joins fail | -';
      return `| ${q.toLocaleString('en-US')} | ${c.writeUnits} / ${c.readUnits} | ${c.dollarsPer1000.toFixed(3)} | ${((c.dollarsPer1000 / base) * 100).toFixed(1)} % | ${oldCells} |`;
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
    process.stdout.write(`\nadmission's DynamoDB cost while jobs wait:\n${admissionCostTable()}\n`);
  }
}
