/**
 * `mapflow-bridge jobs list|show|watch|export|retry|cancel`: reads the job
 * ledger, and acts on jobs (retry, cancel: packages/cli/src/operations.ts).
 *
 * Which ledger:
 * - `--table <name> [--region <r>]`: a deployed table, with the usual AWS credentials;
 * - otherwise the local one: the DynamoDB Local of a running `start` (found
 *   through .local/endpoints.json), or, when none runs, DynamoDB Local started
 *   on demand on .local/dynamodb and stopped afterwards.
 */
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isFinalStatus, JOB_STATUSES, type JobStatus, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { jobCost, partCharge } from 'mapflow-bridge/functions/core/credits.ts';
import { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
import { LOCAL_LEDGER_TABLE } from '@mapflow-bridge/local/bridge';
import { startDynamoDbLocal, type DynamoDbLocal } from '@mapflow-bridge/local/dynamodb';
import { issueCredentials, readCredentialsFile, type IssuedCredentials } from '@mapflow-bridge/local/auth/credentials';
import { describeProgress, formatCost, formatJobCost, formatError, inputName, printable, progressBar, table } from './format.ts';
import { checkJava } from './java.ts';
import { totalLine } from './list-count.ts';
import { lockHolder, lockStateDir, StateDirLockedError, type StateLock } from '@mapflow-bridge/local/state-lock';
import { LEDGER_OPTIONS, ledgerChoice, OPTIONS, runCommand, usageOf, UsageError, type CliOptions, type CommandLine, type LedgerChoice, type OptionValues } from './args.ts';
import { callControl } from './control.ts';
import { parseSince, scanJobs, writeExport } from './export.ts';
import { cancelJob, deployedBackend, OperationRefused, readStackOutputs, retryJob, type CancelOutcome, type RetryOutcome } from './operations.ts';
import { watchJobs } from './watch.ts';
import { JobNotResolved, resolveJobId } from './resolve.ts';
import { DEFAULT_STATE_DIR, ENDPOINTS_FILE } from './state-dir.ts';

export const JOBS_COMMAND = {
  name: 'jobs',
  synopsis: `Usage: mapflow-bridge jobs list [--status <status>] [--limit <n>] [--json]
       mapflow-bridge jobs show <jobId | prefix | file name> [--json]
       mapflow-bridge jobs watch [--interval <s>] [--until-idle] [--json]
       mapflow-bridge jobs export [--since <when>] [--format csv|jsonl]
       mapflow-bridge jobs retry <jobId> [--json]
       mapflow-bridge jobs cancel <jobId> [--reason <text>] [--delete-finished] [--json]

Reads the job ledger: the local one (of npm start, in ./${DEFAULT_STATE_DIR}), or a
deployed one with --table or --stack. retry and cancel act on the running local
bridge (npm start), or on a deployed stack with --stack. show, retry and cancel
take a job id, a unique prefix of it, or the file's name (as jobs list shows it).

  watch    the live view of npm start: a line per new job or status change, a progress bar as jobs run
  export   every job (created since --since) as CSV or JSON lines on stdout, streamed
  retry    runs a FAILED (or CANCELLED) job again as a new job <jobId>-r<attempt>, linked both ways
  cancel   stops a job in flight: execution stopped, unfinished Mapflow processings deleted, slots freed,
           CANCELLED; finished parts keep their processings and stored results, credits charged stay counted`,
  options: {
    status: { type: 'string', value: '<status>', help: `only jobs with this status (${JOB_STATUSES.join(', ')})` },
    limit: { type: 'string', value: '<n>', help: 'at most this many jobs (default 50), newest first' },
    since: { type: 'string', value: '<when>', help: 'export: jobs created since a date (2025-05-01), a time or an age (24h, 7d)' },
    format: { type: 'string', value: '<format>', help: 'export: csv (default) or jsonl' },
    interval: { type: 'string', value: '<s>', help: 'watch: seconds between polls (default 1 locally, 5 deployed)' },
    'until-idle': { type: 'boolean', help: 'watch: stop once no job is in flight' },
    reason: { type: 'string', value: '<text>', help: 'cancel: recorded in the ledger and the event' },
    'delete-finished': { type: 'boolean', help: 'cancel: also delete the processings of parts that had finished' },
    json: OPTIONS.json,
    ...LEDGER_OPTIONS,
    stack: { ...OPTIONS.stack, help: 'a deployed stack: its table, state machine, bus and secret from its outputs' },
    help: OPTIONS.help,
  },
  allowPositionals: true,
} as const satisfies CommandLine<CliOptions>;

export const JOBS_USAGE = usageOf(JOBS_COMMAND);

const SUBCOMMANDS = ['list', 'show', 'watch', 'export', 'retry', 'cancel'];

export async function runJobsCommand(args: string[]): Promise<number> {
  const [subcommand, ...rest] = args;
  if (!subcommand || subcommand === '--help' || subcommand === '-h') {
    console.log(JOBS_USAGE);
    return subcommand ? 0 : 2;
  }
  return runCommand(JOBS_COMMAND, rest, async ({ values, positionals }) => {
    if (!SUBCOMMANDS.includes(subcommand)) throw new UsageError(`unknown subcommand '${subcommand}'`);
    const status = values.status?.toUpperCase();
    if (status !== undefined && !(JOB_STATUSES as readonly string[]).includes(status)) throw new UsageError(`--status must be one of ${JOB_STATUSES.join(', ')}`);
    const limit = Number(values.limit ?? 50);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit must be a positive whole number, not '${values.limit}'`);
    if ((subcommand === 'show' || subcommand === 'retry' || subcommand === 'cancel') && positionals.length !== 1) throw new UsageError(`${subcommand} takes one job id (or a unique prefix of it, or the file's name)`);
    const format = (values.format ?? 'csv').toLowerCase();
    if (format !== 'csv' && format !== 'jsonl') throw new UsageError('--format must be csv or jsonl');
    let since: string | undefined;
    try {
      since = values.since ? parseSince(values.since) : undefined;
    } catch (error) {
      throw new UsageError((error as Error).message, { cause: error });
    }
    const ledger = ledgerChoice(values);
    const interval = values.interval === undefined ? (ledger.deployed ? 5 : 1) : Number(values.interval);
    if (!Number.isFinite(interval) || interval < 0.2) throw new UsageError(`--interval must be a number of seconds, at least 0.2, not '${values.interval}'`);
    if (subcommand === 'retry' || subcommand === 'cancel') {
      return runOperation(subcommand, positionals[0] as string, {
        ...ledger,
        json: values.json ?? false,
        ...(values.reason ? { reason: values.reason } : {}),
        deleteFinished: values['delete-finished'] ?? false,
      });
    }
    return readLedger(subcommand, positionals, { values, ledger, status: status as JobStatus | undefined, limit, format, since, interval });
  });
}

/** list, show, watch and export: they read the ledger. */
async function readLedger(
  subcommand: string,
  positionals: string[],
  { values, ledger, status, limit, format, since, interval }: {
    values: OptionValues<typeof JOBS_COMMAND.options>;
    ledger: LedgerChoice;
    status: JobStatus | undefined;
    limit: number;
    format: 'csv' | 'jsonl';
    since: string | undefined;
    interval: number;
  },
): Promise<number> {
  let source: LedgerSource;
  try {
    source = await openLedger(ledger);
  } catch (error) {
    console.error(`mapflow-bridge jobs: ${(error as Error).message}`);
    return 1;
  }
  try {
    if (subcommand === 'list') {
      const rows = status ? await source.ledger.listByStatus(status, { limit }) : await source.ledger.listRecent({ limit });
      console.log(values.json ? JSON.stringify({ jobs: rows }, null, 2) : formatList(rows));
      // Say when the list is not the whole ledger (on stderr with --json, so stdout stays one document).
      const more = await totalLine(source.doc, source.table, rows.length, limit, status);
      if (more) (values.json ? console.error : console.log)(more);
      return 0;
    }
    if (subcommand === 'export') {
      const count = await writeExport(scanJobs(source.doc, source.table, since ? { since } : {}), format, process.stdout);
      process.stderr.write(`${count} job(s) exported from ${source.description}${since ? ` (created since ${since})` : ''}.\n`);
      return 0;
    }
    if (subcommand === 'watch') {
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      process.once('SIGINT', onSignal);
      try {
        if (!values.json) console.log(`Watching ${source.description} every ${interval} s${values['until-idle'] ? ' until no job is in flight' : ' (Ctrl-C to stop)'} ...`);
        await watchJobs(source.ledger, {
          intervalMs: interval * 1000,
          limit,
          json: values.json ?? false,
          untilIdle: values['until-idle'] ?? false,
          say: (line) => console.log(line),
          signal: abort.signal,
        });
      } finally {
        process.off('SIGINT', onSignal);
      }
      return 0;
    }
    let jobId: string;
    try {
      jobId = await resolveJobId(source.ledger, positionals[0] as string);
    } catch (error) {
      if (!(error instanceof JobNotResolved)) throw error;
      console.error(`mapflow-bridge jobs show: ${error.message.replace(/^no job '([^']*)'/, `no job '$1' in ${source.description}`)}`);
      return 1;
    }
    const row = await source.ledger.get(jobId);
    if (!row) {
      console.error(`mapflow-bridge jobs show: no job '${jobId}' in ${source.description}.`);
      return 1;
    }
    console.log(values.json ? JSON.stringify(row, null, 2) : formatJob(row));
    return 0;
  } catch (error) {
    // One line, not a stack trace: most often missing AWS credentials or a wrong table/region.
    console.error(`mapflow-bridge jobs: cannot read ${source.description}: ${describeReadError(error)}`);
    return 1;
  } finally {
    await source.close();
  }
}

function describeReadError(error: unknown): string {
  const name = (error as Error)?.name ?? '';
  const message = (error as Error)?.message ?? String(error);
  if (name === 'CredentialsProviderError') return 'no AWS credentials found (set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)';
  if (name === 'ResourceNotFoundException') return `${message} (check --table and --region)`;
  return `${name ? `${name}: ` : ''}${message}`;
}

export interface LedgerSource {
  ledger: Ledger;
  doc: DynamoDBDocumentClient;
  table: string;
  description: string;
  close(): Promise<void>;
}

export async function openLedger(options: Pick<LedgerChoice, 'table' | 'stack' | 'region' | 'stateDir'> & { command?: string; waitMs?: number }): Promise<LedgerSource> {
  let table = options.table;
  if (!table && options.stack) {
    table = (await readStackOutputs(options.stack, options.region)).LedgerTableName;
    if (!table) throw new Error(`stack ${options.stack} has no LedgerTableName output; is it a mapflow-bridge stack?`);
  }
  if (table) {
    const client = new DynamoDBClient(options.region ? { region: options.region } : {});
    const doc = DynamoDBDocumentClient.from(client);
    return {
      ledger: new Ledger(doc, table),
      doc,
      table,
      description: `table ${table}`,
      close: async () => client.destroy(),
    };
  }
  const dbPath = path.join(options.stateDir, 'dynamodb');
  // Two JVMs must never open one database (issue 39, point 8): a running `start`'s DynamoDB Local is shared;
  // else this command takes the state folder's lock (atomically, as a reader) before its own JVM opens the files,
  // so a start at the same instant waits for it, and it waits, bounded, for a bridge that is starting or stopping.
  const deadline = Date.now() + (options.waitMs ?? READER_WAIT_MS);
  for (;;) {
    const running = await runningEndpoints(options.stateDir);
    if (running) return localSource(running.dynamodb, running.ledgerTable ?? LOCAL_LEDGER_TABLE, 'the running local bridge', running.credentials);
    if (!(await access(dbPath).then(() => true, () => false))) {
      throw new Error(`no local ledger in ${options.stateDir} yet: run 'npm start' first (or give --table for a deployed one).`);
    }
    let lock: StateLock;
    try {
      lock = await lockStateDir(options.stateDir, `${options.command ?? 'mapflow-bridge jobs'} (reading the ledger)`, { reader: true });
    } catch (error) {
      if (!(error instanceof StateDirLockedError)) throw error;
      // A bridge holds the folder and its DynamoDB Local does not answer yet (starting, or stopping): wait for either.
      if (Date.now() > deadline) {
        throw new Error(
          `the bridge of ${options.stateDir} (pid ${error.holder.pid}, ${error.holder.command}) holds its ledger and has not answered for ${Math.round((options.waitMs ?? READER_WAIT_MS) / 1000)} s; ` +
            `run this again once it is up (it shares its DynamoDB Local), or stop it (Ctrl-C in its terminal).`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
      continue;
    }
    try {
      const java = checkJava();
      if (!java.ok) throw new Error(java.message);
      const dynamodb: DynamoDbLocal = await startDynamoDbLocal({ dbPath });
      // Its own DynamoDB Local, with no gate in front: any key does.
      const source = localSource(dynamodb.endpoint, LOCAL_LEDGER_TABLE, `the local ledger in ${dbPath}`, issueCredentials());
      return {
        ...source,
        close: async () => {
          await source.close();
          await dynamodb.close();
          await lock.release();
        },
      };
    } catch (error) {
      await lock.release();
      throw error;
    }
  }
}

/** How long a reader waits for a bridge that holds the state folder to answer (it is starting or stopping). */
const READER_WAIT_MS = 120_000;

function localSource(endpoint: string, table: string, description: string, credentials: IssuedCredentials): LedgerSource {
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
  const doc = DynamoDBDocumentClient.from(client);
  return { ledger: new Ledger(doc, table), doc, table, description, close: async () => client.destroy() };
}

/** retry and cancel: through the running local bridge, or on a deployed stack. */
async function runOperation(
  action: 'retry' | 'cancel',
  jobId: string,
  options: { json: boolean; stateDir: string; table?: string; stack?: string; region?: string; reason?: string; deleteFinished?: boolean },
): Promise<number> {
  if (options.table && !options.stack) {
    console.error(`mapflow-bridge jobs ${action}: a deployed job needs --stack <name> (the state machine, bus and secret come from its outputs), not only --table.`);
    return 2;
  }
  let outcome: RetryOutcome | CancelOutcome;
  try {
    if (options.stack) {
      const backend = deployedBackend(await readStackOutputs(options.stack, options.region), options.region ? { region: options.region } : {});
      try {
        jobId = await resolveJobId(backend.ledger, jobId);
        outcome =
          action === 'retry'
            ? await retryJob(backend, jobId)
            : await cancelJob(backend, jobId, { ...(options.reason ? { reason: options.reason } : {}), deleteFinished: options.deleteFinished ?? false });
      } finally {
        backend.close();
      }
    } else {
      // A prefix or a file name: resolved on the running bridge's ledger (none running: the control call says so).
      const running = await runningEndpoints(options.stateDir);
      if (running) {
        const source = localSource(running.dynamodb, running.ledgerTable ?? LOCAL_LEDGER_TABLE, 'the running local bridge', running.credentials);
        try {
          jobId = await resolveJobId(source.ledger, jobId);
        } finally {
          await source.close();
        }
      }
      outcome = await callControl<RetryOutcome | CancelOutcome>(options.stateDir, jobId, action, {
        ...(options.reason ? { reason: options.reason } : {}),
        ...(options.deleteFinished ? { deleteFinished: true } : {}),
      });
    }
  } catch (error) {
    const known = error instanceof OperationRefused || error instanceof JobNotResolved;
    const code = error instanceof OperationRefused ? error.code : error instanceof JobNotResolved ? 'JOB_NOT_FOUND' : (error as Error).name;
    if (options.json) console.log(JSON.stringify({ error: { code, message: (error as Error).message } }, null, 2));
    console.error(`mapflow-bridge jobs ${action}: ${known ? (error as Error).message : describeReadError(error)}`);
    return 1;
  }
  if (options.json) {
    console.log(JSON.stringify(outcome, null, 2));
  } else if ('retryOf' in outcome) {
    console.log(`Job ${outcome.retryOf} is running again as ${outcome.jobId} (attempt ${outcome.attempt}).`);
    console.log(`Follow it: mapflow-bridge jobs show ${outcome.jobId}${options.stack ? ` --stack ${options.stack}` : ''}`);
  } else {
    const kept = outcome.processingsKept ?? [];
    console.log(`Job ${outcome.jobId} CANCELLED: execution ${outcome.executionStopped ? 'stopped' : 'was not running'}, ` +
      `${outcome.processingsDeleted.length} Mapflow processing(s) deleted${outcome.processingErrors.length ? `, ${outcome.processingErrors.length} could not be` : ''}` +
      `${kept.length ? `, ${kept.length} finished kept with their results` : ''}, slots freed, 'Job Cancelled' published.`);
    if (outcome.creditsCharged !== undefined) console.log(`Credits charged: ${outcome.creditsCharged} (counted in the job's cost and in 'costs').`);
    for (const failure of outcome.processingErrors) console.log(`  processing ${failure.processingId}: ${failure.error}`);
  }
  return 0;
}

/**
 * The endpoints of a `start` that is still running (its file exists and DynamoDB answers),
 * with the credentials it issued in the state folder (its endpoints refuse any other).
 */
export async function runningEndpoints(stateDir: string): Promise<{ dynamodb: string; s3?: string; ledgerTable?: string; credentials: IssuedCredentials } | undefined> {
  const text = await readFile(path.join(stateDir, ENDPOINTS_FILE), 'utf8').catch(() => undefined);
  if (!text) return undefined;
  const endpoints = JSON.parse(text) as { dynamodb: string; s3?: string; ledgerTable?: string };
  const credentials = await readCredentialsFile(stateDir);
  if (!credentials) return undefined;
  const client = new DynamoDBClient({ endpoint: endpoints.dynamodb, region: 'us-east-1', credentials, maxAttempts: 1 });
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(2_000) });
    return { ...endpoints, credentials };
  } catch {
    return undefined; // a stale file from a start that was killed
  } finally {
    client.destroy();
  }
}

/**
 * The rows as the ledger lists them, newest created first (Ledger.listRecent):
 * the time shown is the one they are sorted by, and CODE says why a job was
 * rejected or failed (its message: jobs show).
 */
export function formatList(rows: LedgerRow[]): string {
  if (rows.length === 0) return 'No jobs.';
  return table([
    ['JOB ID', 'FILE', 'KIND', 'STATUS', 'CODE', 'PROGRESS (JOB)', 'COST', 'CREATED'],
    ...rows.map((row) => [
      row.jobId,
      inputName(row),
      row.kind,
      row.status,
      row.error?.code ?? '',
      describeProgress(row).replace(' of job', ''),
      formatJobCost(row),
      row.createdAt,
    ]),
  ]);
}

export function formatJob(row: LedgerRow): string {
  const lines = [
    `job         ${row.jobId}`,
    `input       s3://${row.input.bucket}/${row.input.key} (${row.input.size} bytes, etag ${row.input.etag})`,
    `kind        ${row.kind}, route ${row.routeName}`,
    `status      ${row.status}${row.percentCompleted !== undefined ? `  ${progressBar(row.status === 'SUCCEEDED' ? 100 : row.percentCompleted)}  ${describeProgress(row).replace(/^\d+% /, '')}` : ''}`,
  ];
  if (row.projectId) lines.push(`project     ${row.projectId}`);
  if (row.mosaicId) lines.push(`mosaic      ${row.mosaicId}${row.imageId ? `, image ${row.imageId}` : ''}`);
  if (row.processingId) lines.push(`processing  ${row.processingId}`);
  if (row.areaSqKm !== undefined) lines.push(`area        ${row.areaSqKm} km²`);
  const cost = jobCost(row);
  if (cost || row.estimatedCost !== undefined) {
    // Charged is a fact (counted whatever the end); the estimate is only the plan.
    const charged = cost?.kind === 'charged' ? formatCost(cost.credits) : '-';
    const priced = (row.parts ?? []).filter((p) => partCharge(p) !== undefined).length;
    const of = row.parts?.length && !(isFinalStatus(row.status) && row.status === 'SUCCEEDED') ? ` (${priced} of ${row.parts.length} part(s) priced${isFinalStatus(row.status) ? '' : ' so far'})` : '';
    lines.push(`cost        charged ${charged}${cost?.kind === 'charged' ? of : ''}, estimated ${formatCost(row.estimatedCost) || '-'}`);
  }
  if (row.error) lines.push(`error       ${formatError(row.error)}`);
  for (const message of row.messages ?? []) lines.push(`message     ${message}`);
  if (row.resultPrefix) lines.push(`results     s3://${row.input.bucket}/${row.resultPrefix}`);
  if (row.reportKey) lines.push(`report      s3://${row.input.bucket}/${row.reportKey}`);
  if (row.retryOf) lines.push(`retry of    ${row.retryOf} (attempt ${row.attempt ?? 2})`);
  if (row.retriedBy) lines.push(`retried as  ${row.retriedBy}`);
  for (const part of row.parts ?? []) {
    lines.push(
      `part ${part.index}      ${part.name}: ${part.status ?? ''}${part.percentCompleted !== undefined && part.status !== 'OK' ? ` ${part.percentCompleted}% of part` : ''} ${part.processingId ?? ''} ${formatCost(part.cost)} ${part.error ? formatError(part.error) : ''}`.trimEnd(),
    );
  }
  lines.push('history');
  for (const step of row.statusHistory) lines.push(`  ${step.at}  ${step.status}${step.note ? `  ${step.note}` : ''}`);
  // Keys, part names and messages come from files: each line printable.
  return lines.map(printable).join('\n');
}
