/**
 * The chaos run (issue 24): `mapflow-bridge start` as a user runs it, killed
 * with SIGKILL (its whole process group: the bridge and its s3rver) again and
 * again at instants a seeded schedule picks, and started again on the same
 * state folder, against an outside Mapflow simulator that fails 20 % of the
 * requests, loses 10 % of the create answers and fails some processings once
 * (so "restart a processing once" runs under kills too).
 *
 * A kill is driven by something the run observes, never by a timer: the n-th
 * line of a kind in the bridge's output (start-up begins, the banner, an
 * upload to the inbox, a job event) or a file appearing in the state folder
 * (the lock: start-up half-way). The schedule is printed, so a failing seed
 * can be run again.
 *
 * Audit, from three sides: the ledger (every input exactly one job, final),
 * Mapflow's own listing (no job part with two processings), the bucket and
 * the output folder (every SUCCEEDED job's objects in both), and the events
 * (one final event per job).
 *
 * Run it:  npx tsx packages/bench/chaos.ts --jobs 24 --kills 7 --seed 1
 *          npx tsx packages/bench/chaos.ts --jobs 24 --kills 0 --seed 1     (the same run without kills)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { watch } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isFinalStatus, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { scanJobs } from '@mapflow-bridge/cli/export';
import { outputPath } from '@mapflow-bridge/cli/outputs';
import { startDynamoDbLocal, type DynamoDbLocal } from '@mapflow-bridge/local/dynamodb';
import { readEvents } from '@mapflow-bridge/local/events/file';
import { localS3Client } from '@mapflow-bridge/local/s3/client';
import { readCredentialsFile } from '@mapflow-bridge/local/auth/credentials';
import { startSimulator } from '@mapflow-bridge/simulator';
import { seededRandom } from '@mapflow-bridge/simulator/random';
import { LOCAL_BUCKET, LOCAL_LEDGER_TABLE } from '@mapflow-bridge/local/bridge';
import { auditMapflow, finalEventsOf, squareAoiText } from './fault-suite.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

/** What a kill waits for: the n-th occurrence, in one run, of a line or a file. */
export type KillKind = 'starting' | 'locked' | 'banner' | 'uploaded' | 'received' | 'submitted' | 'restarted' | 'succeeded' | 'resuming' | 'shutdown';
export interface KillPoint {
  kind: KillKind;
  nth: number;
}
const LINES: Record<Exclude<KillKind, 'locked'>, RegExp> = {
  starting: /Starting mapflow-bridge locally/,
  // The start resumes the jobs the last kill left unfinished (issue 39: a kill while the bridge resumes).
  resuming: /resumed \d+ unfinished job/,
  // A Ctrl-C (SIGINT to the group) at a job's Job Received, then the kill once the shutdown has begun (issue 39).
  shutdown: /Ctrl-C: stopping/,
  banner: /S3 endpoint /,
  uploaded: /uploaded inbox\//,
  received: /Job Received/,
  submitted: /Processing Submitted/,
  restarted: /Processing Restarted/,
  succeeded: /Job Succeeded/,
};
/**
 * Each of these is in every schedule of as many kills or more: start-up, between upload and dispatch, a restart,
 * an end, the Ctrl-C shutdown, a start that resumes jobs (issue 39).
 */
const MUST: KillKind[] = ['starting', 'uploaded', 'restarted', 'succeeded', 'shutdown', 'resuming'];
const ANY: KillKind[] = ['starting', 'locked', 'banner', 'uploaded', 'received', 'submitted', 'restarted', 'succeeded', 'resuming', 'shutdown'];

export interface ChaosOptions {
  /** Inputs (small GeoJSONs), dropped in `batches` into the drop folder. */
  jobs: number;
  batches?: number;
  /** Kills in the schedule (0: the same run without kills, the baseline). */
  kills: number;
  seed: number;
  faultRate?: number;
  dropAfterCommit?: number;
  /** Every n-th input's processing fails once with a transient code (restarted once). Default 4. */
  failOnceEvery?: number;
  /** A DynamoDB to keep the ledger in (tests: the run's shared one); default one started here, in memory. */
  dynamodbEndpoint?: string;
  /** The ledger's table there (`start --ledger-table`); default the bridge's. Only with dynamodbEndpoint. */
  ledgerTable?: string;
  log?: (line: string) => void;
  /** Bound on the whole run. Default 5 minutes. */
  timeoutMs?: number;
  /**
   * In the last start (the one that is not killed), at the n-th `Processing Submitted`, the whole process
   * group is stopped (SIGSTOP, as Ctrl-Z or a sleeping laptop stops it) for this many seconds, then continued
   * (SIGCONT). The simulator and DynamoDB go on meanwhile, as Mapflow and AWS do (issue 39, point 4).
   */
  standstill?: { seconds: number; atSubmitted: number };
}

export interface ChaosFigures {
  jobs: number;
  seed: number;
  schedule: KillPoint[];
  /** Kills made (a kill point that never came, because all was done, is not counted). */
  kills: number;
  /** Where each kill landed: `kind#n` of the schedule, or `idle` when its point did not come. */
  killedAt: string[];
  starts: number;
  finalStates: Record<string, number>;
  /** Inputs with no job, or more than one. */
  inputsWithoutExactlyOneJob: string[];
  unfinishedJobs: string[];
  duplicateProcessings: number;
  processings: number;
  restartedJobs: number;
  /** Jobs without exactly one final event agreeing with the ledger. */
  finalEventProblems: string[];
  /** SUCCEEDED jobs whose results are missing in S3 or in the output folder. */
  missingInS3: string[];
  missingInOutputFolder: string[];
  /** Lines the last start printed about output copies it had to make (point 4). */
  outputsCopiedAtStart: number;
  inputsSweptAtStart: number;
  /** Final events a start published for jobs that ended as the run before was killed (packages/local/src/final-events.ts). */
  finalEventsOwedAtStart: number;
  /** Standstills made (options.standstill), with the function processes stopped with the bridge. */
  standstills: { seconds: number; functionProcesses: number }[];
  /** Lines in which the bridge said it had stood still (packages/local/src/assembly/standstill.ts). */
  standstillsReported: number;
  wallMs: number;
}

/** The seeded kill schedule: the MUST kinds (in a seeded order) and then any kind, each at its 1st to 3rd occurrence. */
export function chaosSchedule(kills: number, seed: number): KillPoint[] {
  // The simulator's mulberry32: the schedule is the seed's.
  const next = seededRandom(seed);
  // The first four in a seeded order, then shutdown and resuming (a resume needs an earlier kill to leave jobs unfinished).
  const must = [...MUST.slice(0, 4).sort(() => next() - 0.5), ...MUST.slice(4)];
  const kinds = Array.from({ length: kills }, (_, i) => (i < must.length ? must[i]! : ANY[Math.floor(next() * ANY.length)]!));
  // Start-up kinds at their first occurrence (there is one per start); the others at the 1st to 3rd.
  return kinds.map((kind) => ({ kind, nth: ['starting', 'locked', 'banner', 'resuming', 'shutdown'].includes(kind) ? 1 : 1 + Math.floor(next() * 3) }));
}

export async function runChaos(options: ChaosOptions): Promise<ChaosFigures> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const deadline = started + (options.timeoutMs ?? 300_000);
  const batches = Math.max(1, options.batches ?? 4);
  const failOnceEvery = options.failOnceEvery ?? 4;
  const schedule = chaosSchedule(options.kills, options.seed);
  log(`chaos: ${options.jobs} inputs in ${batches} batches, seed ${options.seed}, kill schedule: ${schedule.map((k) => `${k.kind}#${k.nth}`).join(', ') || 'none'}`);

  const work = await mkdtemp(path.join(tmpdir(), 'mapflow-chaos-'));
  const stateDir = path.join(work, 'state');
  const outDir = path.join(work, 'out');
  const dropDir = path.join(stateDir, 'drop');
  await mkdir(dropDir, { recursive: true });
  const token = `chaos-${randomBytes(12).toString('hex')}`;
  const email = 'chaos@mapflow-bridge.invalid';
  const simulatorDir = path.join(work, 'simulator');
  const simulator = await startSimulator({
    token,
    email,
    seed: options.seed,
    faultRate: options.faultRate ?? 0.2,
    dropAfterCommit: options.dropAfterCommit ?? 0.1,
    processingSeconds: 1,
    dataDir: simulatorDir,
  });
  let dynamodb: DynamoDbLocal | undefined;
  let child: ChildProcess | undefined;
  try {
    if (!options.dynamodbEndpoint) dynamodb = await startDynamoDbLocal({ inMemory: true, startTimeoutMs: 180_000 });
    const dynamodbEndpoint = options.dynamodbEndpoint ?? dynamodb!.endpoint;

    // Inputs: small AOIs; every failOnceEvery-th fails its first processing with a transient code.
    const inputs: string[] = [];
    const batchFiles: { name: string; text: string }[][] = Array.from({ length: batches }, () => []);
    for (let i = 0; i < options.jobs; i++) {
      const name = `chaos-${String(i).padStart(3, '0')}.geojson`;
      const aoi = JSON.parse(squareAoiText(name, 6 + (i % 10) * 0.05, 46 + Math.floor(i / 10) * 0.05)) as Record<string, unknown>;
      if (failOnceEvery > 0 && i % failOnceEvery === failOnceEvery - 1) aoi.mapflow = { meta: { simulate: 'fail-once:dataloader.TileNotReadable' } };
      batchFiles[Math.floor((i * batches) / options.jobs)]!.push({ name, text: JSON.stringify(aoi) });
      inputs.push(`inbox/${name}`);
    }
    const droppedKeys: string[] = [];
    const dropBatch = async (b: number) => {
      for (const file of batchFiles[b] ?? []) {
        await writeFile(path.join(dropDir, file.name), file.text);
        droppedKeys.push(`inbox/${file.name}`);
      }
    };

    const args = [
      CLI, 'start', '--state-dir', stateDir, '--out', outDir,
      '--mapflow-url', simulator.url, '--token', token, '--email', email,
      '--dynamodb-endpoint', dynamodbEndpoint, ...(options.ledgerTable ? ['--ledger-table', options.ledgerTable] : []), '--s3-port', '0',
      '--poll-policy', '{"initialSeconds":1,"maxSeconds":3,"maxJobSeconds":3600,"nearEndSeconds":1}',
      '--drop-stable-seconds', '0.2', '--no-samples', '--no-console',
    ];
    let starts = 0;
    let kills = 0;
    const killedAt: string[] = [];
    /** Ctrl-C as a terminal sends it: SIGINT to the running start's whole process group. */
    const interrupt = () => {
      if (!child?.pid) return;
      try {
        process.kill(-child.pid, 'SIGINT');
      } catch {
        // gone
      }
    };
    let lastOutput: string[] = [];
    const allOutput: string[] = [];
    /** One start; resolves with its output once `until` says stop (then SIGKILL or SIGTERM) or it exits. */
    const run = async (until: (line: string, file: string | undefined, stop: () => void) => boolean, signal: 'SIGKILL' | 'SIGTERM'): Promise<{ killed: boolean; output: string[] }> => {
      starts++;
      const output: string[] = [];
      const proc = spawn(process.execPath, args, {
        cwd: work,
        detached: true, // its own process group: the kill takes s3rver with it
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR', NO_COLOR: '1' },
      });
      child = proc;
      const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
      let killed = false;
      const stop = () => {
        if (killed || proc.exitCode !== null) return;
        killed = true;
        try {
          process.kill(-(proc.pid as number), signal);
        } catch {
          // already gone
        }
      };
      const onLine = (line: string) => {
        output.push(line);
        allOutput.push(line);
        if (until(line, undefined, stop)) stop();
      };
      createInterface({ input: proc.stdout! }).on('line', onLine);
      createInterface({ input: proc.stderr! }).on('line', onLine);
      const watcher = watch(stateDir, (_, file) => {
        if (file && until('', file, stop)) stop();
      });
      const timer = setTimeout(stop, Math.max(1, deadline - Date.now()));
      try {
        await exited;
      } finally {
        clearTimeout(timer);
        watcher.close();
        child = undefined;
      }
      lastOutput = output;
      if (!killed && signal === 'SIGKILL') log(`chaos: start ${starts} exited by itself: ${output.slice(-5).join(' | ')}`);
      return { killed, output };
    };

    // Whether every input has a final event (read from the events file: the bridge's own record).
    const eventsFile = path.join(stateDir, 'events.jsonl');
    const allFinal = async (keys: string[] = inputs) => {
      const events = await readEvents(eventsFile).catch(() => []);
      const done = new Set(events.filter((e) => ['Job Succeeded', 'Job Failed', 'Job Rejected'].includes(e.detailType)).map((e) => e.detail.input.key));
      return keys.every((key) => done.has(key));
    };

    let dropped = 0;
    for (const [index, point] of schedule.entries()) {
      if (Date.now() > deadline) throw new Error('chaos: the run took longer than its bound');
      // The batches spread over the schedule; a kill whose point does not come once all is done falls at idle.
      while (dropped < batches && dropped * schedule.length <= index * batches) await dropBatch(dropped++);
      let seen = 0;
      const pattern = point.kind === 'locked' ? undefined : LINES[point.kind];
      let done = false;
      let interrupted = false;
      const result = await run((line, file, stop) => {
        if (done) return true;
        // shutdown: Ctrl-C at the first Job Received of this start, then the kill at the line saying it stops.
        if (point.kind === 'shutdown' && !interrupted && /Job Received/.test(line)) {
          interrupted = true;
          interrupt();
        }
        const hit = point.kind === 'locked' ? file === 'bridge.lock' : line !== '' && pattern!.test(line);
        if (hit && ++seen >= point.nth) done = true;
        // A kill point that cannot come any more (all dropped so far is done): kill now.
        if (!done && /Job (Succeeded|Failed|Rejected)|Waiting for files/.test(line)) void allFinal(droppedKeys).then((all) => all && stop());
        return done;
      }, 'SIGKILL');
      if (result.killed) {
        kills++;
        killedAt.push(seen >= point.nth ? `${point.kind}#${point.nth}` : 'idle');
        log(`chaos: kill ${kills} at ${seen >= point.nth ? `${point.kind}#${point.nth}` : `idle (${point.kind}#${point.nth} did not come)`} (start ${starts}, ${Math.round((Date.now() - started) / 1000)} s)`);
        // A point that did not come: what that start printed last, so a run where a planned kill fell at idle can be read.
        if (seen < point.nth) log(`chaos: start ${starts}'s last lines:\n${result.output.slice(-15).map((line) => `  | ${line}`).join('\n')}`);
      }
    }
    while (dropped < batches) await dropBatch(dropped++);

    // The last run: no kill, until every input is final; then one more start brings the output folder level.
    const standstills: ChaosFigures['standstills'] = [];
    let standstillsReported = 0;
    let submitted = 0;
    let standing: Promise<void> | undefined;
    await run((line, _file, stop) => {
      if (options.standstill && !standing && /Processing Submitted/.test(line) && ++submitted >= options.standstill.atSubmitted && child?.pid) {
        const seconds = options.standstill.seconds;
        standing = standStill(child.pid, seconds).then((functionProcesses) => {
          standstills.push({ seconds, functionProcesses });
          log(`chaos: the bridge stood still (SIGSTOP of its process group, ${functionProcesses} function process(es) with it) for ${seconds} s, then went on (SIGCONT)`);
        });
      }
      if (/stood still for \d+(\.\d+)? s/.test(line)) standstillsReported++;
      if (/Job (Succeeded|Failed|Rejected)|Waiting for files/.test(line)) void allFinal().then((all) => all && stop());
      return false;
    }, 'SIGTERM');
    await standing;
    if (!(await allFinal())) {
      // Which inputs, and every line any start printed about them: enough to tell a lost input from a stuck job.
      const events = await readEvents(eventsFile).catch(() => []);
      const done = new Set(events.filter((e) => ['Job Succeeded', 'Job Failed', 'Job Rejected'].includes(e.detailType)).map((e) => e.detail.input.key));
      const missing = inputs.filter((key) => !done.has(key));
      const names = missing.map((key) => path.basename(key));
      const about = allOutput.filter((line) => names.some((name) => line.includes(name)) || /resum|swept|sweep|crash|lock|final event/i.test(line));
      throw new Error(`chaos: not every input ended: ${missing.join(', ')}; what the starts printed about them:\n${about.slice(-60).join('\n')}\nlast output:\n${lastOutput.slice(-20).join('\n')}`);
    }
    let endpoints: { s3: string } | undefined;
    let audit: Omit<ChaosFigures, 'jobs' | 'seed' | 'schedule' | 'kills' | 'killedAt' | 'starts' | 'wallMs' | 'standstills' | 'standstillsReported'> | undefined;
    let auditError: unknown;
    await run((line, _file, stop) => {
      if (/Waiting for files/.test(line) && !audit) {
        void (async () => {
          endpoints = JSON.parse(await readFile(path.join(stateDir, 'endpoints.json'), 'utf8')) as { s3: string };
          audit = await auditRun(endpoints.s3, dynamodbEndpoint, options.ledgerTable ?? LOCAL_LEDGER_TABLE, inputs, outDir, eventsFile, stateDir);
        })().catch((error: unknown) => (auditError = error)).finally(stop);
      }
      return false;
    }, 'SIGTERM');
    if (auditError) throw auditError;
    if (!audit) throw new Error(`chaos: the last start did not come up; output:\n${lastOutput.slice(-20).join('\n')}`);
    const mapflow = await auditMapflow(simulator.url, token, email, simulatorDir);
    const wallMs = Date.now() - started;
    // Point 4 and point 1 at work: what the starts had to copy or dispatch (from their lines).
    const countOf = (pattern: RegExp) => allOutput.reduce((sum, line) => sum + Number(pattern.exec(line)?.[1] ?? 0), 0);
    const outputsCopiedAtStart = countOf(/(\d+) job\(s\) ended while no bridge copied/);
    const inputsSweptAtStart = countOf(/(\d+) file\(s\) in the inbox had no job yet/);
    const finalEventsOwedAtStart = countOf(/published the final event of (\d+) job\(s\)/);
    return {
      jobs: options.jobs,
      seed: options.seed,
      schedule,
      kills,
      killedAt,
      starts,
      ...audit,
      outputsCopiedAtStart,
      inputsSweptAtStart,
      finalEventsOwedAtStart,
      standstills,
      standstillsReported,
      duplicateProcessings: mapflow.duplicateProcessings,
      processings: mapflow.processings,
      wallMs,
    };
  } finally {
    if (child?.pid) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await simulator.close();
    await dynamodb?.close();
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * SIGSTOP of a start's whole process group (the bridge, s3rver, the function processes) for `seconds`, then
 * SIGCONT. Resolves with the number of function processes it stopped.
 */
async function standStill(groupId: number, seconds: number): Promise<number> {
  const functions = await functionProcessesOf(groupId);
  process.kill(-groupId, 'SIGSTOP');
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  process.kill(-groupId, 'SIGCONT');
  return functions;
}

/** The function processes (lambda-runtime.mjs) of a process group (Linux /proc; 0 elsewhere). */
async function functionProcessesOf(groupId: number): Promise<number> {
  if (process.platform !== 'linux') return 0;
  let count = 0;
  for (const pid of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    // Fields after the command's closing parenthesis: state, ppid, pgrp.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === groupId && cmdline.includes('lambda-runtime')) count++;
  }
  return count;
}

/** The ledger, the bucket, the output folder and the events of a finished run. */
async function auditRun(s3Endpoint: string, dynamodbEndpoint: string, ledgerTable: string, inputs: string[], outDir: string, eventsFile: string, stateDir: string) {
  // The bridge's S3 answers only the credentials it issued; the DynamoDB Local started here has no gate.
  const credentials = await readCredentialsFile(stateDir);
  if (!credentials) throw new Error(`no credentials.json in ${stateDir}: the bridge never started`);
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: dynamodbEndpoint, region: 'us-east-1', credentials }));
  const s3 = localS3Client(s3Endpoint, credentials);
  try {
    const rows: LedgerRow[] = [];
    for await (const row of scanJobs(doc, ledgerTable)) rows.push(row);
    const byKey = new Map<string, LedgerRow[]>();
    for (const row of rows) byKey.set(row.input.key, [...(byKey.get(row.input.key) ?? []), row]);
    const events = await readEvents(eventsFile);
    const finalStates: Record<string, number> = {};
    const missingInS3: string[] = [];
    const missingInOutputFolder: string[] = [];
    const finalEventProblems: string[] = [];
    for (const row of rows) {
      const state = row.status === 'SUCCEEDED' ? row.status : `${row.status}${row.error?.code ? ` ${row.error.code}` : ''}`;
      finalStates[state] = (finalStates[state] ?? 0) + 1;
      const finals = finalEventsOf(events, row.jobId);
      if (finals.length !== 1 || finals[0]!.detail.status !== row.status) finalEventProblems.push(`${row.input.key}: ${finals.length} final events (${finals.map((e) => e.detail.status).join(', ')}), ledger ${row.status}`);
      if (row.status !== 'SUCCEEDED') continue;
      const page = await s3.send(new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: row.resultPrefix }));
      const keys = (page.Contents ?? []).map((object) => ({ key: object.Key!, size: object.Size ?? 0 }));
      if (!keys.some((object) => object.key.endsWith('/result.geojson'))) missingInS3.push(row.input.key);
      for (const object of keys) {
        const size = await stat(outputPath(outDir, row.jobId, object.key)).then((info) => info.size, () => undefined);
        if (size !== object.size) {
          missingInOutputFolder.push(`${row.input.key}: ${object.key}`);
          break;
        }
      }
    }
    return {
      finalStates,
      inputsWithoutExactlyOneJob: inputs.filter((key) => (byKey.get(key) ?? []).length !== 1),
      unfinishedJobs: rows.filter((row) => !isFinalStatus(row.status)).map((row) => row.input.key),
      restartedJobs: rows.filter((row) => (row.parts ?? []).some((part) => (part.attempts ?? 1) > 1)).length,
      finalEventProblems,
      missingInS3,
      missingInOutputFolder,
      outputsCopiedAtStart: 0,
      inputsSweptAtStart: 0,
      finalEventsOwedAtStart: 0,
      duplicateProcessings: 0,
      processings: 0,
    };
  } finally {
    doc.destroy();
    s3.destroy();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '24' },
      kills: { type: 'string', default: '7' },
      seed: { type: 'string', default: '1' },
      batches: { type: 'string', default: '4' },
    },
  });
  const figures = await runChaos({
    jobs: Number(values.jobs),
    kills: Number(values.kills),
    seed: Number(values.seed),
    batches: Number(values.batches),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  const broken = figures.inputsWithoutExactlyOneJob.length + figures.unfinishedJobs.length + figures.duplicateProcessings + figures.missingInS3.length + figures.missingInOutputFolder.length;
  process.exitCode = broken > 0 ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    process.stderr.write(`chaos run failed: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  });
}
