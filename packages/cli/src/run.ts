/**
 * `mapflow-bridge local run [options] FILE...`: one shot through the whole
 * local pipeline. Starts what it needs with throw-away state, drops every FILE
 * into the inbox under its base name (or under --prefix, or the key a
 * `KEY=FILE` argument names, as a drop into a route's folder would), waits
 * until every job is final, copies the results to the output folder and
 * prints a summary.
 *
 * Exit codes: 0 every job SUCCEEDED and its outputs were copied, 1 any job did
 * not, or its outputs could not be copied (outputsNotCopied), 2 usage error.
 * With --json, stdout carries exactly one JSON document; every log goes to stderr.
 */
import { mkdtemp, readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isFinalStatus, type InputKind, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { fileNameFromBytes, invalidKeyRejection, keyProblem, recordedKind } from 'mapflow-bridge/functions/routing/index.ts';
import { printable } from 'mapflow-bridge/functions/core/text.ts';
import { LocalBridgeTimeout, runningRoutes, startLocalBridge, type LocalBridge } from '@mapflow-bridge/local/bridge';
import { copyJobOutputs, DEFAULT_OUTPUT_DIR, OutputConflict } from './outputs.ts';
import { clock, costOf, formatCost, formatError, formatRouteBudgets, routeBudget, table } from './format.ts';
import { checkMapflow, preflight } from './preflight.ts';
import { BRIDGE_OPTIONS, bridgeChoice, OPTIONS, positiveOption, runCommand, usageOf, UsageError, type BridgeChoice, type CliOptions, type CommandLine, type OptionValues } from './args.ts';

/**
 * local run's exit statuses, as its --help and docs/local.md say them
 * (test/docs/commands.test.ts holds the three together); a signal gives 128 + its number.
 */
export const RUN_EXIT_CODES = { succeeded: 0, notAll: 1, usage: 2, interrupted: 130, hangup: 129, terminated: 143 } as const;

export const LOCAL_RUN_COMMAND = {
  name: 'local run',
  synopsis: `Usage: mapflow-bridge local run [options] FILE...

Runs every FILE (GeoJSON .geojson/.json, GeoTIFF .tif/.tiff) through the local
pipeline once, on throw-away state, and prints a summary. Each FILE lands at
inbox/<name>, where a drop at the inbox root lands; --prefix, or a KEY=FILE
argument, puts it where a drop into a route's folder would:
  mapflow-bridge local run --prefix buildings/ photo.tif    -> inbox/buildings/photo.tif
  mapflow-bridge local run buildings/=photo.tif area.geojson -> inbox/buildings/photo.tif, inbox/area.geojson
  mapflow-bridge local run buildings/2024/a.tif=photo.tif    -> inbox/buildings/2024/a.tif`,
  options: {
    json: { ...OPTIONS.json, help: 'print only a JSON document on stdout (logs go to stderr)' },
    ...BRIDGE_OPTIONS,
    out: { ...OPTIONS.out, help: `where result copies are written, a folder per job id (default ./${DEFAULT_OUTPUT_DIR})` },
    overwrite: { type: 'boolean', help: "replace a job's folder under --out that another ledger (npm start) still points at" },
    prefix: {
      type: 'string',
      value: '<folder/>',
      help: 'put every FILE under inbox/<folder/> (the route of that folder runs, e.g.\nbuildings/ runs Buildings on a GeoTIFF); KEY=FILE sets one file\'s own key',
    },
    'processing-seconds': { ...OPTIONS['processing-seconds'], help: 'how long a simulated processing takes (default 5)' },
    timeout: { type: 'string', value: '<seconds>', help: 'give up waiting after this long (default 900)' },
    'keep-state': {
      type: 'boolean',
      help: "keep the run's state folder (S3 objects, ledger, events) and print where it is;\nby default it is removed when the run ends or is stopped (Ctrl-C, SIGTERM)",
    },
    assembly: {
      type: 'string',
      value: '<dir>',
      help: 'run this synthesized cloud assembly (`npx cdk synth -o <dir>` of an app with a\nMapflowBridge) instead of the bridge\'s own; its routes and poll policy apply',
    },
    verbose: { ...OPTIONS.verbose, help: "show the functions' logs (on stderr)" },
    help: OPTIONS.help,
  },
  epilogue: [
    `Exit status: ${RUN_EXIT_CODES.succeeded} when every job SUCCEEDED and its outputs were copied, ${RUN_EXIT_CODES.notAll} when any did`,
    "not, or when its outputs were not copied (--out holds another run's: see",
    `outputsNotCopied), ${RUN_EXIT_CODES.usage} on a usage error, ${RUN_EXIT_CODES.interrupted} when stopped by Ctrl-C (${RUN_EXIT_CODES.terminated} SIGTERM, ${RUN_EXIT_CODES.hangup} SIGHUP).`,
    'Outputs go to <out>/<job id>/results/<path>/<name>/ (failed/<path>/<name>/report.json',
    'for a job that did not succeed), <path>/<name> being the key below the inbox.',
  ].join('\n'),
  allowPositionals: true,
} as const satisfies CommandLine<CliOptions>;

export const LOCAL_RUN_USAGE = usageOf(LOCAL_RUN_COMMAND);

export type FinalStatus = 'SUCCEEDED' | 'FAILED' | 'REJECTED';
/** UNFINISHED: still running or waiting when --timeout ran out (not stopped, not failed). */
export type RunStatus = FinalStatus | 'UNFINISHED';

/** Files uploaded at once by `local run` (bounded: each upload holds a file handle and a socket). */
export const DROP_CONCURRENCY = 8;

/** One entry of the JSON output. */
export interface RunJobSummary {
  file: string;
  /** Where the file was put: inbox/<prefix><name>, or the key of KEY=FILE. */
  key: string;
  jobId: string | null;
  kind: InputKind | null;
  status: RunStatus;
  /** UNFINISHED only: the job's last ledger status (null: not registered yet) and how long it was waited for. */
  lastStatus?: string | null;
  waitedSeconds?: number;
  processingId: string | null;
  mosaicId: string | null;
  imageId: string | null;
  cost: number | null;
  results: string[];
  report: string | null;
  error: { code: string; message: string } | null;
  /**
   * Set when the job's outputs were not copied: the job's folder under --out
   * holds another run's outputs (npm start's, whose ledger points at them).
   * The exit status is then 1.
   */
  outputsNotCopied: { reason: string; folder: string } | null;
}

/** A FILE and the key, relative to the inbox, it is put at. */
interface RunFile {
  file: string;
  key: string;
  /** The bytes of the file's path when its name is not UTF-8 (`file` then has U+FFFD for them). */
  raw?: Buffer;
}

interface RunOptions extends BridgeChoice {
  files: RunFile[];
  json: boolean;
  timeoutMs: number;
  verbose: boolean;
  keepState?: boolean;
  /** Replace job folders under outDir that another run (npm start's ledger) still points at. */
  overwrite?: boolean;
  /** --assembly: a cdk.out folder to run. */
  assembly?: string;
}

export async function runLocalCommand(args: string[]): Promise<number> {
  const [subcommand, ...rest] = args;
  if (subcommand === '--help' || subcommand === '-h' || subcommand === 'help') {
    console.log(LOCAL_RUN_USAGE);
    return 0;
  }
  if (subcommand !== 'run') {
    console.error(`mapflow-bridge local: unknown subcommand '${subcommand ?? ''}'\n\n${LOCAL_RUN_USAGE}`);
    return 2;
  }
  return runCommand(LOCAL_RUN_COMMAND, rest, async ({ values, positionals }) => {
    if (positionals.length === 0) {
      console.log(LOCAL_RUN_USAGE);
      return 2;
    }
    const options = await runOptions(values, positionals);
    if (!preflight({ java: !options.dynamodbEndpoint }) || !(await checkMapflow(options.mapflow, { budgetMs: options.mapflowWaitMs })).usable) return 1;
    return runFiles(options);
  });
}

async function runOptions(values: OptionValues<typeof LOCAL_RUN_COMMAND.options>, positionals: string[]): Promise<RunOptions> {
  const bridge = await bridgeChoice(values);
  const timeoutMs = (values.timeout === undefined ? 900 : positiveOption(values.timeout, '--timeout')) * 1000;
  // With --assembly the template's routes run: a budget given here would be silently ignored.
  if (values.assembly !== undefined && bridge.creditBudget !== undefined) throw new UsageError("--credit-budget does not apply with --assembly (the assembly's routes and their budgets run).");
  const prefix = values.prefix === undefined ? '' : prefixOption(values.prefix);
  const files: RunFile[] = [];
  const keys = new Map<string, string>();
  for (const argument of positionals) {
    const run = await runFileOf(argument, prefix);
    const { file, key } = run;
    const name = key.split('/').pop() ?? key;
    // The bridge ignores hidden files everywhere (editors' partial copies): no job would start.
    if (name.startsWith('.')) throw new UsageError(`'${printable(name)}' is a hidden file (its name starts with '.'), which the bridge ignores; rename it.`);
    const other = keys.get(key);
    if (other) throw new UsageError(`two files would land at inbox/${printable(key)} (${printable(other)} and ${printable(file)}); give one another key (KEY=FILE) or name.`);
    keys.set(key, file);
    files.push(run);
  }
  return {
    ...bridge,
    files,
    json: values.json ?? false,
    timeoutMs,
    verbose: values.verbose ?? false,
    keepState: values['keep-state'] ?? false,
    overwrite: values.overwrite ?? false,
    ...(values.assembly !== undefined ? { assembly: path.resolve(values.assembly) } : {}),
  };
}

/** --prefix: a folder below the inbox, ending in '/' (a leading inbox/ is not doubled, as in the drop folder). */
function prefixOption(text: string): string {
  const prefix = `${text.replace(/^\/+/, '').replace(/^inbox\//, '').replace(/\/+$/, '')}/`;
  if (prefix === '/') return '';
  const problem = invalidKeyRejection(`inbox/${prefix}x`);
  if (problem) throw new UsageError(`--prefix '${text}' cannot be a folder of the inbox: ${problem.message.replace(/^INVALID_KEY: /, '')}`);
  return prefix;
}

/**
 * One FILE argument: a file (put at <prefix><its name>), or KEY=FILE (put at
 * KEY, or at KEY<its name> when KEY ends in '/'). A file whose own name holds
 * '=' is taken as a file when it exists.
 */
async function runFileOf(argument: string, prefix: string): Promise<RunFile> {
  let whole = await stat(argument).catch(() => undefined);
  // A name that is not UTF-8 reaches argv with U+FFFD in place of its bytes: find the file by its bytes.
  const raw = whole ? undefined : await rawPathOf(path.resolve(argument));
  if (raw) whole = await stat(raw).catch(() => undefined);
  const split = argument.indexOf('=');
  if (whole || split < 0) {
    if (!whole) throw new UsageError(`no such file: ${printable(argument)}`);
    if (!whole.isFile()) throw new UsageError(`not a file: ${printable(argument)}`);
    const file = path.resolve(argument);
    // The key-safe name: a byte that is not UTF-8 is SUB and its hex (fileNameFromBytes), always INVALID_KEY.
    const name = raw ? fileNameFromBytes(raw.subarray(raw.lastIndexOf(0x2f) + 1)).name : path.basename(file);
    return { file, key: `${prefix}${name}`, ...(raw && { raw }) };
  }
  const destination = argument.slice(0, split).replace(/^\/+/, '').replace(/^inbox\//, '');
  const source = argument.slice(split + 1);
  const info = await stat(source).catch(() => undefined);
  if (!info) throw new UsageError(`no such file: ${source} (in ${argument})`);
  if (!info.isFile()) throw new UsageError(`not a file: ${source} (in ${argument})`);
  const file = path.resolve(source);
  const key = destination === '' || destination.endsWith('/') ? `${destination}${path.basename(file)}` : destination;
  return { file, key };
}

async function runFiles(options: RunOptions): Promise<number> {
  // File names and messages reach these lines: no control character goes to the terminal raw.
  const log = (message: string) => process.stderr.write(`${clock(new Date())}  ${printable(message)}\n`);
  // stdout is reserved for the result: whatever else writes there (the
  // handlers' structured logs) goes to stderr while the pipeline runs.
  const restoreStdout = redirectStdoutToStderr();
  const restoreLogLevel = options.verbose ? () => undefined : quietHandlerLogs();
  let bridge: LocalBridge | undefined;
  let summaries: RunJobSummary[];
  let budgets: RunBudget[] = [];
  // --keep-state: a folder of our own, which the bridge then treats as persistent and leaves in place.
  const keptState = options.keepState ? await mkdtemp(path.join(tmpdir(), 'mapflow-bridge-run-')) : undefined;
  let starting: Promise<LocalBridge> | undefined;
  // A signal stops the services and removes the throw-away state before exiting (kill -9 cannot be caught:
  // the children then stop themselves, but the state folder in the temporary directory stays).
  const onSignal = (signal: NodeJS.Signals) => {
    log(`local run: ${signal}, stopping${keptState ? '' : ' and removing the temporary state'}...`);
    const code = signal === 'SIGINT' ? RUN_EXIT_CODES.interrupted : signal === 'SIGHUP' ? RUN_EXIT_CODES.hangup : RUN_EXIT_CODES.terminated;
    void (starting ?? Promise.resolve(undefined))
      .then((running) => running?.close())
      .catch(() => undefined)
      .finally(() => process.exit(code));
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of signals) process.once(signal, onSignal);
  try {
    starting = startLocalBridge({
      ...(options.mapflow ? { mapflow: options.mapflow } : {}),
      simulator: { processingSeconds: options.processingSeconds ?? 5 },
      ...(options.routes !== undefined ? { routes: options.routes } : {}),
      ...(options.creditBudget !== undefined ? { creditBudget: options.creditBudget } : {}),
      ...(options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {}),
      ...(options.ledgerTable ? { ledgerTable: options.ledgerTable } : {}),
      ...(options.pollPolicy ? { pollPolicy: options.pollPolicy } : {}),
      ...(options.memoryBudgetMb !== undefined ? { environmentBudget: { totalMb: options.memoryBudgetMb } } : {}),
      ...(options.injectFaults ? { injectFaults: options.injectFaults } : {}),
      ...(keptState ? { stateDir: keptState, resumeUnfinished: false } : {}),
      ...(options.assembly ? { assembly: { dir: options.assembly } } : {}),
      ...(options.verbose ? { functionOutput: (chunk: Buffer) => void process.stderr.write(chunk) } : {}),
      dropFolder: false,
      reconcileIntervalMs: 0,
      log,
    });
    try {
      bridge = await starting;
    } catch (error) {
      // One line, as `start` says it, rather than a stack trace.
      log(`mapflow-bridge local run: cannot start the local bridge: ${(error as Error).message}`);
      return 1;
    }
    log(`local bridge: S3 ${bridge.endpoints.s3} bucket ${bridge.bucket}, Mapflow ${options.mapflow ? options.mapflow.url : 'simulator'}`);
    budgets = runningRoutes(bridge).map((route) => ({ route: route.name, prefix: route.prefix, ...routeBudget(route) }));
    log(`budgets: ${formatRouteBudgets(runningRoutes(bridge))}${options.creditBudget !== undefined ? ` (--credit-budget ${options.creditBudget})` : ' (as deployed; --credit-budget <n> to change)'}`);
    summaries = await runJobs(bridge, options, log);
  } finally {
    await bridge?.close();
    for (const signal of signals) process.off(signal, onSignal);
    restoreLogLevel();
    restoreStdout();
  }
  if (keptState) log(`local run: state kept in ${keptState} (S3 objects under s3/, the ledger under dynamodb/, events.jsonl)`);

  if (options.json) {
    process.stdout.write(`${JSON.stringify({ jobs: summaries, budgets }, null, 2)}\n`);
  } else {
    process.stdout.write(`${formatSummary(summaries, options.outDir, budgets)}\n`);
  }
  return runExitCode(summaries);
}

/** 0 when every job SUCCEEDED and its outputs were copied; else 1 (a skipped copy is never silent). */
export function runExitCode(summaries: readonly Pick<RunJobSummary, 'status' | 'outputsNotCopied'>[]): number {
  return summaries.every((job) => job.status === 'SUCCEEDED' && !job.outputsNotCopied) ? RUN_EXIT_CODES.succeeded : RUN_EXIT_CODES.notAll;
}

async function runJobs(bridge: LocalBridge, options: RunOptions, log: (message: string) => void): Promise<RunJobSummary[]> {
  const started = Date.now();
  // Uploads run side by side (bounded), in file order; each is logged as it lands. A file whose name
  // cannot become a key (or that the local S3 refuses) gets its summary and the run goes on.
  const dropped = await mapBounded(options.files, DROP_CONCURRENCY, async ({ file, key, raw }): Promise<{ file: string; key: string; jobId: string; kind: InputKind } | RunJobSummary> => {
    const name = key.split('/').pop() ?? key;
    const problem = keyProblem(`inbox/${key}`);
    if (problem) {
      // Not uploaded (the local S3 refuses some such keys): its job starts anyway and ends REJECTED INVALID_KEY with a report.
      const { object, jobId } = await bridge.rejectInbox(raw ?? file, key);
      log(`${printableName(key)}: not uploaded, its name has ${problem}; job ${jobId} ends REJECTED INVALID_KEY`);
      return { file, key, jobId, kind: recordedKind(object.key) };
    }
    let dropped: Awaited<ReturnType<LocalBridge['putInbox']>>;
    try {
      dropped = await bridge.putInbox(file, key);
    } catch (error) {
      log(`${printableName(name)}: the local S3 refused it (${(error as Error).message})`);
      return notDropped(file, key, 'REJECTED', {
        code: 'INVALID_KEY',
        message: `the local S3 refused the name ${printableName(name)} (${(error as Error).message}); rename the file (letters, digits, '.', '-', '_') and run it again.`,
      });
    }
    const { object, jobId } = dropped;
    // Every file is a job; one the bridge does not take ends REJECTED UNSUPPORTED_FILE_TYPE like on any other path.
    const kind = recordedKind(object.key);
    log(`dropped ${printable(name)} -> s3://${bridge.bucket}/${printable(object.key)} (job ${jobId})`);
    return { file, key, jobId, kind };
  });
  const deadline = started + options.timeoutMs;
  const summaries: RunJobSummary[] = [];
  let timeoutSaid = false;
  for (const job of dropped) {
    if ('status' in job) {
      summaries.push(job);
      continue;
    }
    let timedOut = Date.now() >= deadline;
    let row = timedOut
      ? undefined
      : await bridge.waitForJob(job.jobId, { timeoutMs: deadline - Date.now() }).catch((error: unknown) => {
          if (error instanceof LocalBridgeTimeout) timedOut = true;
          else log(`${path.basename(job.file)}: ${(error as Error).message}`);
          return undefined;
        });
    if (timedOut) {
      if (!timeoutSaid) log(`--timeout of ${Math.round(options.timeoutMs / 1000)} s reached: jobs not final yet are reported UNFINISHED.`);
      timeoutSaid = true;
      row = await bridge.ledger.get(job.jobId);
    }
    const execution = bridge.engine.describe(job.jobId);
    const stillGoing = timedOut && !(row && isFinalStatus(row.status)) && (!execution || execution.status === 'RUNNING');
    let outputs: { results: string[]; report?: string } = { results: [] };
    let notCopied: RunJobSummary['outputsNotCopied'] = null;
    if (row && isFinalStatus(row.status)) {
      // This run's ledger goes when it ends: its copies are not `persistent`, and it never replaces one that is.
      outputs = await copyJobOutputs(bridge.s3, bridge.bucket, row, options.outDir, { persistent: false, overwrite: options.overwrite ?? false }).catch((error: unknown) => {
        if (!(error instanceof OutputConflict)) throw error;
        log(`${path.basename(job.file)}: outputs not copied: ${error.message}`);
        notCopied = { reason: error.message, folder: error.folder };
        return { results: [] };
      });
    }
    summaries.push({
      ...summarise(job.file, job.jobId, job.kind, row, outputs, execution?.error, stillGoing ? { waitedSeconds: (Date.now() - started) / 1000 } : undefined, job.key),
      outputsNotCopied: notCopied,
    });
    log(`${path.basename(job.file)}: ${summaries.at(-1)?.status}`);
  }
  return summaries;
}

/** A file name for a log line or message: control characters as escapes, long names cut. */
function printableName(name: string): string {
  const escaped = printable(name);
  return escaped.length > 80 ? `${escaped.slice(0, 60)}... (${Buffer.byteLength(name, 'utf8')} bytes)` : escaped;
}

/** The path whose bytes decode (with U+FFFD for what is not UTF-8) to `file`, when exactly one does. */
async function rawPathOf(file: string): Promise<Buffer | undefined> {
  if (!path.basename(file).includes('\ufffd')) return undefined;
  const entries = await readdir(path.dirname(file), { encoding: 'buffer' }).catch(() => [] as Buffer[]);
  const matches = entries.filter((entry) => entry.toString('utf8') === path.basename(file));
  return matches.length === 1 ? Buffer.concat([Buffer.from(`${path.dirname(file)}${path.sep}`), matches[0]!]) : undefined;
}

/** The summary of a file that never became a job. */
function notDropped(file: string, key: string, status: 'REJECTED', error: { code: string; message: string }): RunJobSummary {
  return {
    file,
    key: `inbox/${key}`,
    jobId: null,
    kind: recordedKind(`inbox/${key}`),
    status,
    processingId: null,
    mosaicId: null,
    imageId: null,
    cost: null,
    results: [],
    report: null,
    error,
    outputsNotCopied: null,
  };
}

export function summarise(
  file: string,
  jobId: string,
  kind: InputKind,
  row: LedgerRow | undefined,
  outputs: { results: string[]; report?: string },
  executionError?: { Error: string; Cause: string },
  /** Set when --timeout ran out while the job was still running or waiting to start. */
  unfinished?: { waitedSeconds: number },
  /** The key below the inbox the file was put at (default its base name). */
  key = path.basename(file),
): RunJobSummary {
  const final = row && (row.status === 'SUCCEEDED' || row.status === 'FAILED' || row.status === 'REJECTED');
  let status: RunStatus = final ? (row.status as FinalStatus) : 'FAILED';
  let error: RunJobSummary['error'] = row?.error ? { code: row.error.code, message: row.error.message } : null;
  const extra: Pick<RunJobSummary, 'lastStatus' | 'waitedSeconds'> = {};
  if (!final && unfinished) {
    // Still going: not a failure of the job, only of our patience.
    status = 'UNFINISHED';
    const waited = Math.round(unfinished.waitedSeconds);
    extra.lastStatus = row?.status ?? null;
    extra.waitedSeconds = waited;
    error = {
      code: 'NOT_FINISHED',
      message: row
        ? `Still ${row.status} after ${waited} s (--timeout); the job was not stopped, only no longer waited for.`
        : `Not registered yet after ${waited} s (--timeout): waiting to start behind the other jobs.`,
    };
  } else if (!final) {
    error = {
      code: 'NOT_FINISHED',
      message: row
        ? `The job stopped at ${row.status}${executionError ? ` (${executionError.Error}: ${executionError.Cause})` : ''}.`
        : `No ledger row was written for this job${executionError ? ` (${executionError.Error}: ${executionError.Cause})` : ''}.`,
    };
  }
  const cost = row ? costOf(row) : undefined;
  return {
    file,
    key: row?.input.key ?? `inbox/${key}`,
    jobId,
    kind,
    status,
    processingId: row?.processingId ?? row?.parts?.find((part) => part.processingId)?.processingId ?? null,
    mosaicId: row?.mosaicId ?? null,
    imageId: row?.imageId ?? null,
    cost: cost ?? null,
    results: outputs.results,
    report: outputs.report ?? null,
    error,
    outputsNotCopied: null,
    ...extra,
  };
}

async function mapBounded<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** A route's budgets as the summary shows them: its name, its folder and the budgets that applied. */
export interface RunBudget {
  route: string;
  prefix: string;
  creditBudget: number;
  areaBudgetSqKm: number;
}

function formatSummary(jobs: RunJobSummary[], outDir: string, budgets: readonly RunBudget[]): string {
  const rows = [['FILE', 'STATUS', 'COST', 'DETAIL']];
  for (const job of jobs) {
    const detail = job.error
      ? formatError(job.error)
      : [job.processingId && `processing ${job.processingId}`, job.imageId && `image ${job.imageId}`].filter(Boolean).join(', ');
    // The key below the inbox when it is not the file's own name (--prefix, KEY=FILE): it picked the route.
    const name = job.key === `inbox/${path.basename(job.file)}` ? path.basename(job.file) : job.key.replace(/^inbox\//, '');
    rows.push([name, job.status, formatCost(job.cost ?? undefined), detail]);
  }
  const files = jobs.flatMap((job) => [...job.results, ...(job.report ? [job.report] : [])]);
  const succeeded = jobs.filter((job) => job.status === 'SUCCEEDED').length;
  const notCopied = jobs.filter((job) => job.outputsNotCopied);
  return [
    table(rows),
    '',
    `${succeeded} of ${jobs.length} job(s) succeeded.`,
    ...(budgets.length > 0 ? [`Budgets: ${budgets.map((b) => `${b.route} (inbox/${b.prefix}) ${b.creditBudget} credits or ${b.areaBudgetSqKm} km²`).join('; ')}`] : []),
    ...(files.length > 0 ? [`Outputs (copied to ${printable(outDir)}):`, ...files.map((file) => `  ${printable(file)}`)] : []),
    ...notCopied.flatMap((job) => [`Outputs NOT copied for ${path.basename(job.file)}: ${job.outputsNotCopied!.reason}`]),
  ].join('\n');
}

/** Sends stdout writes to stderr until the returned function is called. */
function redirectStdoutToStderr(): () => void {
  const original = process.stdout.write;
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  return () => {
    process.stdout.write = original;
  };
}

/** Handlers log every step at INFO; a one-shot command shows warnings and errors only. */
function quietHandlerLogs(): () => void {
  const previous = process.env.POWERTOOLS_LOG_LEVEL;
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
  return () => {
    if (previous === undefined) delete process.env.POWERTOOLS_LOG_LEVEL;
    else process.env.POWERTOOLS_LOG_LEVEL = previous;
  };
}
