/**
 * `mapflow-bridge start` (npm start): the whole bridge on this machine, on
 * embedded services, until Ctrl-C.
 *
 * - state in .local/ (S3 objects, the ledger, the simulator's data, events), kept across restarts;
 * - files copied into .local/drop/ are uploaded to inbox/<same path> (a sub-folder picks the route);
 * - on the first run the bundled samples are dropped so the pipeline can be seen working;
 * - one line per job event, a progress bar while Mapflow processes, and the
 *   local paths of the results once a job is final.
 */
import { access, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readFile } from 'node:fs/promises';
import { isFinalStatus, type JobStatus, type LedgerRow } from '../../functions/jobs/model.ts';
import { parseRoutes } from '../../functions/routing/index.ts';
import { copyInto, startLocalBridge, type LocalBridge, type MapflowTarget } from '../bridge.ts';
import type { LocalEvent } from '../events/file.ts';
import { copyJobOutputs, DEFAULT_OUTPUT_DIR } from './outputs.ts';
import { costOf, formatCost, formatError, inputName, progressBar } from './format.ts';
import { checkMapflow, preflight } from './preflight.ts';

export const DEFAULT_STATE_DIR = '.local';
/** Written while `start` runs, so `jobs` can read the running ledger. */
export const ENDPOINTS_FILE = 'endpoints.json';
const SAMPLES_MARKER = 'samples-dropped';
const SAMPLES_DIR = fileURLToPath(new URL('../samples/', import.meta.url));

export const START_USAGE = `Usage: mapflow-bridge start [options]     (npm start)

Runs the whole bridge locally until Ctrl-C: the Mapflow simulator, a local S3
(s3rver), DynamoDB Local and the state machine. Copy GeoJSON or GeoTIFF files
into the drop folder (or put them under inbox/ with any S3 client) and watch
the jobs go through.

Options:
  --state-dir <dir>           where state is kept (default ./${DEFAULT_STATE_DIR}; delete it to start afresh)
  --out <dir>                 where result copies are written (default ./${DEFAULT_OUTPUT_DIR})
  --processing-seconds <n>    how long a simulated processing takes (default 20)
  --mapflow-url <url>         use this Mapflow API instead of the embedded simulator
  --token <token>             its token (required with --mapflow-url)
  --email <email>             its account e-mail
  --routes <file>             routes JSON (default: the built-in routes)
  --no-samples                do not drop the bundled samples on the first run
  --verbose                   show the handlers' logs
  -h, --help                  show this help`;

interface StartOptions {
  stateDir: string;
  outDir: string;
  processingSeconds: number;
  mapflow?: MapflowTarget;
  routes?: string;
  samples: boolean;
  verbose: boolean;
}

export async function runStartCommand(args: string[]): Promise<number> {
  let options: StartOptions | undefined;
  try {
    options = await parseStartArguments(args);
  } catch (error) {
    console.error(`mapflow-bridge start: ${(error as Error).message}\n\n${START_USAGE}`);
    return 2;
  }
  if (!options) {
    console.log(START_USAGE);
    return 0;
  }
  if (!preflight() || !(await checkMapflow(options.mapflow))) return 1;
  return serve(options);
}

async function parseStartArguments(args: string[]): Promise<StartOptions | undefined> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      'state-dir': { type: 'string' },
      out: { type: 'string' },
      'processing-seconds': { type: 'string' },
      'mapflow-url': { type: 'string' },
      token: { type: 'string' },
      email: { type: 'string' },
      routes: { type: 'string' },
      'no-samples': { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return undefined;
  if (positionals.length > 0) throw new Error(`unexpected argument '${positionals[0]}'.`);
  const processingSeconds = Number(values['processing-seconds'] ?? 20);
  if (!Number.isFinite(processingSeconds) || processingSeconds <= 0) throw new Error('--processing-seconds must be a positive number.');
  let mapflow: MapflowTarget | undefined;
  if (values['mapflow-url']) {
    if (!values.token) throw new Error('--mapflow-url needs --token.');
    mapflow = { url: values['mapflow-url'], token: values.token, ...(values.email ? { email: values.email } : {}) };
  }
  let routes: string | undefined;
  if (values.routes) {
    routes = await readFile(values.routes, 'utf8');
    parseRoutes(routes);
  }
  return {
    stateDir: path.resolve(values['state-dir'] ?? DEFAULT_STATE_DIR),
    outDir: path.resolve(values.out ?? DEFAULT_OUTPUT_DIR),
    processingSeconds,
    ...(mapflow ? { mapflow } : {}),
    ...(routes ? { routes } : {}),
    samples: !values['no-samples'],
    verbose: values.verbose ?? false,
  };
}

async function serve(options: StartOptions): Promise<number> {
  const say = (message: string) => process.stdout.write(`${message}\n`);
  if (!options.verbose) process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
  say(`Starting mapflow-bridge locally (state in ${options.stateDir}) ...`);

  const progress = new JobProgress(say, options.outDir);
  let bridge: LocalBridge;
  try {
    bridge = await startLocalBridge({
      stateDir: options.stateDir,
      ...(options.mapflow ? { mapflow: options.mapflow } : {}),
      simulator: { processingSeconds: options.processingSeconds },
      ...(options.routes ? { routes: options.routes } : {}),
      log: (message) => process.stderr.write(`${message}\n`),
      onEvent: (event) => progress.onEvent(event),
    });
  } catch (error) {
    console.error(`Cannot start the local bridge: ${(error as Error).message}`);
    return 1;
  }
  progress.attach(bridge);
  const endpointsFile = path.join(options.stateDir, ENDPOINTS_FILE);
  await writeFile(endpointsFile, JSON.stringify({ ...bridge.endpoints, bucket: bridge.bucket, ledgerTable: bridge.ledgerTable, pid: process.pid }, null, 2));

  say('');
  say(`  S3 endpoint   ${bridge.endpoints.s3}   (path-style; any access key)`);
  say(`  bucket        ${bridge.bucket}   (drop under inbox/, results under results/, reports under failed/)`);
  say(`  drop folder   ${bridge.dropDir}${path.sep}   (files copied here go to inbox/<same path>; buildings/ runs the Buildings model on GeoTIFFs)`);
  say(`  Mapflow       ${options.mapflow ? options.mapflow.url : `simulator at ${bridge.endpoints.mapflow}`}`);
  say(`  results       copied to ${options.outDir}${path.sep}`);
  say(`  events        ${bridge.eventsFile}`);
  say('');

  if (options.samples) await dropSamplesOnce(bridge, options.stateDir, say);
  say('Waiting for files. Press Ctrl-C to stop.');

  return new Promise<number>((resolve) => {
    let stoppingSince: number | undefined;
    const stop = (signal: string) => {
      if (stoppingSince !== undefined) {
        // npm (and `timeout`) forward the terminal's SIGINT to us as well: a
        // second signal within a moment is the same Ctrl-C, not a request to force.
        if (Date.now() - stoppingSince < 1_500) return;
        say('Stopping now.');
        process.exit(130);
      }
      stoppingSince = Date.now();
      say(`\n${signal}: stopping (jobs in flight resume on the next start; Ctrl-C again to force) ...`);
      progress.stop();
      bridge
        .close()
        .then(() => rm(endpointsFile, { force: true }))
        .then(
          () => {
            say('Stopped. State is kept in ' + options.stateDir);
            resolve(0);
          },
          (error: unknown) => {
            console.error(`Error while stopping: ${(error as Error).message}`);
            resolve(1);
          },
        );
    };
    process.on('SIGINT', () => stop('Ctrl-C'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
}

/** The first start drops the bundled GeoJSON and GeoTIFF into the drop folder. */
async function dropSamplesOnce(bridge: LocalBridge, stateDir: string, say: (message: string) => void): Promise<void> {
  const marker = path.join(stateDir, SAMPLES_MARKER);
  if (await access(marker).then(() => true, () => false)) return;
  const geojson = await copyInto(path.join(SAMPLES_DIR, 'bern-quarters.geojson'), bridge.dropDir);
  const geotiff = await copyInto(path.join(SAMPLES_DIR, 'cogeo.tif'), path.join(bridge.dropDir, 'buildings'));
  await mkdir(stateDir, { recursive: true });
  await writeFile(marker, `Samples dropped on ${new Date().toISOString()}. Delete this file to drop them again.\n`);
  say('First run: dropped the bundled samples (see local/samples/README.md):');
  say(`  ${path.relative(process.cwd(), geojson)}   three quarters of Bern -> Buildings over Mapbox imagery`);
  say(`  ${path.relative(process.cwd(), geotiff)}   an aerial GeoTIFF -> uploaded to a mosaic, then Buildings`);
  say('');
}

/**
 * Prints one line per event and, while Mapflow processes, a progress line
 * whenever a job's percentage moves (read from the ledger). When a job is
 * final, copies its outputs and prints where they are.
 */
class JobProgress {
  private bridge?: LocalBridge;
  private readonly watching = new Map<string, { name: string; percent?: number }>();
  private timer?: NodeJS.Timeout;
  private polling = false;

  constructor(
    private readonly say: (message: string) => void,
    private readonly outDir: string,
  ) {}

  attach(bridge: LocalBridge): void {
    this.bridge = bridge;
    this.timer = setInterval(() => void this.poll(), 1_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  onEvent(event: LocalEvent): void {
    const { detail } = event;
    const name = detail.input.key.replace(/^inbox\//, '');
    const time = new Date(event.time ?? detail.at).toLocaleTimeString();
    const extras = [
      detail.percentCompleted !== undefined && !isFinalStatus(detail.status) ? `${detail.percentCompleted}%` : '',
      formatCost(detail.actualCost ?? detail.estimatedCost),
      formatError(detail.error),
    ].filter(Boolean);
    this.say(`${time}  ${name}  ${event.detailType}${extras.length ? `  (${extras.join(', ')})` : ''}`);
    if (isFinalStatus(detail.status)) {
      this.watching.delete(detail.jobId);
      void this.reportFinal(detail.jobId);
    } else {
      this.watching.set(detail.jobId, this.watching.get(detail.jobId) ?? { name });
    }
  }

  private async poll(): Promise<void> {
    if (!this.bridge || this.polling) return;
    this.polling = true;
    try {
      for (const [jobId, job] of this.watching) {
        const row = await this.bridge.ledger.get(jobId).catch(() => undefined);
        if (!row || !isProcessing(row.status) || row.percentCompleted === undefined) continue;
        if (row.percentCompleted === job.percent) continue;
        job.percent = row.percentCompleted;
        this.say(`          ${job.name}  ${row.status.padEnd(11)} ${progressBar(row.percentCompleted)}  ${formatCost(costOf(row))}`);
      }
    } finally {
      this.polling = false;
    }
  }

  private async reportFinal(jobId: string): Promise<void> {
    if (!this.bridge) return;
    const row: LedgerRow | undefined = await this.bridge.ledger.get(jobId).catch(() => undefined);
    if (!row) return;
    try {
      const outputs = await copyJobOutputs(this.bridge.s3, this.bridge.bucket, row, this.outDir);
      const lines = [...outputs.results, ...(outputs.report ? [outputs.report] : [])];
      if (lines.length === 0) return;
      this.say(`          ${inputName(row)}  ${row.status}: ${row.status === 'SUCCEEDED' ? 'results' : 'report'} in`);
      for (const line of lines) this.say(`            ${line}`);
    } catch (error) {
      this.say(`          ${inputName(row)}: cannot copy the outputs: ${(error as Error).message}`);
    }
  }
}

function isProcessing(status: JobStatus): boolean {
  return status === 'SUBMITTED' || status === 'IN_PROGRESS' || status === 'UPLOADING';
}
