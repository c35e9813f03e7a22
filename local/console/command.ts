/**
 * `mapflow-bridge console`: the jobs console (local/console/server.ts) for the
 * local ledger, or a deployed one with --table/--stack. `npm start` serves the
 * same console for the bridge it runs (see startBridgeConsole).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { S3Client } from '@aws-sdk/client-s3';
import type { LocalBridge } from '../bridge.ts';
import { openLedger, runningEndpoints } from '../cli/jobs.ts';
import { DEFAULT_CONSOLE_PORT, DEFAULT_STATE_DIR } from '../cli/state-dir.ts';
import { localS3Client } from '../s3/client.ts';
import { startConsoleServer, type ConsoleServer } from './server.ts';

export const CONSOLE_USAGE = `Usage: mapflow-bridge console [--port <n>] [--table <name> | --stack <name>] [--region <r>]

Serves the jobs console on http://127.0.0.1:<port>/ (this machine only; read-only):
the jobs as a live table with filters, a page per job (history, Mapflow ids,
messages, quicklooks) and maps of the AOIs and results. Reads the local ledger
(of npm start, in ./${DEFAULT_STATE_DIR}), or a deployed one (AWS credentials from the
environment; results are read from the jobs' bucket).

Options:
  --port <n>            port on 127.0.0.1 (default: a free one)
  --table <name>        a deployed ledger table
  --stack <name>        a deployed stack (its table from the outputs)
  --region <region>     their region
  --state-dir <dir>     the local state folder (default ./${DEFAULT_STATE_DIR})
  -h, --help            show this help`;

/** The console of a bridge running in this process (npm start). */
export function startBridgeConsole(bridge: LocalBridge, port?: number): Promise<ConsoleServer> {
  return startConsoleServer({ ledger: bridge.ledger, s3: bridge.s3, description: 'the local bridge', ...(port !== undefined ? { port } : {}) });
}

export async function runConsoleCommand(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      options: {
        port: { type: 'string' },
        table: { type: 'string' },
        stack: { type: 'string' },
        region: { type: 'string' },
        'state-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (error) {
    console.error(`mapflow-bridge console: ${(error as Error).message}\n\n${CONSOLE_USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(CONSOLE_USAGE);
    return 0;
  }
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    console.error('mapflow-bridge console: --port must be a port number (0-65535).');
    return 2;
  }
  const stateDir = path.resolve(values['state-dir'] ?? DEFAULT_STATE_DIR);
  let source;
  try {
    source = await openLedger({
      ...(values.table ? { table: values.table } : {}),
      ...(values.stack ? { stack: values.stack } : {}),
      ...(values.region ? { region: values.region } : {}),
      stateDir,
    });
  } catch (error) {
    console.error(`mapflow-bridge console: ${(error as Error).message}`);
    return 1;
  }
  const deployed = Boolean(values.table || values.stack);
  const endpoints = deployed ? undefined : await runningEndpoints(stateDir);
  const s3 = deployed ? new S3Client(values.region ? { region: values.region } : {}) : endpoints?.s3 ? localS3Client(endpoints.s3, endpoints.credentials) : undefined;
  const server = await startConsoleServer({
    ledger: source.ledger,
    ...(s3 ? { s3 } : {}),
    description: deployed ? source.description : endpoints ? 'the running local bridge' : source.description,
    ...(port !== undefined ? { port } : {}),
  });
  console.log(`Jobs console: ${server.url}   (reading ${source.description}; Ctrl-C to stop)`);
  if (!s3) console.log('The local bridge is not running: results and quicklooks are not shown (start it with npm start).');
  return new Promise<number>((resolve) => {
    const stop = () => {
      void server
        .close()
        .then(() => source.close())
        .then(() => {
          s3?.destroy();
          resolve(0);
        });
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/**
 * Starts the console on `port`; when that port is taken and `fallback` is set,
 * on a free port instead, saying so in the words the local S3 uses
 * (local/bridge.ts startS3OnPort).
 */
export async function startConsoleOnPort(
  start: (port: number) => Promise<ConsoleServer>,
  port: number,
  fallback: boolean,
  log: (message: string) => void,
): Promise<ConsoleServer> {
  try {
    return await start(port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    if (!fallback || port === 0) throw new Error(`port ${port} for the console is taken by another program; give another with --console-port.`, { cause: error });
    const running = await start(0);
    log(`local bridge: port ${port} is taken by another program, so the console listens on port ${new URL(running.url).port} this time (--console-port chooses one).`);
    return running;
  }
}

/**
 * What `start` serves beside the bridge: the control endpoint of `jobs retry`
 * and `jobs cancel`, and (unless turned off) the console. Never fails the
 * start: a part that cannot start is reported and left out.
 */
export async function startOperatorServices(
  bridge: LocalBridge,
  stateDir: string,
  options: { console: boolean; consolePort?: number; log(message: string): void },
): Promise<{ consoleUrl?: string; close(): Promise<void> }> {
  const { startControlServer } = await import('../cli/control.ts');
  const closers: (() => Promise<void>)[] = [];
  let consoleUrl: string | undefined;
  try {
    const control = await startControlServer(bridge, stateDir);
    closers.push(() => control.close());
  } catch (error) {
    options.log(`jobs retry/cancel will not reach this bridge: ${(error as Error).message}`);
  }
  if (options.console) {
    try {
      // --console-port: that port or nothing; by default the usual port, or a free one when it is taken.
      const server = await startConsoleOnPort(
        (port) => startBridgeConsole(bridge, port),
        options.consolePort ?? DEFAULT_CONSOLE_PORT,
        options.consolePort === undefined,
        options.log,
      );
      consoleUrl = server.url;
      closers.push(() => server.close());
    } catch (error) {
      options.log(`the jobs console could not start: ${(error as Error).message}`);
    }
  }
  return {
    ...(consoleUrl ? { consoleUrl } : {}),
    async close() {
      for (const close of closers.reverse()) await close().catch(() => undefined);
    },
  };
}
