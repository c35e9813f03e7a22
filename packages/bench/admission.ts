/**
 * Admission benchmark: N small GeoJSON jobs through the whole local bridge
 * (synthesized state machine, real handlers, s3rver, DynamoDB Local, the
 * simulator) with S slots, and how close the run comes to the ideal schedule.
 *
 * Measured, not assumed:
 *   - makespan from the first drop to the last final ledger row;
 *   - the ideal: ceil(N / S) x processing time + the overhead of one job alone
 *     (measured in the same run, same bridge, before the batch);
 *   - slots in use: the `#slots` row sampled every 50 ms (its maximum must be <= S),
 *     and the processings' own SUBMITTED -> final intervals swept (a cross-check);
 *   - FIFO: among the jobs that waited, how many were admitted before a job
 *     that arrived (registered) earlier;
 *   - task invocations per job (Lambda calls), and how many of them were slot attempts;
 *   - peak RSS of this process (the bridge runs in it) from the OS.
 *
 * Run it:  npx tsx packages/bench/admission.ts --jobs 200 --processing-seconds 2 --slots 5
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { isFinalStatus, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { SLOTS_ROW_ID } from 'mapflow-bridge/functions/ledger/schema.ts';
import { startLocalBridge, type LocalBridge } from '@mapflow-bridge/local/bridge';
import type { TaskTrace } from '@mapflow-bridge/local/engine/engine';

export interface AdmissionBenchOptions {
  jobs: number;
  processingSeconds: number;
  slots: number;
  /** Files uploaded at once (default 16). */
  dropConcurrency?: number;
  log?: (line: string) => void;
  timeoutMs?: number;
}

export interface AdmissionBenchResult {
  jobs: number;
  slots: number;
  processingSeconds: number;
  finalJobs: number;
  succeeded: number;
  /** One job alone, drop to final (ms). */
  singleJobMs: number;
  /** Per-job overhead: singleJobMs - processing time. */
  overheadMs: number;
  idealMs: number;
  makespanMs: number;
  /** makespan / ideal. */
  ratio: number;
  jobsPerMinute: number;
  dropMs: number;
  /** First drop -> the last job's Register Job started (dispatch keeping up with the drops?). */
  lastRegisteredMs: number;
  maxSlotsSampled: number;
  maxConcurrentProcessings: number;
  /** Jobs admitted (Admit Job's token settled) before a job of the same route that arrived (registered) earlier. */
  fifoViolations: number;
  /** The most any such job was admitted ahead of the earlier arrival (ms): a few ms is two hand-overs at once whose wake calls crossed. */
  fifoMaxLeadMs: number;
  /** The same counted at the slot grants themselves (each holder's `since` in the sampled `#slots` row). */
  fifoGrantViolations: number;
  queuedJobs: number;
  /** Task invocations (Lambda calls) per job, and slot attempts per job. */
  invocationsPerJob: number;
  slotCallsPerJob: number;
  /** Median time from the previous processing's end to the next one's start, while jobs waited (ms). */
  handoverP50Ms: number;
  handoverMaxMs: number;
  peakRssMiB: number;
  startMs: number;
  /** Most jobs with an open Map Run at once (Admit Job granted -> Finish Job started), swept from the task timings. */
  maxOpenMapRuns: number;
  /** Parts that waited inside an open Map Run (Wait For Slot calls): only parts after a job's first. */
  waitsInsideMapRun: number;
  /** Load average (1 min) at the start and the end of the batch: the machine is shared. */
  loadAverage: { start: number; end: number };
  /** Where the time goes, medians over the batch's jobs (ms): see `breakdown`. */
  breakdown: Breakdown;
}

/**
 * Medians (ms) of one job's path, from the engine's task timings:
 * before admission (registration -> Admit Job called), the wait in the queue,
 * and a slot's hold (granted -> released) cut into its steps.
 */
export interface Breakdown {
  jobsTraced: number;
  /** Register Job start -> Admit Job called (Register, Plan Processing and the transitions between). */
  registerToAdmitCall: number;
  /** Admit Job called -> slot granted (its token settled). */
  queueWait: number;
  /** Slot granted -> released, whole. */
  slotHold: number;
  /** Granted -> the part's first task starts (the Map Run opening). */
  grantToMapStart: number;
  /** The part's first task starts -> Create Processing ends. */
  mapStartToCreated: number;
  /** Create Processing ended -> the poll that saw it finished ended (processing time + detection delay). */
  createdToDetected: number;
  /** Of which beyond the processing time: the detection delay. */
  detectionDelay: number;
  polls: number;
  /** Detection -> the slot released (Store Results and Finish Part, or the release at detection). */
  detectedToReleased: number;
  /** Slot released -> the next waiter's grant (the hand-over), while jobs waited. */
  handover: number;
  /** Plan Processing, one call. */
  planProcessing: number;
  /** The longest registerToAdmitCall (a place older than 30 s stops holding the queue up: functions/ledger/slots.ts). */
  registerToAdmitCallMax: number;
}

export async function runAdmissionBench(options: AdmissionBenchOptions): Promise<AdmissionBenchResult> {
  const log = options.log ?? (() => undefined);
  const dir = await mkdtemp(path.join(tmpdir(), 'mapflow-admission-'));
  const files = await writeAois(path.join(dir, 'aoi'), options.jobs + 1);
  // The handlers log every step at INFO; the figures are what counts here.
  process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
  const startedAt = Date.now();
  const traces: TaskTrace[] = [];
  const bridge = await startLocalBridge({
    onTask: (trace) => {
      // Keep what the breakdown needs, not the payloads (2,000 jobs x ~15 tasks).
      traces.push({ state: trace.state, input: jobIdOf(trace.input), startedAt: trace.startedAt, endedAt: trace.endedAt, failed: trace.failed });
    },
    simulator: { processingSeconds: options.processingSeconds },
    maxConcurrentProcessings: options.slots,
    dropFolder: false,
    reconcileIntervalMs: 0,
    log: () => undefined,
  });
  const startMs = Date.now() - startedAt;
  let sampling = true;
  let maxSlotsSampled = 0;
  // Each holder's grant time, as the slots row records it (a hold lasts seconds; the sampler sees every one).
  const granted = new Map<string, number>();
  const sampler = (async () => {
    while (sampling) {
      const row = await slotsRow(bridge);
      maxSlotsSampled = Math.max(maxSlotsSampled, Object.keys(row).length);
      for (const [holder, entry] of Object.entries(row)) {
        if (!granted.has(holder) && entry.since) granted.set(holder, Date.parse(entry.since));
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  try {
    // One job alone: the per-job overhead around the processing time.
    const single = files[0] as string;
    const t1 = Date.now();
    const { jobId: singleId } = await bridge.putInbox(single, path.basename(single));
    await bridge.waitForJob(singleId, { timeoutMs: 120_000 });
    const singleJobMs = Date.now() - t1;
    const overheadMs = Math.max(0, singleJobMs - options.processingSeconds * 1000);
    log(`one job alone: ${(singleJobMs / 1000).toFixed(1)} s (overhead ${(overheadMs / 1000).toFixed(1)} s)`);

    const tracesBefore = traces.length;
    const loadStart = loadavg()[0] ?? 0;
    const invocationsBefore = totalInvocations(bridge);
    const slotCallsBefore = slotInvocations(bridge);
    const batch = files.slice(1);
    const t0 = Date.now();
    const jobIds = await mapBounded(batch, options.dropConcurrency ?? 16, async (file) => (await bridge.putInbox(file, path.basename(file))).jobId);
    const dropMs = Date.now() - t0;
    log(`dropped ${batch.length} files in ${(dropMs / 1000).toFixed(1)} s`);
    // Three times the ideal schedule, at least 30 min: 2,000 jobs of 5 s alone are 33 min ideally.
    const idealScheduleMs = Math.ceil(options.jobs / options.slots) * options.processingSeconds * 1000;
    await bridge.waitForJobs({ timeoutMs: options.timeoutMs ?? Math.max(1_800_000, 3 * idealScheduleMs) });
    const loadEnd = loadavg()[0] ?? 0;
    const rows = (await Promise.all(jobIds.map((id) => bridge.ledger.get(id)))).filter((r): r is LedgerRow => r !== undefined);
    const batchTraces = traces.slice(tracesBefore);
    const finals = rows.filter((r) => isFinalStatus(r.status));
    const lastFinal = Math.max(...finals.map((r) => Date.parse(r.finishedAt ?? r.updatedAt)));
    const makespanMs = lastFinal - t0;
    const idealMs = Math.ceil(options.jobs / options.slots) * options.processingSeconds * 1000 + overheadMs;

    const intervals = rows
      .map((r) => ({ row: r, start: at(r, 'SUBMITTED'), end: Date.parse(r.finishedAt ?? r.updatedAt) }))
      .filter((i): i is { row: LedgerRow; start: number; end: number } => i.start !== undefined);
    const queued = rows.filter((r) => at(r, 'QUEUED') !== undefined);
    return {
      jobs: options.jobs,
      slots: options.slots,
      processingSeconds: options.processingSeconds,
      finalJobs: finals.length,
      succeeded: rows.filter((r) => r.status === 'SUCCEEDED').length,
      singleJobMs,
      overheadMs,
      idealMs,
      makespanMs,
      ratio: makespanMs / idealMs,
      jobsPerMinute: (finals.length / makespanMs) * 60_000,
      dropMs,
      lastRegisteredMs: Math.max(...batchTraces.filter((t) => t.state === 'Register Job').map((t) => t.startedAt)) - t0,
      maxSlotsSampled,
      maxConcurrentProcessings: maxOverlap(intervals),
      ...fifoOf(admissions(rows, batchTraces)),
      fifoGrantViolations: fifoOf(rows.flatMap((row) => {
        const at = granted.get(`${row.jobId}#0`);
        return at === undefined ? [] : [{ row, start: at }];
      })).fifoViolations,
      queuedJobs: queued.length,
      invocationsPerJob: (totalInvocations(bridge) - invocationsBefore) / options.jobs,
      slotCallsPerJob: (slotInvocations(bridge) - slotCallsBefore) / options.jobs,
      ...handover(intervals),
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
      startMs,
      loadAverage: { start: loadStart, end: loadEnd },
      ...openMapRuns(batchTraces),
      breakdown: breakdown(batchTraces, options.processingSeconds * 1000),
    };
  } finally {
    sampling = false;
    await sampler.catch(() => undefined);
    await bridge.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The slot holders now, with the time each was granted (`since`, written by the granting conditional write). */
async function slotsRow(bridge: LocalBridge): Promise<Record<string, { since?: string }>> {
  const doc = (bridge.ledger as unknown as { doc: { send(c: GetCommand): Promise<{ Item?: Record<string, unknown> }> } }).doc;
  const { Item } = await doc.send(new GetCommand({ TableName: bridge.ledgerTable, Key: { jobId: SLOTS_ROW_ID }, ConsistentRead: true }));
  const holders = Item?.holders;
  return holders && typeof holders === 'object' ? (holders as Record<string, { since?: string }>) : {};
}

/** The job id a task's payload names (plain, `job`, or a waiting state's `Payload`). */
function jobIdOf(input: unknown): string | undefined {
  const value = (input as { Payload?: unknown } | null)?.Payload ?? input;
  const v = value as { jobId?: unknown; job?: { jobId?: unknown } } | null;
  const id = v?.job?.jobId ?? v?.jobId;
  return typeof id === 'string' ? id : undefined;
}

const ADMIT = 'Admit Job';

/** Per job: its traces by state name, in start order. */
function byJob(traces: TaskTrace[]): Map<string, Map<string, TaskTrace[]>> {
  const jobs = new Map<string, Map<string, TaskTrace[]>>();
  for (const t of traces) {
    if (typeof t.input !== 'string') continue;
    const states = jobs.get(t.input) ?? new Map<string, TaskTrace[]>();
    jobs.set(t.input, states);
    states.set(t.state, [...(states.get(t.state) ?? []), t]);
  }
  return jobs;
}

/** Each job's admission (its Admit Job token settled), with its arrival (registration) and route. */
function admissions(rows: LedgerRow[], traces: TaskTrace[]): { row: LedgerRow; start: number }[] {
  const jobs = byJob(traces);
  return rows.flatMap((row) => {
    const admit = jobs.get(row.jobId)?.get(ADMIT)?.find((t) => !t.failed);
    return admit ? [{ row, start: admit.endedAt }] : [];
  });
}

function breakdown(traces: TaskTrace[], processingMs: number): Breakdown {
  const jobs = byJob(traces);
  const series: Record<Exclude<keyof Breakdown, 'jobsTraced' | 'registerToAdmitCallMax'>, number[]> = {
    registerToAdmitCall: [], queueWait: [], slotHold: [], grantToMapStart: [], mapStartToCreated: [],
    createdToDetected: [], detectionDelay: [], polls: [], detectedToReleased: [], handover: [], planProcessing: [],
  };
  const grants: number[] = [];
  const releases: number[] = [];
  for (const states of jobs.values()) {
    const first = (name: string) => states.get(name)?.[0];
    const last = (name: string) => states.get(name)?.at(-1);
    const register = first('Register Job');
    const admit = first(ADMIT);
    // The first task of the part: Acquire Slot, or Create Processing for the admitted part (Admitted Part?).
    const acquire = first('Acquire Slot') ?? first('Create Processing');
    const create = last('Create Processing');
    const polls = states.get('Poll Processing') ?? [];
    const detected = polls.at(-1);
    const finish = first('Finish Part');
    // Where the slot is given back: the poll that sees the processing OK releases it
    // (poll-processing.ts); a part that failed releases in Finish Part (its first write).
    const succeeded = finish !== undefined && states.has('Store Results');
    const releasedAt = succeeded ? detected?.endedAt : finish?.startedAt;
    if (!register || !admit || !acquire || !create || !detected || releasedAt === undefined) continue;
    series.registerToAdmitCall.push(admit.startedAt - register.startedAt);
    const plan = first('Plan Processing');
    if (plan) series.planProcessing.push(plan.endedAt - plan.startedAt);
    series.queueWait.push(admit.endedAt - admit.startedAt);
    series.slotHold.push(releasedAt - admit.endedAt);
    series.grantToMapStart.push(acquire.startedAt - admit.endedAt);
    series.mapStartToCreated.push(create.endedAt - acquire.startedAt);
    series.createdToDetected.push(detected.endedAt - create.endedAt);
    series.detectionDelay.push(detected.endedAt - create.endedAt - processingMs);
    series.polls.push(polls.length);
    series.detectedToReleased.push(releasedAt - detected.endedAt);
    grants.push(admit.endedAt);
    // The release happens inside the poll that saw OK (it hands the slot over before that poll
    // returns): its start bounds it from below, so the hand-over figure is an upper bound.
    releases.push(succeeded ? detected.startedAt : releasedAt);
  }
  // Hand-over: each release to the first grant after it that was waiting (queued before the release).
  grants.sort((a, b) => a - b);
  for (const release of releases.sort((a, b) => a - b)) {
    const index = grants.findIndex((g) => g >= release);
    if (index < 0) break;
    const [grant] = grants.splice(index, 1) as [number];
    if (grant - release < 60_000) series.handover.push(grant - release);
  }
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0);
  };
  return {
    jobsTraced: series.slotHold.length,
    ...(Object.fromEntries(Object.entries(series).map(([k, v]) => [k, median(v)])) as Omit<Breakdown, 'jobsTraced' | 'registerToAdmitCallMax'>),
    registerToAdmitCallMax: Math.max(0, ...series.registerToAdmitCall),
  };
}

function openMapRuns(traces: TaskTrace[]): { maxOpenMapRuns: number; waitsInsideMapRun: number } {
  const intervals: { start: number; end: number }[] = [];
  for (const states of byJob(traces).values()) {
    const admitted = states.get(ADMIT)?.find((t) => !t.failed)?.endedAt;
    const closed = states.get('Finish Job')?.[0]?.startedAt ?? states.get('Fail Job')?.[0]?.startedAt;
    if (admitted !== undefined && closed !== undefined) intervals.push({ start: admitted, end: closed });
  }
  return { maxOpenMapRuns: maxOverlap(intervals), waitsInsideMapRun: traces.filter((t) => t.state === 'Wait For Slot').length };
}

function totalInvocations(bridge: LocalBridge): number {
  return [...bridge.engine.taskInvocations.values()].reduce((a, b) => a + b, 0);
}

function slotInvocations(bridge: LocalBridge): number {
  let n = 0;
  for (const [state, count] of bridge.engine.taskInvocations) if (/slot|admi/i.test(state)) n += count;
  return n;
}

function at(row: LedgerRow, status: string): number | undefined {
  const entry = row.statusHistory.find((h) => h.status === status);
  return entry ? Date.parse(entry.at) : undefined;
}

function maxOverlap(intervals: { start: number; end: number }[]): number {
  const points = intervals.flatMap((i) => [
    { t: i.start, d: 1 },
    { t: i.end, d: -1 },
  ]);
  // Ends before starts at the same instant: a slot handed over is not two in use.
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let current = 0;
  let max = 0;
  for (const p of points) {
    current += p.d;
    max = Math.max(max, current);
  }
  return max;
}

/** Jobs admitted before a job of the same route that arrived (registered) earlier, and by how much at most. */
function fifoOf(intervals: { row: LedgerRow; start: number }[]): { fifoViolations: number; fifoMaxLeadMs: number } {
  const routes = new Map<string, { row: LedgerRow; start: number }[]>();
  for (const i of intervals) routes.set(i.row.routeName, [...(routes.get(i.row.routeName) ?? []), i]);
  let fifoViolations = 0;
  let fifoMaxLeadMs = 0;
  for (const list of routes.values()) {
    const { violations, maxLeadMs } = fifoViolationsOf(list);
    fifoViolations += violations;
    fifoMaxLeadMs = Math.max(fifoMaxLeadMs, maxLeadMs);
  }
  return { fifoViolations, fifoMaxLeadMs };
}

function fifoViolationsOf(intervals: { row: LedgerRow; start: number }[]): { violations: number; maxLeadMs: number } {
  const byArrival = [...intervals].sort((a, b) => Date.parse(a.row.createdAt) - Date.parse(b.row.createdAt) || a.row.jobId.localeCompare(b.row.jobId));
  let violations = 0;
  let maxLeadMs = 0;
  let latestEarlierStart = -Infinity;
  for (const entry of byArrival) {
    // Some earlier arrival was admitted after this one: this one overtook it.
    if (entry.start < latestEarlierStart - 1) {
      violations++;
      maxLeadMs = Math.max(maxLeadMs, latestEarlierStart - entry.start);
    }
    latestEarlierStart = Math.max(latestEarlierStart, entry.start);
  }
  return { violations, maxLeadMs };
}

/** The gap between a processing's end and the next start, while the queue was not empty. */
function handover(intervals: { start: number; end: number }[]): { handoverP50Ms: number; handoverMaxMs: number } {
  const starts = intervals.map((i) => i.start).sort((a, b) => a - b);
  const gaps: number[] = [];
  for (const end of intervals.map((i) => i.end).sort((a, b) => a - b)) {
    const next = starts.find((s) => s >= end);
    if (next !== undefined && next - end < 60_000) gaps.push(next - end);
    if (next !== undefined) starts.splice(starts.indexOf(next), 1);
  }
  gaps.sort((a, b) => a - b);
  return { handoverP50Ms: gaps[Math.floor(gaps.length / 2)] ?? 0, handoverMaxMs: gaps.at(-1) ?? 0 };
}

async function mapBounded<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Tiny distinct 1 km x 1 km AOIs near Bern (distinct bytes, so distinct jobs). */
async function writeAois(dir: string, count: number): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const x = 7.4 + i * 0.0001;
    const ring = [[x, 46.9], [x + 0.01, 46.9], [x + 0.01, 46.91], [x, 46.91], [x, 46.9]];
    const file = path.join(dir, `a${String(i).padStart(5, '0')}.geojson`);
    await writeFile(file, JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } }] }));
    files.push(file);
  }
  return files;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '200' },
      'processing-seconds': { type: 'string', default: '2' },
      slots: { type: 'string', default: '5' },
    },
  });
  const result = await runAdmissionBench({
    jobs: Number(values.jobs),
    processingSeconds: Number(values['processing-seconds']),
    slots: Number(values.slots),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
