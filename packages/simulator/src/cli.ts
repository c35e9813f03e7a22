/**
 * `mapflow-bridge sim`: runs the simulator until SIGINT/SIGTERM. Prints its
 * base URL on one line once it accepts requests (scripts wait for that line).
 */
import { parseArgs } from 'node:util';
import { startSimulator, SimulatorOptionsError, type SimulatorOptions } from './index.ts';

const USAGE = `Usage: mapflow-bridge sim --port <port> --token <token> --email <email> [options]

Runs the Mapflow simulator on 127.0.0.1 and prints its base URL (http://127.0.0.1:<port>/rest).

Options:
  --port <port>                 port to listen on (0: any free port)            required
  --token <token>               the API token the simulator accepts             required
  --email <email>               the account e-mail (for Basic authentication)   required
  --processing-seconds <n>      how long a processing runs                      default 20
  --fault-rate <0..1>           fraction of requests failing (5xx, 429, reset)  default 0
  --drop-after-commit <0..1>    fraction of creates whose response is lost      default 0
  --seed <n>                    seed of every random choice                     default 1
  --latency-ms <n>              added latency per request                       default 0
  --real-shapes                 answer as the live service does (docs/integration-notes.md): upload
                                answers without image, image preprocessing, billingType, paged
                                lists and v2 paths, null/UNPROCESSED then AWAITING, naive times
  --billing-type <AREA|CREDITS|NONE> with --real-shapes: the billed counter; the other reads 0 (NONE: both)  default CREDITS
  --storage-limit <bytes|none>  storage of the account; none: no limit (memoryLimit null)  default 10 GiB
  --result-delay-seconds <n>    wait before the first byte of a result download   default 0
  --preprocessing-seconds <n>   with --real-shapes: time to preprocess an upload  default 2
  --queued-seconds <n>          with --real-shapes: time a processing is UNPROCESSED default 1
  --awaiting-seconds <n>        with --real-shapes: then time it is AWAITING      default 2
  --order-awaiting-seconds <n>  with --real-shapes: time a processing on a catalog Scene (ordered) is AWAITING  default: --awaiting-seconds
  --catalog-min-area <name=km²> with --real-shapes: a catalog provider's minimum area (searchDataProviders, minAreaSqkm); repeatable
  --shared-project <name,owner e-mail,m²> with --real-shapes: a project another account shares, with the owner's aoiAreaLimit
  --max-aois <n>                with --real-shapes: most polygons per processing  default 10
  --search-area-limit <m²>      with --real-shapes: searchAreaLimit of /user/status (0: none) default 1e9
  --suspended                   with --real-shapes: the account is suspended (creates: 403 FORBIDDEN)
  --uneven-progress             percent rises unevenly (stalls, bursts), as packages/bench/polling.ts models it
  --data-dir <dir>              keep state and uploads here across restarts     default: a temp dir
  -h, --help                    show this help`;

class UsageError extends Error {}

/** `--catalog-min-area maxar=25` (repeatable) as { maxar: 25 }. */
function catalogMinAreas(entries: string[]): Record<string, number> {
  return Object.fromEntries(
    entries.map((entry) => {
      const match = /^([^=\s]+)=(\d+(?:\.\d+)?)$/.exec(entry.trim());
      if (!match) throw new UsageError(`--catalog-min-area must be <provider>=<km²>, e.g. maxar=25 (got '${entry}')`);
      return [match[1]!, Number(match[2])];
    }),
  );
}

/** `--shared-project team,owner@example.com,5e9`. */
function sharedProject(text: string): { name: string; ownerEmail: string; aoiAreaLimitSqM: number } {
  const [name, ownerEmail, limit] = text.split(',').map((part) => part.trim());
  const aoiAreaLimitSqM = Number(limit);
  if (!name || !ownerEmail?.includes('@') || !(aoiAreaLimitSqM > 0)) throw new UsageError(`--shared-project must be <name>,<owner e-mail>,<aoiAreaLimit m²> (got '${text}')`);
  return { name, ownerEmail, aoiAreaLimitSqM };
}

function number(name: string, text: string | undefined, check: (n: number) => boolean, what: string): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || !check(value)) throw new UsageError(`--${name} must be ${what}, got '${text}'`);
  return value;
}

export function parseSimArgs(args: string[]): SimulatorOptions | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        token: { type: 'string' },
        email: { type: 'string' },
        'processing-seconds': { type: 'string' },
        'fault-rate': { type: 'string' },
        'drop-after-commit': { type: 'string' },
        seed: { type: 'string' },
        'latency-ms': { type: 'string' },
        'real-shapes': { type: 'boolean' },
        'billing-type': { type: 'string' },
        'storage-limit': { type: 'string' },
        'result-delay-seconds': { type: 'string' },
        'preprocessing-seconds': { type: 'string' },
        'queued-seconds': { type: 'string' },
        'awaiting-seconds': { type: 'string' },
        'order-awaiting-seconds': { type: 'string' },
        'catalog-min-area': { type: 'string', multiple: true },
        'shared-project': { type: 'string' },
        'max-aois': { type: 'string' },
        'search-area-limit': { type: 'string' },
        suspended: { type: 'boolean' },
        'uneven-progress': { type: 'boolean' },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return 'help';
  if (values.port === undefined) throw new UsageError('--port is required');
  if (!values.token) throw new UsageError('--token is required');
  if (!values.email) throw new UsageError('--email is required');
  if (!values.email.includes('@')) throw new UsageError(`--email must be an e-mail address, got '${values.email}'`);
  const fraction = (n: number) => n >= 0 && n <= 1;
  const billing = values['billing-type']?.toUpperCase();
  if (billing !== undefined && !['AREA', 'CREDITS', 'NONE'].includes(billing)) throw new UsageError(`--billing-type must be AREA, CREDITS or NONE, got '${values['billing-type']}'`);
  const storage = values['storage-limit'];
  const storageLimitBytes = storage === undefined ? undefined : storage.trim().toLowerCase() === 'none' ? null
    : number('storage-limit', storage, (n) => Number.isInteger(n) && n >= 0, "a whole number of bytes or 'none'");
  const seconds = (name: string) => number(name, values[name as keyof typeof values] as string | undefined, (n) => n >= 0, 'a number of seconds, 0 or more');
  const maxAois = number('max-aois', values['max-aois'], (n) => Number.isInteger(n) && n >= 1, 'a whole number, 1 or more');
  const searchAreaLimit = number('search-area-limit', values['search-area-limit'], (n) => n >= 0, 'a number of square metres, 0 or more');
  return {
    ...(billing && { billingType: billing as 'AREA' | 'CREDITS' | 'NONE' }),
    ...(storageLimitBytes !== undefined && { limits: { storageLimitBytes } }),
    ...(seconds('result-delay-seconds') !== undefined && { resultDelaySeconds: seconds('result-delay-seconds') }),
    ...(seconds('preprocessing-seconds') !== undefined && { preprocessingSeconds: seconds('preprocessing-seconds') }),
    ...(seconds('queued-seconds') !== undefined && { queuedSeconds: seconds('queued-seconds') }),
    ...(seconds('awaiting-seconds') !== undefined && { awaitingSeconds: seconds('awaiting-seconds') }),
    ...(seconds('order-awaiting-seconds') !== undefined && { orderAwaitingSeconds: seconds('order-awaiting-seconds') }),
    ...(values['catalog-min-area'] && { catalogMinAreasSqKm: catalogMinAreas(values['catalog-min-area']) }),
    ...(values['shared-project'] !== undefined && { sharedProject: sharedProject(values['shared-project']) }),
    ...(maxAois !== undefined && { maxAoisPerProcessing: maxAois }),
    ...(searchAreaLimit !== undefined && { searchAreaLimitSqM: searchAreaLimit }),
    ...(values.suspended && { suspended: true }),
    port: number('port', values.port, (n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'an integer from 0 to 65535'),
    token: values.token,
    email: values.email,
    processingSeconds: number('processing-seconds', values['processing-seconds'], (n) => n >= 0, 'a number of seconds, 0 or more'),
    faultRate: number('fault-rate', values['fault-rate'], fraction, 'a number from 0 to 1'),
    dropAfterCommit: number('drop-after-commit', values['drop-after-commit'], fraction, 'a number from 0 to 1'),
    seed: number('seed', values.seed, Number.isInteger, 'an integer'),
    latencyMs: number('latency-ms', values['latency-ms'], (n) => n >= 0, 'a number of milliseconds, 0 or more'),
    realShapes: values['real-shapes'] ?? false,
    ...(values['uneven-progress'] && { unevenProgress: true }),
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
  };
}

export async function runSimCommand(args: string[]): Promise<number> {
  let options: SimulatorOptions | 'help';
  try {
    options = parseSimArgs(args);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`mapflow-bridge sim: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  let simulator;
  try {
    simulator = await startSimulator(options);
  } catch (error) {
    if (error instanceof SimulatorOptionsError) {
      console.error(`mapflow-bridge sim: ${error.message}`);
      return 2;
    }
    console.error(`mapflow-bridge sim: cannot start: ${(error as Error).message}`);
    return 1;
  }
  console.log(simulator.url);
  const running = simulator;
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await running.close();
  return 0;
}
