/**
 * The one command-line parser of the commands (start, local run, jobs, costs,
 * console, doctor): node:util parseArgs over a table of options, the options
 * the commands share (OPTIONS) and each command's own, from which the same
 * table writes the command's --help. Its errors become the project's own
 * one-line messages with exit 2: Node's text ("Unknown option '--x'. To
 * specify a positional argument starting with a '-', place it at the end of
 * the command after '--', as in '-- \"--x\".") speaks of its own internals; a
 * user needs the option and where to look.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { validDynamoDbEndpoint } from '@mapflow-bridge/local/dynamodb/endpoint';
import type { PollPolicy } from 'mapflow-bridge/functions/polling/poll-policy.ts';
import { DEFAULT_CREDIT_BUDGET, parseRoutes } from 'mapflow-bridge/functions/routing/index.ts';
import { isDynamoDbTableName, pollPolicyProblems } from 'mapflow-bridge/functions/runtime/config.ts';
import { localPollPolicy } from '@mapflow-bridge/local/poll-policy';
import { FaultSpecError, INJECT_FAULTS_ENV, parseFaults, type FaultSettings } from '@mapflow-bridge/local/faults';
import type { MapflowTarget } from '@mapflow-bridge/local/bridge';
import { DEFAULT_OUTPUT_DIR } from './outputs.ts';
import { DEFAULT_STATE_DIR } from './state-dir.ts';

/** One option of a command line: how parseArgs reads it, and its line in the command's --help. */
export interface CliOption {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** The placeholder of its value in --help: '<dir>'. */
  readonly value?: string;
  /** What --help shows instead of `--name <value>` ('-h, --help'). */
  readonly label?: string;
  /** Parsed, but on no line of --help of its own (--no-console: on the line of --console). */
  readonly hidden?: boolean;
  /** Its --help text; a second line and more are continued under the first. */
  readonly help: string;
}

export type CliOptions = Readonly<Record<string, CliOption>>;

/** What parseArgs gives for a table of options: a string or a boolean each, undefined when not given. */
export type OptionValues<O extends CliOptions> = { [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string };

export { INJECT_FAULTS_ENV } from '@mapflow-bridge/local/faults';

/** The variable that sets --memory-budget when the option is not given. */
export const MEMORY_BUDGET_ENV = 'MAPFLOW_BRIDGE_MEMORY_BUDGET_MB';

/**
 * The options several commands take, written once: the ledger a command reads
 * (--table, --stack, --region, --state-dir: jobs, costs, console) and what a
 * local bridge runs with (start, local run).
 */
export const OPTIONS = {
  help: { type: 'boolean', short: 'h', label: '-h, --help', help: 'show this help' },
  json: { type: 'boolean', help: 'print JSON' },
  table: { type: 'string', value: '<name>', help: 'a deployed ledger table (AWS credentials from the environment)' },
  stack: { type: 'string', value: '<name>', help: 'a deployed stack (its table from the outputs)' },
  region: { type: 'string', value: '<region>', help: 'their region' },
  'state-dir': { type: 'string', value: '<dir>', help: `the local state folder (default ./${DEFAULT_STATE_DIR})` },
  out: { type: 'string', value: '<dir>', help: `where result copies are written (default ./${DEFAULT_OUTPUT_DIR})` },
  'processing-seconds': { type: 'string', value: '<n>', help: 'how long a simulated processing takes' },
  'mapflow-url': { type: 'string', value: '<url>', help: 'use this Mapflow API (real, or a simulator) instead of the embedded simulator' },
  token: { type: 'string', value: '<token>', help: 'its token (required with --mapflow-url)' },
  email: { type: 'string', value: '<email>', help: 'its account e-mail (for Basic authentication)' },
  'mapflow-wait': { type: 'string', value: '<seconds>', help: 'how long to keep asking a --mapflow-url that does not answer at start\n(default 30)' },
  routes: { type: 'string', value: '<file>', help: 'routes JSON (default: the built-in routes)' },
  'credit-budget': {
    type: 'string',
    value: '<n>',
    help: `the credit budget of every route that sets none (default ${DEFAULT_CREDIT_BUDGET}, as deployed;\nthe simulator's credits are not real: e.g. 1000 for a city-sized GeoJSON)`,
  },
  'poll-policy': {
    type: 'string',
    value: '<json>',
    help: [
      'how often processings are polled, keys as POLL_POLICY on AWS (e.g.',
      `'{"initialSeconds":5,"maxSeconds":30}'); default quick against the`,
      'simulator, the production policy (15 s rising to 60 s) with --mapflow-url',
    ].join('\n'),
  },
  'dynamodb-endpoint': {
    type: 'string',
    value: '<url>',
    help: 'keep the ledger in this DynamoDB (a DynamoDB Local you run, e.g. in\nDocker) instead of starting DynamoDB Local; Java is then not needed',
  },
  'ledger-table': {
    type: 'string',
    value: '<name>',
    help: "the ledger's table in --dynamodb-endpoint, created when missing, so\nthat several bridges can share one DynamoDB (default mapflow-bridge-ledger)",
  },
  verbose: { type: 'boolean', help: "show the functions' logs" },
  'memory-budget': {
    type: 'string',
    value: '<MiB>',
    help: [
      "what the functions' environments may hold at once, each its MemorySize",
      'while it runs; half of it is kept for the light steps (default: half',
      `the machine's memory, from 2048 to 4096; also ${MEMORY_BUDGET_ENV})`,
    ].join('\n'),
  },
  'inject-faults': {
    type: 'string',
    value: '<faults>',
    help: [
      "inject AWS's occasional faults at these rates, e.g.",
      "'dynamodb-conflict=0.2,gsi-lag=0.3,duplicate-delivery=0.3,seed=42'",
      `(testing; default none; also ${INJECT_FAULTS_ENV}; docs/local.md)`,
    ].join('\n'),
  },
} as const satisfies CliOptions;

/** Which ledger: a deployed table or stack, or the local one in a state folder. */
export const LEDGER_OPTIONS = pick(OPTIONS, 'table', 'stack', 'region', 'state-dir');

/** What a local bridge runs with: start and local run. */
export const BRIDGE_OPTIONS = pick(OPTIONS, 'out', 'processing-seconds', 'mapflow-url', 'token', 'email', 'mapflow-wait', 'routes', 'credit-budget', 'poll-policy', 'dynamodb-endpoint', 'ledger-table', 'memory-budget', 'inject-faults');

/**
 * The smallest --memory-budget: two decoding functions' 1,024 MiB (one in the
 * decoding processes' half, and as much kept for the light steps).
 */
export const MIN_MEMORY_BUDGET_MB = 2048;

/** --memory-budget, else MAPFLOW_BRIDGE_MEMORY_BUDGET_MB, checked; undefined: the default (packages/local/src/assembly/functions.ts). */
export function memoryBudgetOption(value: string | undefined, env: NodeJS.ProcessEnv = process.env): number | undefined {
  const [text, name] = value !== undefined ? [value, '--memory-budget'] : [env[MEMORY_BUDGET_ENV], MEMORY_BUDGET_ENV];
  if (text === undefined || text === '') return undefined;
  return integerOption(text, name, MIN_MEMORY_BUDGET_MB, 1024 * 1024);
}

/** --inject-faults, else MAPFLOW_BRIDGE_INJECT_FAULTS, checked (packages/local/src/faults.ts); undefined: no faults. */
export function injectFaultsOption(value: string | undefined, env: NodeJS.ProcessEnv = process.env): FaultSettings | undefined {
  const [text, name] = value !== undefined ? [value, '--inject-faults'] : [env[INJECT_FAULTS_ENV], INJECT_FAULTS_ENV];
  if (text === undefined || (text === '' && value === undefined)) return undefined;
  try {
    return parseFaults(text, name);
  } catch (error) {
    if (error instanceof FaultSpecError) throw new UsageError(`${error.message}.`);
    throw error;
  }
}

/** Some options of a table, in the order named. */
export function pick<O extends CliOptions, K extends keyof O & string>(options: O, ...names: K[]): Pick<O, K> {
  return Object.fromEntries(names.map((name) => [name, options[name]])) as Pick<O, K>;
}

/** A command's line: its name in messages, its --help above and below the options, and its options. */
export interface CommandLine<O extends CliOptions> {
  /** 'start', 'local run', 'jobs': as the messages name it. */
  readonly name: string;
  /** The --help text before the options: usage lines and what the command does. */
  readonly synopsis: string;
  readonly options: O;
  /** The --help text after the options (the exit status). */
  readonly epilogue?: string;
  readonly allowPositionals?: boolean;
}

/** A command's --help: its synopsis, one line per option (aligned), its epilogue. */
export function usageOf(command: CommandLine<CliOptions>): string {
  const shown = Object.entries(command.options).filter(([, option]) => !option.hidden);
  const labels = shown.map(([name, option]) => option.label ?? `--${name}${option.value ? ` ${option.value}` : ''}`);
  const width = Math.max(...labels.map((label) => label.length)) + 3;
  const lines = shown.flatMap(([, option], index) =>
    option.help.split('\n').map((text, line) => `  ${(line === 0 ? labels[index]! : '').padEnd(width)}${text}`),
  );
  return [command.synopsis, '', 'Options:', ...lines, ...(command.epilogue ? ['', command.epilogue] : [])].join('\n');
}

/** A command line parsed: undefined for --help (the caller prints usageOf), else its values and positionals. */
export function parseCommand<O extends CliOptions>(command: CommandLine<O>, args: string[]): { values: OptionValues<O>; positionals: string[] } | undefined {
  const options = Object.fromEntries(
    Object.entries(command.options).map(([name, option]) => [name, { type: option.type, ...(option.short ? { short: option.short } : {}) }]),
  ) as ParseArgsConfig['options'];
  const { values, positionals } = parseCommandLine({ args, options, strict: true, allowPositionals: command.allowPositionals ?? false });
  if ((values as { help?: boolean }).help) return undefined;
  return { values: values as OptionValues<O>, positionals };
}

/**
 * Runs a command: parses its line, prints its --help (exit 0), and answers a
 * UsageError, from the parser or from `run`, with its one line (exit 2).
 */
export async function runCommand<O extends CliOptions>(
  command: CommandLine<O>,
  args: string[],
  run: (parsed: { values: OptionValues<O>; positionals: string[] }) => Promise<number>,
  print: { out(text: string): void; error(text: string): void } = { out: (text) => console.log(text), error: (text) => console.error(text) },
): Promise<number> {
  try {
    const parsed = parseCommand(command, args);
    if (!parsed) {
      print.out(usageOf(command));
      return 0;
    }
    return await run(parsed);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    print.error(usageLine(command.name, error.message));
    return 2;
  }
}

/** The ledger the options of LEDGER_OPTIONS choose, as openLedger (jobs.ts) takes it. */
export interface LedgerChoice {
  table?: string;
  stack?: string;
  region?: string;
  /** Absolute. */
  stateDir: string;
  /** --table or --stack: a deployed ledger, not the local one. */
  deployed: boolean;
}

export function ledgerChoice(values: OptionValues<typeof LEDGER_OPTIONS>): LedgerChoice {
  return {
    ...(values.table ? { table: values.table } : {}),
    ...(values.stack ? { stack: values.stack } : {}),
    ...(values.region ? { region: values.region } : {}),
    stateDir: path.resolve(values['state-dir'] ?? DEFAULT_STATE_DIR),
    deployed: Boolean(values.table || values.stack),
  };
}

/** What BRIDGE_OPTIONS say, checked; the defaults that differ (processing seconds) are the command's. */
export interface BridgeChoice {
  outDir: string;
  processingSeconds?: number;
  mapflow?: MapflowTarget;
  /** The routes file's JSON, checked. */
  routes?: string;
  /** --credit-budget: the budget of every route that sets none (default: the routes' default, as deployed). */
  creditBudget?: number;
  dynamodbEndpoint?: string;
  /** --ledger-table: the ledger's table in that DynamoDB (default: the bridge's). */
  ledgerTable?: string;
  pollPolicy?: Partial<PollPolicy>;
  /** --mapflow-wait: how long the start-up check keeps asking a Mapflow that does not answer, ms (default: checkMapflow's). */
  mapflowWaitMs?: number;
  /** --memory-budget (or MAPFLOW_BRIDGE_MEMORY_BUDGET_MB), MiB: what the functions' environments may hold at once. */
  memoryBudgetMb?: number;
  /** --inject-faults (or MAPFLOW_BRIDGE_INJECT_FAULTS): the faults injected and their seed. */
  injectFaults?: FaultSettings;
}

export async function bridgeChoice(values: OptionValues<typeof BRIDGE_OPTIONS>): Promise<BridgeChoice> {
  const processingSeconds = values['processing-seconds'] === undefined ? undefined : positiveOption(values['processing-seconds'], '--processing-seconds');
  const mapflow = mapflowOption(values);
  if (values['mapflow-wait'] !== undefined && !mapflow) throw new UsageError('--mapflow-wait goes with --mapflow-url.');
  const mapflowWait = values['mapflow-wait'] === undefined ? undefined : positiveOption(values['mapflow-wait'], '--mapflow-wait');
  const routes = values.routes === undefined ? undefined : await routesOption(values.routes);
  const creditBudget = values['credit-budget'] === undefined ? undefined : positiveOption(values['credit-budget'], '--credit-budget');
  const dynamodbEndpoint = dynamodbEndpointOption(values['dynamodb-endpoint']);
  // Only in a DynamoDB of the user's own: a ledger in the state folder is read back under its one name (jobs, costs).
  if (values['ledger-table'] !== undefined && !dynamodbEndpoint) throw new UsageError('--ledger-table goes with --dynamodb-endpoint.');
  const ledgerTable = ledgerTableOption(values['ledger-table']);
  const pollPolicy = pollPolicyOption(values['poll-policy'], mapflow);
  const memoryBudgetMb = memoryBudgetOption(values['memory-budget']);
  const injectFaults = injectFaultsOption(values['inject-faults']);
  return {
    outDir: path.resolve(values.out ?? DEFAULT_OUTPUT_DIR),
    ...(processingSeconds !== undefined ? { processingSeconds } : {}),
    ...(mapflow ? { mapflow } : {}),
    ...(routes !== undefined ? { routes } : {}),
    ...(creditBudget !== undefined ? { creditBudget } : {}),
    ...(dynamodbEndpoint ? { dynamodbEndpoint } : {}),
    ...(ledgerTable ? { ledgerTable } : {}),
    ...(pollPolicy ? { pollPolicy } : {}),
    ...(mapflowWait !== undefined ? { mapflowWaitMs: mapflowWait * 1000 } : {}),
    ...(memoryBudgetMb !== undefined ? { memoryBudgetMb } : {}),
    ...(injectFaults ? { injectFaults } : {}),
  };
}

/** --mapflow-url with its --token (and --email), or a UsageError. */
function mapflowOption(values: { 'mapflow-url'?: string; token?: string; email?: string }): MapflowTarget | undefined {
  const url = values['mapflow-url'];
  if (url === undefined) {
    if (values.token !== undefined || values.email !== undefined) throw new UsageError('--token and --email go with --mapflow-url.');
    return undefined;
  }
  if (!values.token) throw new UsageError('--mapflow-url needs --token.');
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--mapflow-url '${url}' is not a URL.`);
  }
  return { url, token: values.token, ...(values.email ? { email: values.email } : {}) };
}

/** --routes: the file's JSON, readable and valid routes, or a UsageError. */
async function routesOption(file: string): Promise<string> {
  const routes = await readFile(file, 'utf8').catch(() => {
    throw new UsageError(`cannot read the routes file '${file}'.`);
  });
  try {
    parseRoutes(routes);
  } catch (error) {
    throw new UsageError(`${file}: ${(error as Error).message}`);
  }
  return routes;
}

/** A wrong command line: the command prints the message and exits 2. */
export class UsageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UsageError';
  }
}

/** parseArgs, throwing UsageError with a plain message. */
export function parseCommandLine<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError(describeParseError(error), { cause: error });
  }
}

/** The message of a parseArgs error, in the project's words. */
export function describeParseError(error: unknown): string {
  const code = (error as { code?: string }).code;
  const message = (error as Error).message ?? String(error);
  const quoted = /'([^']+)'/.exec(message)?.[1] ?? '';
  const option = quoted.split(' ')[0] ?? quoted;
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (/argument is ambiguous/.test(message)) return `${option} needs a value (one that starts with '-' is written ${option}=<value>)`;
      return /argument missing/.test(message) ? `${option} needs a value` : `${option} takes no value`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument '${quoted}'`;
    default:
      return message;
  }
}

/** The one line a command prints for a usage error. */
export function usageLine(command: string, message: string): string {
  return `mapflow-bridge ${command}: ${message.replace(/\.$/, '')}. Run 'mapflow-bridge ${command} --help' for the options.`;
}

/** A whole number of a range, or a UsageError naming the option. */
export function integerOption(text: string, option: string, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new UsageError(`${option} must be a whole number from ${min} to ${max}, not '${text}'`);
  return value;
}

/** A positive number, or a UsageError naming the option. */
export function positiveOption(text: string, option: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new UsageError(`${option} must be a positive number, not '${text}'`);
  return value;
}

/** --dynamodb-endpoint: an http(s) URL (its origin), or a UsageError. */
export function dynamodbEndpointOption(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  try {
    return validDynamoDbEndpoint(text);
  } catch (error) {
    throw new UsageError(`--dynamodb-endpoint: ${(error as Error).message}`, { cause: error });
  }
}

/** --ledger-table: a name DynamoDB accepts (isDynamoDbTableName), or a UsageError. */
export function ledgerTableOption(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  if (!isDynamoDbTableName(text)) {
    throw new UsageError(`--ledger-table: '${text.slice(0, 60)}' is not a DynamoDB table name (3 to 255 letters, digits, '_', '.' or '-').`);
  }
  return text;
}

/**
 * --poll-policy: a JSON object of POLL_POLICY keys laid over the bridge's own
 * policy (quick against the simulator, the production default against
 * --mapflow-url), checked as the handlers check POLL_POLICY on AWS.
 */
export function pollPolicyOption(text: string | undefined, mapflow: MapflowTarget | undefined): Partial<PollPolicy> | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`--poll-policy must be a JSON object such as '{"initialSeconds":15,"maxSeconds":60}', not '${text}'`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`--poll-policy must be a JSON object such as '{"initialSeconds":15,"maxSeconds":60}', not '${text}'`);
  }
  const overrides = parsed as Partial<PollPolicy>;
  const problems = pollPolicyProblems(JSON.stringify(localPollPolicy({ ...(mapflow ? { mapflow } : {}), pollPolicy: overrides })));
  if (problems.length > 0) throw new UsageError(`--poll-policy: ${problems.join(' ').replaceAll('POLL_POLICY', 'the policy')}`);
  return overrides;
}
