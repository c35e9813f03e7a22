/**
 * `mapflow-bridge start` (npm start): the whole bridge on this machine, on
 * embedded services, until Ctrl-C.
 *
 * - state in .local/ (S3 objects, the ledger, the simulator's data, events), kept across restarts;
 * - files copied into .local/drop/ are uploaded to inbox/<same path> (a sub-folder picks the route);
 * - on the first run the bundled samples are dropped so the pipeline can be seen working;
 * - one line per job event, a progress bar while Mapflow processes (redrawn in
 *   place on a terminal, see live.ts), and the local paths of the results once
 *   a job is final; every line starts with the time;
 * - one bridge per state folder (state-lock.ts): a second start on the same
 *   folder says which process holds it and exits 2;
 * - the local S3 listens on the same port every time (DEFAULT_S3_PORT, or
 *   --s3-port), so saved AWS CLI commands keep working.
 */
import { LOCAL_AWS } from '@mapflow-bridge/local/auth/account';
import { CREDENTIALS_FILE } from '@mapflow-bridge/local/auth/credentials';
import { access, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isFinalStatus, type JobStatus, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { DEFAULT_CONSOLE_PORT, DEFAULT_STATE_DIR, ENDPOINTS_FILE, recordSimulatorAccess } from './state-dir.ts';
export { DEFAULT_STATE_DIR, ENDPOINTS_FILE } from './state-dir.ts';
import { copyInto, runningRoutes, startLocalBridge, type LocalBridge, type MapflowTarget } from '@mapflow-bridge/local/bridge';
import type { LocalEvent } from '@mapflow-bridge/local/events/file';
import { DEFAULT_STABLE_MS } from '@mapflow-bridge/local/s3/drop-folder';
import { StateDirLockedError } from '@mapflow-bridge/local/state-lock';
import { BRIDGE_OPTIONS, bridgeChoice, integerOption, OPTIONS, positiveOption, runCommand, usageOf, type BridgeChoice, type CliOptions, type CommandLine, type OptionValues } from './args.ts';
import { createLiveOutput, type LiveOutput } from './live.ts';
import { copyJobOutputs } from './outputs.ts';
import { levelOutputFolder } from './output-level.ts';
import { costOf, formatCost, formatError, formatRouteBudgets, inputName, printable, progressBar } from './format.ts';
import { checkMapflow, preflight, waitForMapflow } from './preflight.ts';
import { startOperatorServices } from './console/command.ts';

const SAMPLES_MARKER = 'samples-dropped';
/** The samples shipped with the local package (its samples/ folder). */
const SAMPLES_DIR = path.join(path.dirname(createRequire(import.meta.url).resolve('@mapflow-bridge/local/package.json')), 'samples');
/**
 * The local S3's port unless --s3-port says otherwise: s3rver's own default, so
 * an endpoint a user saved (aws --endpoint-url ...) works after a restart.
 * When another program holds it, a free port is used and the banner says so.
 */
export const DEFAULT_S3_PORT = 4568;

/**
 * start's exit statuses, as its --help and docs/local.md say them
 * (test/docs/commands.test.ts holds the three together). A signal gives
 * 128 + its number, as a shell reports it (and npm start, which gets the same SIGINT).
 */
export const START_EXIT_CODES = { interrupted: 130, terminated: 143, cannotStart: 1, usage: 2 } as const;

export const START_COMMAND = {
  name: 'start',
  synopsis: `Usage: mapflow-bridge start [options]     (npm start)

Runs the whole bridge locally until Ctrl-C: the Mapflow simulator, a local S3
(s3rver), DynamoDB Local and the state machine. Copy GeoJSON or GeoTIFF files
into the drop folder (or put them under inbox/ with any S3 client) and watch
the jobs go through.`,
  options: {
    'state-dir': { ...OPTIONS['state-dir'], help: `where state is kept (default ./${DEFAULT_STATE_DIR}; delete it to start afresh)` },
    ...BRIDGE_OPTIONS,
    'processing-seconds': { ...OPTIONS['processing-seconds'], help: 'how long a simulated processing takes (default 20)' },
    's3-port': {
      type: 'string',
      value: '<port>',
      help: `port of the local S3 (default ${DEFAULT_S3_PORT}; when it is taken,\na free one is used and the banner says which; 0: a free one)`,
    },
    'drop-stable-seconds': {
      type: 'string',
      value: '<n>',
      help: `upload a dropped file once it has not changed for this long\nand no program holds it open (default ${DEFAULT_STABLE_MS / 1000})`,
    },
    'no-samples': { type: 'boolean', help: 'do not drop the bundled samples on the first run' },
    console: { type: 'boolean', label: '--console, --no-console', help: 'serve the jobs console on 127.0.0.1 (default on; its URL is in the banner)' },
    'no-console': { type: 'boolean', hidden: true, help: 'do not serve the jobs console' },
    'console-port': {
      type: 'string',
      value: '<port>',
      help: `its port (default ${DEFAULT_CONSOLE_PORT}; when it is taken,\na free one is used and the banner says which)`,
    },
    verbose: { ...OPTIONS.verbose, help: "show the handlers' logs (and plain lines instead of live progress)" },
    help: OPTIONS.help,
  },
  epilogue: `Exit status: ${START_EXIT_CODES.interrupted} after Ctrl-C (SIGINT) and ${START_EXIT_CODES.terminated} after SIGTERM, once stopped
(as a shell, and npm start, report a signal), ${START_EXIT_CODES.cannotStart} when the bridge cannot start
or cannot stop cleanly, ${START_EXIT_CODES.usage} on a usage error or when another bridge runs on the
same state folder.`,
} as const satisfies CommandLine<CliOptions>;

export const START_USAGE = usageOf(START_COMMAND);

interface StartOptions extends BridgeChoice {
  stateDir: string;
  processingSeconds: number;
  /** Set by --s3-port: that port or fail. */
  s3Port?: number;
  dropStableMs: number;
  samples: boolean;
  verbose: boolean;
  /** The jobs console (packages/cli/src/console), on by default. */
  console: boolean;
  consolePort?: number;
}

export async function runStartCommand(args: string[]): Promise<number> {
  return runCommand(START_COMMAND, args, async ({ values }) => {
    const options = await startOptions(values);
    if (!preflight({ java: !options.dynamodbEndpoint })) return 1;
    const mapflow = await checkMapflow(options.mapflow, { budgetMs: options.mapflowWaitMs });
    if (!mapflow.usable) return 1;
    return serve(options, mapflow.degraded);
  });
}

async function startOptions(values: OptionValues<typeof START_COMMAND.options>): Promise<StartOptions> {
  const bridge = await bridgeChoice(values);
  // 0: a free port, every start another (tests and chaos runs, which must not take the fixed default).
  const s3Port = values['s3-port'] === undefined ? undefined : integerOption(values['s3-port'], '--s3-port', 0, 65_535);
  const dropStableMs = values['drop-stable-seconds'] === undefined ? DEFAULT_STABLE_MS : positiveOption(values['drop-stable-seconds'], '--drop-stable-seconds') * 1000;
  return {
    ...bridge,
    stateDir: path.resolve(values['state-dir'] ?? DEFAULT_STATE_DIR),
    processingSeconds: bridge.processingSeconds ?? 20,
    ...(s3Port !== undefined ? { s3Port } : {}),
    dropStableMs,
    samples: !values['no-samples'],
    verbose: values.verbose ?? false,
    console: !values['no-console'],
    ...(values['console-port'] !== undefined ? { consolePort: integerOption(values['console-port'], '--console-port', 0, 65_535) } : {}),
  };
}

async function serve(options: StartOptions, degraded?: string): Promise<number> {
  if (!options.verbose) process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
  // The handlers' logs (--verbose) write straight to stdout: live redraws would garble them.
  const out = createLiveOutput(options.verbose ? { live: false } : {});
  const say = (message: string) => out.line(message);
  say(`Starting mapflow-bridge locally (state in ${options.stateDir}) ...`);

  const progress = new JobProgress(out, options.outDir);
  // Started degraded (Mapflow answered only faults): new jobs wait until it answers again.
  const held = holdWhileDegraded(options.mapflow, degraded, say);
  let bridge: LocalBridge;
  // Ctrl-C and SIGTERM are ours from here on: while the bridge starts, it may
  // already take jobs (resumed, swept from the inbox), and a signal's default
  // (the process dies at once) would cut them mid-step, as a kill -9 does. A
  // signal before the bridge is ready stops it as soon as it is; a second one
  // later than a moment after the first forces, as during any stop.
  let early: { signal: 'Ctrl-C' | 'SIGTERM'; at: number } | undefined;
  const onEarlySignal = (signal: 'Ctrl-C' | 'SIGTERM') => () => {
    if (early && Date.now() - early.at >= 1_500) {
      say('Stopping now.');
      process.exit(130);
    }
    if (early) return;
    early = { signal, at: Date.now() };
    say(`${signal}: stopping as soon as the bridge has started (jobs in flight resume on the next start; Ctrl-C again to force) ...`);
  };
  const earlyInterrupt = onEarlySignal('Ctrl-C');
  const earlyTerminate = onEarlySignal('SIGTERM');
  process.on('SIGINT', earlyInterrupt);
  process.on('SIGTERM', earlyTerminate);
  const releaseEarlySignals = () => {
    process.off('SIGINT', earlyInterrupt);
    process.off('SIGTERM', earlyTerminate);
  };
  // A service the bridge supervises died for good (packages/local/src/supervisor.ts): stop as Ctrl-C does, exit 1.
  let serviceLost: ((message: string) => void) | undefined;
  let lostBeforeReady: string | undefined;
  try {
    bridge = await startLocalBridge({
      stateDir: options.stateDir,
      command: 'mapflow-bridge start',
      restartCommand: `npx mapflow-bridge start --state-dir ${options.stateDir}`,
      onServiceLost: (message) => {
        say(message);
        if (serviceLost) serviceLost(message);
        else lostBeforeReady = message;
      },
      // A long-running bridge: the first dropped file should not meet a cold start at every step.
      prewarm: true,
      ...(options.mapflow ? { mapflow: options.mapflow } : {}),
      simulator: { processingSeconds: options.processingSeconds },
      ...(options.routes ? { routes: options.routes } : {}),
      ...(options.creditBudget !== undefined ? { creditBudget: options.creditBudget } : {}),
      ...(options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {}),
      ...(options.ledgerTable ? { ledgerTable: options.ledgerTable } : {}),
      ...(options.pollPolicy ? { pollPolicy: options.pollPolicy } : {}),
      ...(options.memoryBudgetMb !== undefined ? { environmentBudget: { totalMb: options.memoryBudgetMb } } : {}),
      ...(options.injectFaults ? { injectFaults: options.injectFaults } : {}),
      // --s3-port: that port or nothing; by default the usual port, or a free one when it is taken.
      s3Port: options.s3Port ?? DEFAULT_S3_PORT,
      s3PortFallback: options.s3Port === undefined,
      dropStableMs: options.dropStableMs,
      log: (message) => say(message),
      onEvent: (event) => progress.onEvent(event),
      ...(held ? { dispatchAfter: held.answered } : {}),
    });
  } catch (error) {
    releaseEarlySignals();
    held?.stop();
    out.stop();
    if (error instanceof StateDirLockedError) {
      console.error(`mapflow-bridge start: ${error.message}`);
      return START_EXIT_CODES.usage;
    }
    console.error(`Cannot start the local bridge: ${(error as Error).message}`);
    return START_EXIT_CODES.cannotStart;
  }
  progress.attach(bridge);
  const operators = await startOperatorServices(bridge, options.stateDir, {
    console: options.console,
    ...(options.consolePort !== undefined ? { consolePort: options.consolePort } : {}),
    log: say,
  });
  const endpointsFile = path.join(options.stateDir, ENDPOINTS_FILE);
  await writeFile(endpointsFile, JSON.stringify({ ...bridge.endpoints, bucket: bridge.bucket, ledgerTable: bridge.ledgerTable, pid: process.pid }, null, 2));
  // doctor --local checks the embedded simulator with its token (random per start) from here; 0600, removed at stop.
  const accessFile = await recordSimulatorAccess(options.stateDir, bridge);

  say(
    [
      '',
      `  S3 endpoint   ${bridge.endpoints.s3}   (path-style; region ${LOCAL_AWS.region}; it answers only requests signed with these keys)`,
      `  credentials   AWS_ACCESS_KEY_ID=${bridge.credentials.accessKeyId} AWS_SECRET_ACCESS_KEY=${bridge.credentials.secretAccessKey}`,
      `                (issued by this bridge for its local endpoints only; kept in ${path.join(options.stateDir, CREDENTIALS_FILE)}, mode 0600)`,
      `  bucket        ${bridge.bucket}   (drop under inbox/, results under results/, reports under failed/)`,
      `  drop folder   ${bridge.dropDir}${path.sep}   (it is the inbox: a file copied here goes to inbox/<same path>)`,
      `                buildings/ runs the Buildings model on GeoTIFFs; a leading inbox/ folder is not doubled;`,
      `                a file goes up once unchanged for ${options.dropStableMs / 1000} s and closed by the program writing it`,
      `  Mapflow       ${options.mapflow ? options.mapflow.url : `simulator at ${bridge.endpoints.mapflow}`}`,
      `  budgets       ${formatRouteBudgets(runningRoutes(bridge))}`,
      `                (a job over its route's budget ends REJECTED BUDGET_EXCEEDED, as deployed; km² on an area-billed account;`,
      `                ${options.creditBudget !== undefined ? `--credit-budget ${options.creditBudget} given` : `--credit-budget <n> or a routes file's creditBudget to change`})`,
      ...(held?.pending() ? [`  DEGRADED      ${degraded}: new jobs wait until it answers`] : []),
      `  results       copied to ${options.outDir}${path.sep}`,
      `  events        ${bridge.eventsFile}`,
      ...(operators.consoleUrl ? [`  console       ${operators.consoleUrl}   (jobs, results on a map; this machine only)`] : []),
      '',
    ].join('\n'),
  );

  await levelOutputs(bridge, options.outDir, say);
  if (options.samples) await dropSamplesOnce(bridge, options.stateDir, say);

  return new Promise<number>((resolve) => {
    let stoppingSince: number | undefined;
    const stop = (signal: 'Ctrl-C' | 'SIGTERM' | 'a service lost') => {
      if (stoppingSince !== undefined) {
        // npm (and `timeout`) forward the terminal's SIGINT to us as well: a
        // second signal within a moment is the same Ctrl-C, not a request to force.
        if (Date.now() - stoppingSince < 1_500) return;
        say('Stopping now.');
        process.exit(130);
      }
      stoppingSince = Date.now();
      progress.stop();
      held?.stop();
      say(`${signal}: stopping (jobs in flight resume on the next start; Ctrl-C again to force) ...`);
      // endpoints.json goes before the state folder is unlocked: once it is, another start may write its own.
      removeOwnEndpoints(endpointsFile)
        .then(() => (accessFile ? rm(accessFile, { force: true }) : undefined))
        .then(() => operators.close())
        .then(() => bridge.close())
        .then(
          () => {
            say('Stopped. State is kept in ' + options.stateDir);
            out.stop();
            resolve(signal === 'Ctrl-C' ? START_EXIT_CODES.interrupted : signal === 'SIGTERM' ? START_EXIT_CODES.terminated : START_EXIT_CODES.cannotStart);
          },
          (error: unknown) => {
            out.stop();
            console.error(`Error while stopping: ${(error as Error).message}`);
            resolve(1);
          },
        );
    };
    releaseEarlySignals();
    process.on('SIGINT', () => stop('Ctrl-C'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    serviceLost = () => stop('a service lost');
    if (early) {
      // Asked to stop while starting: the stop begins now, and counts as begun when the signal came.
      stop(early.signal);
      stoppingSince = early.at;
      return;
    }
    // Said once Ctrl-C and SIGTERM are handled: a signal sent on this line (a script, a test) stops the bridge cleanly.
    say('Waiting for files. Press Ctrl-C to stop.');
    if (lostBeforeReady !== undefined) stop('a service lost');
  });
}

/** While degraded: asks Mapflow until it answers; `answered` resolves then (or on stop). */
function holdWhileDegraded(
  target: MapflowTarget | undefined,
  degraded: string | undefined,
  say: (message: string) => void,
): { answered: Promise<void>; pending: () => boolean; stop: () => void } | undefined {
  if (!target || !degraded) return undefined;
  const abort = new AbortController();
  let pending = true;
  const answered = waitForMapflow(target, abort.signal).then(() => {
    pending = false;
    if (!abort.signal.aborted) say('Mapflow answers again: the jobs held since the start go ahead.');
  });
  return { answered, pending: () => pending, stop: () => abort.abort() };
}

/** Copies the outputs of jobs that ended while no bridge could copy them (output-level.ts). */
async function levelOutputs(bridge: LocalBridge, outDir: string, say: (message: string) => void): Promise<void> {
  try {
    const level = await levelOutputFolder(bridge, outDir);
    if (level.copied.length > 0) {
      say(`${level.copied.length} job(s) ended while no bridge copied their outputs; copied now:`);
      for (const { row, files } of level.copied) say(`  ${inputName(row)}  ${row.status}: ${files.map((file) => printable(path.relative(process.cwd(), file) || file)).join(', ')}`);
    }
    for (const failure of level.failed) say(`cannot copy the outputs of job ${failure.jobId}: ${printable(failure.message)} (tried again on the next start)`);
  } catch (error) {
    say(`cannot bring ${outDir} level with the ledger: ${(error as Error).message} (tried again on the next start)`);
  }
}

/** Removes endpoints.json when it is this process's (never another bridge's). */
async function removeOwnEndpoints(file: string): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return;
  try {
    if ((JSON.parse(text) as { pid?: number }).pid !== process.pid) return;
  } catch {
    // unreadable: ours was written whole, so this is not ours either
    return;
  }
  await rm(file, { force: true });
}

/** The first start drops the bundled GeoJSON and GeoTIFF into the drop folder. */
async function dropSamplesOnce(bridge: LocalBridge, stateDir: string, say: (message: string) => void): Promise<void> {
  const marker = path.join(stateDir, SAMPLES_MARKER);
  if (await access(marker).then(() => true, () => false)) return;
  const geojson = await copyInto(path.join(SAMPLES_DIR, 'bern-three-quarters.geojson'), bridge.dropDir);
  const geotiff = await copyInto(path.join(SAMPLES_DIR, 'cogeo.tif'), path.join(bridge.dropDir, 'buildings'));
  await mkdir(stateDir, { recursive: true });
  await writeFile(marker, `Samples dropped on ${new Date().toISOString()}. Delete this file to drop them again.\n`);
  // Relative to where the command runs, so the path opens from there (in a clone or an installed package).
  say(`First run: dropped the bundled samples (see ${path.relative(process.cwd(), path.join(SAMPLES_DIR, 'README.md'))}):`);
  say(`  ${path.relative(process.cwd(), geojson)}   three quarters of Bern -> Buildings over Mapbox imagery`);
  say(`  ${path.relative(process.cwd(), geotiff)}   an aerial GeoTIFF -> uploaded to a mosaic, then Buildings`);
  say('');
}

/**
 * Prints one line per event and keeps one progress line per job in flight
 * (its status, and a bar while Mapflow processes, read from the ledger). When
 * a job is final, copies its outputs and prints where they are.
 */
export class JobProgress {
  private bridge?: Pick<LocalBridge, 'ledger' | 's3' | 'bucket'>;
  private readonly watching = new Map<string, { name: string; status: JobStatus; percent?: number; cost?: number }>();
  private timer?: NodeJS.Timeout;
  private polling = false;

  constructor(
    private readonly out: LiveOutput,
    private readonly outDir: string,
  ) {}

  attach(bridge: Pick<LocalBridge, 'ledger' | 's3' | 'bucket'>): void {
    this.bridge = bridge;
    this.timer = setInterval(() => void this.poll(), 1_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    for (const jobId of this.watching.keys()) this.out.progress(jobId, undefined);
  }

  onEvent(event: LocalEvent): void {
    const { detail } = event;
    // The key is the user's file name: printable, so it cannot drive the terminal.
    const name = printable(detail.input.key.replace(/^inbox\//, ''));
    const at = new Date(event.time ?? detail.at);
    const extras = [
      // The job's percent (a part's own percent is in the event's message): say which it is.
      detail.percentCompleted !== undefined && !isFinalStatus(detail.status) ? `job ${detail.percentCompleted}%` : '',
      detail.actualCost !== undefined ? formatCost(detail.actualCost) : detail.estimatedCost !== undefined ? `${formatCost(detail.estimatedCost)} (est.)` : '',
      formatError(detail.error),
    ].filter(Boolean);
    if (isFinalStatus(detail.status)) {
      // Its live line goes first, so the final line does not come with a stale bar below it.
      this.watching.delete(detail.jobId);
      this.out.progress(detail.jobId, undefined);
    }
    this.out.line(`${name}  ${event.detailType}${extras.length ? `  (${extras.join(', ')})` : ''}`, Number.isNaN(at.getTime()) ? undefined : at);
    if (isFinalStatus(detail.status)) {
      void this.reportFinal(detail.jobId);
    } else {
      const job = this.watching.get(detail.jobId) ?? { name, status: detail.status };
      job.status = detail.status;
      job.percent = higher(job.percent, detail.percentCompleted);
      this.watching.set(detail.jobId, job);
      // In a pipe a progress line is printed only while Mapflow processes (as before); live, every job in flight has one.
      if (this.out.live || (isProcessing(job.status) && job.percent !== undefined)) this.show(detail.jobId);
    }
  }

  /** Reads the percentage of every job in flight from the ledger (the events carry none while Mapflow processes). */
  async poll(): Promise<void> {
    if (!this.bridge || this.polling) return;
    this.polling = true;
    try {
      for (const [jobId, job] of this.watching) {
        const row = await this.bridge.ledger.get(jobId).catch(() => undefined);
        if (!row || isFinalStatus(row.status) || !this.watching.has(jobId)) continue;
        const cost = costOf(row);
        if (row.status === job.status && row.percentCompleted === job.percent && cost === job.cost) continue;
        job.status = row.status;
        job.cost = cost;
        job.percent = higher(job.percent, row.percentCompleted);
        if (this.out.live || (isProcessing(job.status) && job.percent !== undefined)) this.show(jobId);
      }
    } finally {
      this.polling = false;
    }
  }

  private show(jobId: string): void {
    const job = this.watching.get(jobId);
    if (!job) return;
    const bar = isProcessing(job.status) && job.percent !== undefined ? ` ${progressBar(job.percent)}` : '';
    const cost = formatCost(job.cost);
    this.out.progress(jobId, `${job.name}  ${job.status.padEnd(11)}${bar}${cost ? `  ${cost}` : ''}`.trimEnd());
  }

  private async reportFinal(jobId: string): Promise<void> {
    if (!this.bridge) return;
    const row: LedgerRow | undefined = await this.bridge.ledger.get(jobId).catch(() => undefined);
    if (!row) return;
    try {
      const outputs = await copyJobOutputs(this.bridge.s3, this.bridge.bucket, row, this.outDir);
      const lines = [...outputs.results, ...(outputs.report ? [outputs.report] : [])];
      if (lines.length === 0) return;
      this.out.line([`${inputName(row)}  ${row.status}: ${row.status === 'SUCCEEDED' ? 'results' : 'report'} in`, ...lines.map((line) => `  ${printable(line)}`)].join('\n'));
    } catch (error) {
      this.out.line(`${inputName(row)}: cannot copy the outputs: ${printable((error as Error).message)}`);
    }
  }
}

/** The bar never goes back: an event can carry an older percent than the ledger read a moment before. */
function higher(shown: number | undefined, next: number | undefined): number | undefined {
  return next === undefined ? shown : shown === undefined ? next : Math.max(shown, next);
}

function isProcessing(status: JobStatus): boolean {
  return status === 'SUBMITTED' || status === 'IN_PROGRESS' || status === 'UPLOADING';
}
