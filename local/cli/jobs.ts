/**
 * `mapflow-bridge jobs list|show`: reads the job ledger.
 *
 * Which ledger:
 * - `--table <name> [--region <r>]`: a deployed table, with the usual AWS credentials;
 * - otherwise the local one: the DynamoDB Local of a running `start` (found
 *   through .local/endpoints.json), or, when none runs, DynamoDB Local started
 *   on demand on .local/dynamodb and stopped afterwards.
 */
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { JOB_STATUSES, type JobStatus, type LedgerRow } from '../../functions/jobs/model.ts';
import { Ledger } from '../../functions/ledger/ledger.ts';
import { LOCAL_LEDGER_TABLE } from '../bridge.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../dynamodb/index.ts';
import { LOCAL_S3_CREDENTIALS } from '../s3/client.ts';
import { costOf, formatCost, formatError, inputName, progressBar, table } from './format.ts';
import { checkJava } from './java.ts';
import { DEFAULT_STATE_DIR, ENDPOINTS_FILE } from './start.ts';

export const JOBS_USAGE = `Usage: mapflow-bridge jobs list [--status <status>] [--limit <n>] [--json]
       mapflow-bridge jobs show <jobId> [--json]

Reads the job ledger: the local one (of npm start, in ./${DEFAULT_STATE_DIR}), or a
deployed table with --table.

Options:
  --status <status>     only jobs with this status (${JOB_STATUSES.join(', ')})
  --limit <n>           at most this many jobs (default 50), newest first
  --json                print JSON
  --table <name>        read this deployed DynamoDB table (AWS credentials from the environment)
  --region <region>     its region
  --state-dir <dir>     the local state folder (default ./${DEFAULT_STATE_DIR})
  -h, --help            show this help`;

export async function runJobsCommand(args: string[]): Promise<number> {
  const [subcommand, ...rest] = args;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: {
        status: { type: 'string' },
        limit: { type: 'string' },
        json: { type: 'boolean', default: false },
        table: { type: 'string' },
        region: { type: 'string' },
        'state-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    console.error(`mapflow-bridge jobs: ${(error as Error).message}\n\n${JOBS_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (!subcommand || subcommand === '--help' || subcommand === '-h' || values.help) {
    console.log(JOBS_USAGE);
    return subcommand ? 0 : 2;
  }
  if (subcommand !== 'list' && subcommand !== 'show') {
    console.error(`mapflow-bridge jobs: unknown subcommand '${subcommand}'\n\n${JOBS_USAGE}`);
    return 2;
  }
  const status = values.status?.toUpperCase();
  if (status !== undefined && !(JOB_STATUSES as readonly string[]).includes(status)) {
    console.error(`mapflow-bridge jobs: --status must be one of ${JOB_STATUSES.join(', ')}.`);
    return 2;
  }
  const limit = Number(values.limit ?? 50);
  if (!Number.isInteger(limit) || limit < 1) {
    console.error('mapflow-bridge jobs: --limit must be a positive integer.');
    return 2;
  }
  if (subcommand === 'show' && positionals.length !== 1) {
    console.error(`mapflow-bridge jobs show: give one job id.\n\n${JOBS_USAGE}`);
    return 2;
  }

  let source: LedgerSource;
  try {
    source = await openLedger({
      ...(values.table ? { table: values.table } : {}),
      ...(values.region ? { region: values.region } : {}),
      stateDir: path.resolve(values['state-dir'] ?? DEFAULT_STATE_DIR),
    });
  } catch (error) {
    console.error(`mapflow-bridge jobs: ${(error as Error).message}`);
    return 1;
  }
  try {
    if (subcommand === 'list') {
      const rows = status ? await source.ledger.listByStatus(status as JobStatus, { limit }) : await source.ledger.listRecent({ limit });
      console.log(values.json ? JSON.stringify({ jobs: rows }, null, 2) : formatList(rows));
      return 0;
    }
    const jobId = positionals[0] as string;
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

interface LedgerSource {
  ledger: Ledger;
  description: string;
  close(): Promise<void>;
}

async function openLedger(options: { table?: string; region?: string; stateDir: string }): Promise<LedgerSource> {
  if (options.table) {
    const client = new DynamoDBClient(options.region ? { region: options.region } : {});
    return {
      ledger: new Ledger(DynamoDBDocumentClient.from(client), options.table),
      description: `table ${options.table}`,
      close: async () => client.destroy(),
    };
  }
  // A running `start`: share its DynamoDB Local (two JVMs must not open one database).
  const running = await runningEndpoints(options.stateDir);
  if (running) return localSource(running.dynamodb, running.ledgerTable ?? LOCAL_LEDGER_TABLE, 'the running local bridge');

  const dbPath = path.join(options.stateDir, 'dynamodb');
  if (!(await access(dbPath).then(() => true, () => false))) {
    throw new Error(`no local ledger in ${options.stateDir} yet: run 'npm start' first (or give --table for a deployed one).`);
  }
  const java = checkJava();
  if (!java.ok) throw new Error(java.message);
  const dynamodb: DynamoDbLocal = await startDynamoDbLocal({ dbPath });
  const source = localSource(dynamodb.endpoint, LOCAL_LEDGER_TABLE, `the local ledger in ${dbPath}`);
  return { ...source, close: async () => dynamodb.close() };
}

function localSource(endpoint: string, table: string, description: string): LedgerSource {
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: LOCAL_S3_CREDENTIALS });
  return { ledger: new Ledger(DynamoDBDocumentClient.from(client), table), description, close: async () => client.destroy() };
}

/** The endpoints of a `start` that is still running (its file exists and DynamoDB answers). */
async function runningEndpoints(stateDir: string): Promise<{ dynamodb: string; ledgerTable?: string } | undefined> {
  const text = await readFile(path.join(stateDir, ENDPOINTS_FILE), 'utf8').catch(() => undefined);
  if (!text) return undefined;
  const endpoints = JSON.parse(text) as { dynamodb: string; ledgerTable?: string };
  const client = new DynamoDBClient({ endpoint: endpoints.dynamodb, region: 'us-east-1', credentials: LOCAL_S3_CREDENTIALS, maxAttempts: 1 });
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(2_000) });
    return endpoints;
  } catch {
    return undefined; // a stale file from a start that was killed
  } finally {
    client.destroy();
  }
}

export function formatList(rows: LedgerRow[]): string {
  if (rows.length === 0) return 'No jobs.';
  return table([
    ['JOB ID', 'FILE', 'KIND', 'STATUS', 'PROGRESS', 'COST', 'UPDATED'],
    ...rows.map((row) => [
      row.jobId,
      inputName(row),
      row.kind,
      row.status,
      row.percentCompleted !== undefined ? `${row.percentCompleted}%` : '',
      formatCost(costOf(row)),
      row.updatedAt,
    ]),
  ]);
}

export function formatJob(row: LedgerRow): string {
  const lines = [
    `job         ${row.jobId}`,
    `input       s3://${row.input.bucket}/${row.input.key} (${row.input.size} bytes, etag ${row.input.etag})`,
    `kind        ${row.kind}, route ${row.routeName}`,
    `status      ${row.status}${row.percentCompleted !== undefined ? `  ${progressBar(row.percentCompleted)}` : ''}`,
  ];
  if (row.projectId) lines.push(`project     ${row.projectId}`);
  if (row.mosaicId) lines.push(`mosaic      ${row.mosaicId}${row.imageId ? `, image ${row.imageId}` : ''}`);
  if (row.processingId) lines.push(`processing  ${row.processingId}`);
  if (row.areaSqKm !== undefined) lines.push(`area        ${row.areaSqKm} km²`);
  if (row.estimatedCost !== undefined || row.actualCost !== undefined) {
    lines.push(`cost        estimated ${formatCost(row.estimatedCost) || '-'}, actual ${formatCost(row.actualCost) || '-'}`);
  }
  if (row.error) lines.push(`error       ${formatError(row.error)}`);
  for (const message of row.messages ?? []) lines.push(`message     ${message}`);
  if (row.resultPrefix) lines.push(`results     s3://${row.input.bucket}/${row.resultPrefix}`);
  if (row.reportKey) lines.push(`report      s3://${row.input.bucket}/${row.reportKey}`);
  for (const part of row.parts ?? []) {
    lines.push(
      `part ${part.index}      ${part.name}: ${part.status ?? ''} ${part.processingId ?? ''} ${formatCost(part.cost)} ${part.error ? formatError(part.error) : ''}`.trimEnd(),
    );
  }
  lines.push('history');
  for (const step of row.statusHistory) lines.push(`  ${step.at}  ${step.status}${step.note ? `  ${step.note}` : ''}`);
  return lines.join('\n');
}
