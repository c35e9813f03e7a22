/**
 * The goals of issue 12 in one table, each figure next to its baseline from
 * the same run: admission (packages/bench/admission.ts), lean bundles
 * (packages/bench/bundles.ts), fast start (packages/bench/startup.ts), polling
 * (packages/bench/polling.ts) and the capacity model (packages/bench/capacity.ts).
 * `npm run bench` prints it after the data paths and the fault suite.
 */
import { runAdmissionBench } from './admission.ts';
import { BUNDLES_BEFORE_REF, bundleTable, measureBundles, NON_MAPFLOW_LIMIT_BYTES, BUNDLE_LIMIT_BYTES } from './bundles.ts';
import { capacityModel } from './capacity.ts';
import type { PairedRatio } from './paired.ts';
import { oracleFigures, POLLING_SEEDS, pollingGoals, runPollingSuites } from './polling.ts';
import { formatTimelines, measureStartup, STARTUP_BEFORE_REF } from './startup.ts';

export interface GoalsOptions {
  jobs: number;
  processingSeconds: number;
  slots: number;
  /** Start the whole bridge cold and warm (slow on a loaded machine); false: the definition only (--quick-start). */
  fullStart: boolean;
  log: (line: string) => void;
  /** Goal 4, measured by the data paths of `npm run bench` (absent with --goals-only). */
  upload?: UploadGoal;
}

/** The bridge's upload from the local S3 against the raw pipe of the same bytes (packages/bench/index.ts). */
export interface UploadGoal {
  bytes: number;
  bridgeMs: number;
  rawMs: number;
  bridgeCpuMs: number;
  rawCpuMs: number;
  wallRatio: number;
  /** The wall ratio over the alternating pairs, with its 95 % interval and verdict. */
  wallPairs?: PairedRatio;
  cpuRatio: number;
  /** VmHWM of the bridge's upload process. */
  osPeakRssBytes?: number;
}

interface Row {
  goal: string;
  bridge: string;
  baseline: string;
  ratio: string;
  target: string;
  met: boolean | undefined;
}

const KIB = 1024;

/** Goal 1's reference size: the throughput of a larger run (`--jobs 2000`) is compared with this many jobs, run right after it. */
export const REFERENCE_JOBS = 200;

export async function runGoalsBench(options: GoalsOptions): Promise<number> {
  const rows: Row[] = [];
  const { log } = options;

  // A bridge that cannot start (a saturated machine: s3rver or the JVM too slow) leaves the other goals measurable.
  const admission = async (jobs: number, title: string) => {
    log(`\n${title}: ${jobs} jobs of ${options.processingSeconds} s, ${options.slots} slots (packages/bench/admission.ts)`);
    return runAdmissionBench({ jobs, processingSeconds: options.processingSeconds, slots: options.slots, log: (l) => log(`  ${l}`) }).catch((error: unknown) => {
      log(`  ${title} not measured: ${(error as Error).message}`);
      return undefined;
    });
  };
  const a = await admission(options.jobs, 'admission');
  if (!a) rows.push({ goal: '1 admission', bridge: 'not measured', baseline: '', ratio: '', target: '', met: false });
  if (a) rows.push(
    {
      goal: `1 makespan of ${a.jobs} jobs`,
      bridge: `${(a.makespanMs / 1000).toFixed(0)} s`,
      baseline: `ideal ${(a.idealMs / 1000).toFixed(0)} s`,
      ratio: a.ratio.toFixed(2),
      target: '<= 1.10',
      met: a.ratio <= 1.1,
    },
    { goal: '1 all jobs final', bridge: `${a.finalJobs}`, baseline: `${a.jobs} dropped`, ratio: '', target: 'all', met: a.finalJobs === a.jobs },
    { goal: '1 slots in use (sampled 50 ms)', bridge: `max ${a.maxSlotsSampled}`, baseline: `${a.slots} slots`, ratio: '', target: '<= slots', met: a.maxSlotsSampled <= a.slots },
    {
      goal: '1 admitted out of arrival order',
      // Order of admission: the slot grants (the #slots row's since); woken: when each token settled.
      bridge: `${a.fifoGrantViolations} (woken: ${a.fifoViolations}${a.fifoViolations ? `, by <= ${a.fifoMaxLeadMs} ms` : ''})`,
      baseline: `${a.queuedJobs} queued`,
      ratio: '',
      target: '0',
      met: a.fifoGrantViolations === 0,
    },
    { goal: '1 open Map Runs at once', bridge: `max ${a.maxOpenMapRuns}`, baseline: `${a.slots} slots`, ratio: '', target: 'no waiting inside', met: a.waitsInsideMapRun === 0 },
    { goal: '1 slot calls per job while queued', bridge: a.slotCallsPerJob.toFixed(1), baseline: `${a.invocationsPerJob.toFixed(1)} calls/job`, ratio: '', target: 'no polling (<= 2)', met: a.slotCallsPerJob <= 2 },
    { goal: '1 throughput', bridge: `${a.jobsPerMinute.toFixed(1)} jobs/min`, baseline: `ideal ${((a.jobs / a.idealMs) * 60_000).toFixed(1)}`, ratio: '', target: '', met: undefined },
  );
  if (a && a.jobs > REFERENCE_JOBS) {
    // Throughput must not fall as the queue grows: the same bench at the reference size, in the same run.
    const reference = await admission(REFERENCE_JOBS, 'admission reference');
    const ratio = reference ? a.jobsPerMinute / reference.jobsPerMinute : undefined;
    rows.push({
      goal: `1 throughput at ${a.jobs} vs ${REFERENCE_JOBS}`,
      bridge: `${a.jobsPerMinute.toFixed(1)} jobs/min`,
      baseline: reference ? `${reference.jobsPerMinute.toFixed(1)} jobs/min` : 'not measured',
      ratio: ratio === undefined ? '' : ratio.toFixed(2),
      target: '>= 0.90',
      met: ratio !== undefined && ratio >= 0.9,
    });
  }

  log('\nbundles: esbuild with the construct\'s options (lib/private/bundling.ts), cold import = median of 5 fresh node processes (packages/bench/bundles.ts);');
  log('  "external SDK": the externalAwsSdk prop, @aws-sdk/* left to the runtime (imported from node_modules here);');
  log(`  "before": the handlers of ${BUNDLES_BEFORE_REF} (before the lean bundles), imported in turns with today's`);
  const bundles = await measureBundles({ importTimes: true, externalAwsSdk: true, before: BUNDLES_BEFORE_REF });
  for (const line of bundleTable(bundles)) log(`  ${line}`);
  const nonMapflow = bundles.filter((b) => !b.callsMapflow);
  const largestNonExternal = Math.max(...nonMapflow.map((b) => b.externalSdk?.bytes ?? Infinity));
  const largestNon = Math.max(...nonMapflow.map((b) => b.bytes));
  const largest = Math.max(...bundles.map((b) => b.bytes));
  // The baseline from this run when the old commit could be read, else the figures of the issue.
  const withBefore = bundles.filter((b) => b.before);
  const beforeNon = withBefore.length ? Math.max(...withBefore.filter((b) => !b.callsMapflow).map((b) => b.before?.bytes ?? 0)) : 1155 * KIB;
  const beforeLargest = withBefore.length ? Math.max(...withBefore.map((b) => b.before?.bytes ?? 0)) : 1613 * KIB;
  const importSum = (pick: (b: (typeof bundles)[number]) => number | undefined) => withBefore.reduce((sum, b) => sum + (pick(b) ?? 0), 0);
  /** A bundle-size row: the bridge's bytes against a baseline, and the limit it must stay under. */
  const sizeRow = (goal: string, bytes: number, baseline: number, baselineLabel: string, limit: number, target: string) => ({
    goal,
    bridge: `${(bytes / KIB).toFixed(1)} KiB`,
    baseline: `${(baseline / KIB).toFixed(0)} KiB ${baselineLabel}`,
    ratio: (bytes / baseline).toFixed(2),
    target,
    met: bytes <= limit,
  });
  rows.push(
    sizeRow('2 largest bundle, no Mapflow', largestNon, beforeNon, 'before', NON_MAPFLOW_LIMIT_BYTES, '<= 400 KiB'),
    sizeRow('2 largest bundle', largest, beforeLargest, 'before', BUNDLE_LIMIT_BYTES, '<= 1,024 KiB'),
    sizeRow('2 ... no Mapflow, externalAwsSdk', largestNonExternal, largestNon, 'bundled', NON_MAPFLOW_LIMIT_BYTES, '<= 400 KiB'),
    {
      goal: '2 cold imports, sum of medians',
      bridge: `${(importSum((b) => b.coldImportMs) / 1000).toFixed(1)} s`,
      baseline: withBefore.length ? `${(importSum((b) => b.before?.coldImportMs) / 1000).toFixed(1)} s before` : '-',
      ratio: withBefore.length ? (importSum((b) => b.coldImportMs) / importSum((b) => b.before?.coldImportMs)).toFixed(2) : '',
      target: 'table per handler above',
      met: undefined,
    },
  );

  log(
    options.fullStart
      ? `\nstart: the whole bridge, cache off (cold: synthesized), warm, and the bridge of ${STARTUP_BEFORE_REF} (before the fast-start work), in turns in fresh processes (packages/bench/startup.ts)`
      : '\nstart: definition synthesized (cache off) vs read from the disk cache, fresh processes (packages/bench/startup.ts)',
  );
  // Whole starts in turns (2 each; the run of median first poll of each side is kept), then the timelines.
  const s = await measureStartup(options.fullStart ? 2 : 3, { definitionOnly: !options.fullStart, ...(options.fullStart ? { before: STARTUP_BEFORE_REF } : {}) });
  if (s.cold && s.warm) for (const line of formatTimelines(s.cold, s.warm)) log(`  ${line}`);
  if (s.before) log(`  ${STARTUP_BEFORE_REF}: ready ${(s.before.readyMs / 1000).toFixed(1)} s, first poll ${(s.before.firstPollMs / 1000).toFixed(1)} s`);
  rows.push({
    goal: '3 definition ready (process start)',
    bridge: `${(s.definition.warmMs / 1000).toFixed(1)} s warm`,
    baseline: `${(s.definition.coldMs / 1000).toFixed(1)} s cold`,
    ratio: (s.definition.warmMs / s.definition.coldMs).toFixed(2),
    target: '<= 0.40',
    met: s.definition.warmMs / s.definition.coldMs <= 0.4,
  });
  /** A start-up row: today's warm start against a baseline start of the same run. */
  const startRow = (goal: string, warmMs: number, baselineMs: number, baselineLabel: string, judged: boolean) => ({
    goal,
    bridge: `${(warmMs / 1000).toFixed(1)} s warm`,
    baseline: `${(baselineMs / 1000).toFixed(1)} s ${baselineLabel}`,
    ratio: (warmMs / baselineMs).toFixed(2),
    target: judged ? '<= 0.40' : 'cache alone',
    met: judged ? warmMs / baselineMs <= 0.4 : undefined,
  });
  // The goal compares with "today's times" of the issue: the bridge before the fast-start work, run beside today's.
  if (s.warm && s.before) {
    rows.push(
      startRow('3 bridge ready (npm start)', s.warm.readyMs, s.before.readyMs, STARTUP_BEFORE_REF, true),
      startRow('3 one file to first poll', s.warm.firstPollMs, s.before.firstPollMs, STARTUP_BEFORE_REF, true),
    );
  }
  if (s.cold && s.warm) {
    rows.push(
      startRow('3 ready, today cache off', s.warm.readyMs, s.cold.readyMs, 'cold', false),
      startRow('3 first poll, today cache off', s.warm.firstPollMs, s.cold.firstPollMs, 'cold', false),
    );
  }

  const u = options.upload;
  if (u) {
    const gib = u.bytes / (1024 * 1024 * 1024);
    const size = gib >= 1 ? `${gib.toFixed(gib % 1 === 0 ? 0 : 1)} GiB` : `${(u.bytes / (1024 * 1024)).toFixed(0)} MiB`;
    rows.push(
      {
        goal: `4 upload from S3, wall (${size})`,
        bridge: `${(u.bridgeMs / 1000).toFixed(1)} s`,
        baseline: `raw pipe ${(u.rawMs / 1000).toFixed(1)} s`,
        ratio: u.wallRatio.toFixed(2),
        target: '<= 1.10',
        met: u.wallRatio <= 1.1,
      },
      ...(u.wallPairs && u.wallPairs.pairs >= 2
        ? [
            {
              goal: `4 upload wall, ${u.wallPairs.pairs} pairs`,
              bridge: `95 % ${u.wallPairs.low.toFixed(2)}-${u.wallPairs.high.toFixed(2)}`,
              baseline: 'raw pipe, same pair',
              ratio: u.wallPairs.ratio.toFixed(2),
              target: '<= 1.10, interval',
              met: u.wallPairs.verdict === 'undecided' ? undefined : u.wallPairs.verdict === 'met',
            },
          ]
        : []),
      {
        goal: `4 upload from S3, CPU (${size})`,
        bridge: `${(u.bridgeCpuMs / 1000 / gib).toFixed(2)} s/GiB`,
        baseline: `raw ${(u.rawCpuMs / 1000 / gib).toFixed(2)} s/GiB`,
        ratio: u.cpuRatio.toFixed(2),
        target: '<= 3',
        met: u.cpuRatio <= 3,
      },
      {
        goal: `4 upload OS peak RSS (${size})`,
        bridge: u.osPeakRssBytes ? `${(u.osPeakRssBytes / (1024 * 1024)).toFixed(0)} MiB` : '-',
        baseline: '',
        ratio: '',
        target: gib >= 1 ? '<= 256 MiB' : '<= 256 MiB at 1 GiB',
        met: gib >= 1 && u.osPeakRssBytes ? u.osPeakRssBytes <= 256 * 1024 * 1024 : undefined,
      },
    );
  } else {
    rows.push({ goal: '4 upload from S3', bridge: 'not run', baseline: 'npm run bench (not --goals-only)', ratio: '', target: '', met: undefined });
  }

  log(`\npolling: simulated processings, policy vs fixed pollers (packages/bench/polling.ts; seed ${POLLING_SEEDS[0]} shown, goals on the worst of ${POLLING_SEEDS.length} seeds)`);
  const polling = runPollingSuites(200);
  for (const f of polling.filter((f) => f.seed === POLLING_SEEDS[0])) log(`  ${String(f.minutes).padStart(4)} min ${f.poller.padEnd(14)} polls ${f.pollsMean.toFixed(1).padStart(6)}  p95 ${f.delayP95.toFixed(0).padStart(3)} s  ${f.transitionsPerJob.toFixed(0).padStart(5)} transitions  $${f.dollarsPerJob.toFixed(4)}/job`);
  for (const g of pollingGoals(polling)) {
    rows.push({
      goal: `5 polls, ${g.minutes} min processing`,
      bridge: `p95 ${g.p95.toFixed(0)} s`,
      baseline: 'fixed 30 s',
      ratio: g.pollsVs30.toFixed(2),
      target: '<= 0.50, p95 <= 15 s',
      met: g.met,
    });
  }
  // Why 2 and 10 minutes stay open: what pollers that know more than Mapflow tells would need (packages/bench/polling.ts oracleFigures).
  for (const minutes of [2, 10]) {
    for (const o of oracleFigures(minutes, 200, POLLING_SEEDS[0])) {
      rows.push({
        goal: `5 bound, ${minutes} min: ${o.oracle}`,
        bridge: `p95 ${o.delayP95.toFixed(0)} s`,
        baseline: 'fixed 30 s',
        ratio: o.pollsVs30.toFixed(2),
        target: o.oracle === 'oracle: progress' ? 'above 0.50: no policy can' : 'a known duration could',
        met: undefined,
      });
    }
  }

  const capacity = [1_000, 10_000, 100_000].map(capacityModel);
  rows.push({
    goal: '6 AWS $ per 1,000 jobs (list)',
    bridge: `$${capacity[0]?.dollarsPer1000Jobs.toFixed(2)}`,
    baseline: 'docs/capacity.md',
    ratio: '',
    target: '',
    met: undefined,
  });

  log('\ngoals of issue 12 (each bridge figure against a baseline measured in this run)');
  const header: Row = { goal: 'goal', bridge: 'bridge', baseline: 'baseline', ratio: 'ratio', target: 'target', met: undefined };
  const widths = (['goal', 'bridge', 'baseline', 'ratio', 'target'] as const).map((k) => Math.max(...[header, ...rows].map((r) => r[k].length)));
  const line = (r: Row, met: string) =>
    (['goal', 'bridge', 'baseline', 'ratio', 'target'] as const).map((k, i) => r[k].padEnd(widths[i] as number)).join('  ') + `  ${met}`;
  log(line(header, 'met'));
  for (const r of rows) log(line(r, r.met === undefined ? '' : r.met ? 'yes' : 'NO'));
  return 0;
}
