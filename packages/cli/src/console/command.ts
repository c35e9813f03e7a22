/**
 * `mapflow-bridge console`: the jobs console (packages/cli/src/console/server.ts) for the
 * local ledger, or a deployed one with --table/--stack. `npm start` serves the
 * same console for the bridge it runs (see startBridgeConsole).
 */
import { S3Client } from '@aws-sdk/client-s3';
import type { LocalBridge } from '@mapflow-bridge/local/bridge';
import { openLedger, runningEndpoints } from '../jobs.ts';
import { DEFAULT_CONSOLE_PORT, DEFAULT_STATE_DIR } from '../state-dir.ts';
import { integerOption, LEDGER_OPTIONS, ledgerChoice, OPTIONS, runCommand, usageOf, type CliOptions, type CommandLine, type LedgerChoice } from '../args.ts';
import { localS3Client } from '@mapflow-bridge/local/s3/client';
import { startConsoleServer, type ConsoleServer } from './server.ts';

export const CONSOLE_COMMAND = {
  name: 'console',
  synopsis: `Usage: mapflow-bridge console [--port <n>] [--table <name> | --stack <name>] [--region <r>]

Serves the jobs console on http://127.0.0.1:<port>/ (this machine only; read-only):
the jobs as a live table with filters, a page per job (history, Mapflow ids,
messages, quicklooks) and maps of the AOIs and results. Reads the local ledger
(of npm start, in ./${DEFAULT_STATE_DIR}), or a deployed one (AWS credentials from the
environment; results are read from the jobs' bucket).`,
  options: {
    port: { type: 'string', value: '<n>', help: 'port on 127.0.0.1 (default: a free one)' },
    ...LEDGER_OPTIONS,
    help: OPTIONS.help,
  },
} as const satisfies CommandLine<CliOptions>;

export const CONSOLE_USAGE = usageOf(CONSOLE_COMMAND);

/** The console of a bridge running in this process (npm start). */
export function startBridgeConsole(bridge: LocalBridge, port?: number): Promise<ConsoleServer> {
  return startConsoleServer({ ledger: bridge.ledger, s3: bridge.s3, description: 'the local bridge', ...(port !== undefined ? { port } : {}) });
}

export async function runConsoleCommand(args: string[]): Promise<number> {
  return runCommand(CONSOLE_COMMAND, args, async ({ values }) => serveConsole(values.port === undefined ? undefined : integerOption(values.port, '--port', 0, 65_535), ledgerChoice(values)));
}

/** The console of the chosen ledger until Ctrl-C. */
async function serveConsole(port: number | undefined, ledger: LedgerChoice): Promise<number> {
  let source;
  try {
    source = await openLedger({ ...ledger, command: 'mapflow-bridge console' });
  } catch (error) {
    console.error(`mapflow-bridge console: ${(error as Error).message}`);
    return 1;
  }
  const { deployed } = ledger;
  const endpoints = deployed ? undefined : await runningEndpoints(ledger.stateDir);
  const s3 = deployed ? new S3Client(ledger.region ? { region: ledger.region } : {}) : endpoints?.s3 ? localS3Client(endpoints.s3, endpoints.credentials) : undefined;
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
 * (packages/local/src/bridge.ts startS3OnPort).
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
  const { startControlServer } = await import('../control.ts');
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
