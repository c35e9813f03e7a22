/**
 * The bridge's configuration, read once from the environment and validated
 * before any work is done: a typo in a deployment must fail the first
 * invocation with a message that names the variable and the fix, not surface
 * later as a job sent to the wrong place. Names and defaults: docs/architecture.md.
 *
 * Secrets are never part of the configuration (it is safe to log): the Mapflow
 * token is read by `functions/runtime/mapflow.ts` when a client is needed.
 */
import { ConfigurationError } from '../core/errors.ts';
import { OPTIONAL_POLL_POLICY_KEYS, type PollPolicy } from '../polling/poll-policy.ts';
import { AUTH_SCHEMES, type AuthScheme } from '../mapflow/index.ts';
import { parseRoutes, type Routes } from '../routing/index.ts';

/** Poll policy: one definition, with the poll step that applies it. */
export type { PollPolicy } from '../polling/poll-policy.ts';

export interface BridgeConfig {
  ledgerTable: string;
  eventBusName: string;
  eventSource: string;
  mapflow: { baseUrl: string; authScheme: AuthScheme; secretArn?: string };
  routes: Routes;
  /** S3 layout; every prefix ends with '/'. */
  prefixes: { inbox: string; results: string; failed: string; work: string };
  maxConcurrentProcessings: number;
  pollPolicy: PollPolicy;
  stateMachineArn?: string;
  /** Days a finished job's ledger row is kept (it gets `expiresAt` for DynamoDB TTL); undefined: forever. */
  ledgerRetentionDays?: number;
  /** AWS region for the SDK clients; undefined lets the SDK resolve it (Lambda sets AWS_REGION). */
  region?: string;
  /** Local mode only: endpoints of s3rver / DynamoDB Local and the events file. */
  local: { s3Endpoint?: string; dynamodbEndpoint?: string; eventsFile?: string; sfnEndpoint?: string };
}

/** What DynamoDB accepts as a table name: 3-255 of A-Z a-z 0-9 _ . - (LEDGER_TABLE here, --ledger-table locally). */
export function isDynamoDbTableName(name: string): boolean {
  return /^[A-Za-z0-9_.-]{3,255}$/.test(name);
}

export const DEFAULTS = {
  eventBusName: 'default',
  eventSource: 'mapflow.bridge',
  mapflowBaseUrl: 'https://api.mapflow.ai/rest',
  authScheme: 'auto',
  prefixes: { inbox: 'inbox/', results: 'results/', failed: 'failed/', work: 'work/' },
  maxConcurrentProcessings: 5,
  // No maxPolls: the poll count follows from maxJobSeconds (functions/polling/poll-policy.ts pollsFor).
  pollPolicy: { initialSeconds: 15, maxSeconds: 60, factor: 1.5, maxJobSeconds: 86_400 },
  /** Region used for local endpoints when none is set (local services ignore it). */
  localRegion: 'us-east-1',
} as const satisfies Record<string, unknown>;

/** Every variable the configuration reads (also used to key caches). */
export const CONFIG_VARIABLES = [
  'LEDGER_TABLE',
  'EVENT_BUS_NAME',
  'EVENT_SOURCE',
  'MAPFLOW_SECRET_ARN',
  'MAPFLOW_BASE_URL',
  'MAPFLOW_AUTH_SCHEME',
  'ROUTES',
  'INBOX_PREFIX',
  'RESULTS_PREFIX',
  'FAILED_PREFIX',
  'WORK_PREFIX',
  'MAX_CONCURRENT_PROCESSINGS',
  'POLL_POLICY',
  'STATE_MACHINE_ARN',
  'LEDGER_RETENTION_DAYS',
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'BRIDGE_S3_ENDPOINT',
  'BRIDGE_DYNAMODB_ENDPOINT',
  'BRIDGE_EVENTS_FILE',
  'BRIDGE_SFN_ENDPOINT',
] as const;

/**
 * Reads and validates the configuration. Every problem found is reported at
 * once, one per line, so a deployment is fixed in one round.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): BridgeConfig {
  const problems: string[] = [];
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };

  const ledgerTable = read('LEDGER_TABLE');
  if (ledgerTable === undefined) problems.push('LEDGER_TABLE is required: the name of the DynamoDB ledger table.');
  else if (!isDynamoDbTableName(ledgerTable)) {
    problems.push(`LEDGER_TABLE "${ledgerTable}" is not a DynamoDB table name (3-255 of A-Z a-z 0-9 _ . -).`);
  }

  const eventBusName = read('EVENT_BUS_NAME') ?? DEFAULTS.eventBusName;
  if (!/^(arn:[^\s]+|[A-Za-z0-9/_.-]{1,256})$/.test(eventBusName)) {
    problems.push(`EVENT_BUS_NAME "${eventBusName}" is neither an event bus name nor an ARN.`);
  }
  const eventSource = read('EVENT_SOURCE') ?? DEFAULTS.eventSource;
  if (eventSource.startsWith('aws.')) problems.push(`EVENT_SOURCE "${eventSource}" may not start with "aws." (reserved by AWS).`);
  else if (!/^[A-Za-z0-9._-]{1,256}$/.test(eventSource)) problems.push(`EVENT_SOURCE "${eventSource}" may only contain A-Z a-z 0-9 . _ -.`);

  const baseUrl = readUrl(read('MAPFLOW_BASE_URL') ?? DEFAULTS.mapflowBaseUrl, 'MAPFLOW_BASE_URL', problems);
  const authScheme = read('MAPFLOW_AUTH_SCHEME')?.toLowerCase() ?? DEFAULTS.authScheme;
  if (!(AUTH_SCHEMES as readonly string[]).includes(authScheme)) {
    problems.push(`MAPFLOW_AUTH_SCHEME "${authScheme}" must be one of ${AUTH_SCHEMES.join(', ')}.`);
  }
  const secretArn = read('MAPFLOW_SECRET_ARN');

  let routes: Routes = { routes: [] };
  try {
    routes = parseRoutes(read('ROUTES'));
  } catch (error) {
    problems.push(error instanceof ConfigurationError ? error.message : `ROUTES is invalid: ${(error as Error).message}`);
  }

  const prefixes = {
    inbox: readPrefix(env, 'INBOX_PREFIX', DEFAULTS.prefixes.inbox, problems),
    results: readPrefix(env, 'RESULTS_PREFIX', DEFAULTS.prefixes.results, problems),
    failed: readPrefix(env, 'FAILED_PREFIX', DEFAULTS.prefixes.failed, problems),
    work: readPrefix(env, 'WORK_PREFIX', DEFAULTS.prefixes.work, problems),
  };
  checkPrefixesApart(prefixes, problems);

  const maxConcurrentProcessings = readInteger(
    read('MAX_CONCURRENT_PROCESSINGS'),
    'MAX_CONCURRENT_PROCESSINGS',
    DEFAULTS.maxConcurrentProcessings,
    { min: 1, max: 1_000 },
    problems,
  );
  const pollPolicy = readPollPolicy(read('POLL_POLICY'), problems);

  const retentionText = read('LEDGER_RETENTION_DAYS');
  const ledgerRetentionDays =
    retentionText === undefined ? undefined : readInteger(retentionText, 'LEDGER_RETENTION_DAYS', 0, { min: 1, max: 36_500 }, problems);

  const stateMachineArn = read('STATE_MACHINE_ARN');
  if (stateMachineArn !== undefined && !/^arn:[^:]+:states:[^:]*:[^:]*:stateMachine:[^:]+$/.test(stateMachineArn)) {
    problems.push(`STATE_MACHINE_ARN "${stateMachineArn}" is not a state machine ARN (arn:aws:states:<region>:<account>:stateMachine:<name>).`);
  }

  const local = {
    s3Endpoint: optionalUrl(read('BRIDGE_S3_ENDPOINT'), 'BRIDGE_S3_ENDPOINT', problems),
    dynamodbEndpoint: optionalUrl(read('BRIDGE_DYNAMODB_ENDPOINT'), 'BRIDGE_DYNAMODB_ENDPOINT', problems),
    eventsFile: read('BRIDGE_EVENTS_FILE'),
    // The local engine's SendTaskSuccess endpoint (slot hand-over to a waiting task token).
    sfnEndpoint: optionalUrl(read('BRIDGE_SFN_ENDPOINT'), 'BRIDGE_SFN_ENDPOINT', problems),
  };
  const anyLocal = local.s3Endpoint !== undefined || local.dynamodbEndpoint !== undefined || local.eventsFile !== undefined;
  const region = read('AWS_REGION') ?? read('AWS_DEFAULT_REGION') ?? (anyLocal ? DEFAULTS.localRegion : undefined);

  if (problems.length > 0) {
    throw new ConfigurationError(`Invalid mapflow-bridge configuration:\n- ${problems.join('\n- ')}`);
  }
  return {
    ledgerTable: ledgerTable!,
    eventBusName,
    eventSource,
    mapflow: { baseUrl, authScheme: authScheme as AuthScheme, ...(secretArn ? { secretArn } : {}) },
    routes,
    prefixes,
    maxConcurrentProcessings,
    pollPolicy,
    ...(stateMachineArn ? { stateMachineArn } : {}),
    ...(ledgerRetentionDays ? { ledgerRetentionDays } : {}),
    ...(region ? { region } : {}),
    local: dropUndefined(local),
  };
}

/** True when any local endpoint is configured (local mode: dummy credentials, path-style S3). */
export function isLocal(config: BridgeConfig): boolean {
  return Boolean(config.local.s3Endpoint || config.local.dynamodbEndpoint || config.local.eventsFile);
}

function readUrl(value: string, name: string, problems: string[]): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
    return value.replace(/\/+$/, '');
  } catch {
    problems.push(`${name} "${value}" is not an http(s) URL.`);
    return value;
  }
}

function optionalUrl(value: string | undefined, name: string, problems: string[]): string | undefined {
  return value === undefined ? undefined : readUrl(value, name, problems);
}

/** A prefix is a folder: no leading '/', ends with '/' (added when missing). */
function readPrefix(env: NodeJS.ProcessEnv, name: string, fallback: string, problems: string[]): string {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  if (raw.startsWith('/')) {
    problems.push(`${name} "${raw}" must not start with "/" (S3 keys have no leading slash), e.g. "${raw.replace(/^\/+/, '')}".`);
    return raw;
  }
  if (raw.includes('//')) problems.push(`${name} "${raw}" contains an empty folder ("//").`);
  return raw.endsWith('/') ? raw : `${raw}/`;
}

/**
 * Results, reports and work files must never land under the inbox (they would
 * trigger new jobs), and no two areas may overlap.
 */
function checkPrefixesApart(prefixes: BridgeConfig['prefixes'], problems: string[]): void {
  const entries = Object.entries(prefixes) as [keyof typeof prefixes, string][];
  const variable = { inbox: 'INBOX_PREFIX', results: 'RESULTS_PREFIX', failed: 'FAILED_PREFIX', work: 'WORK_PREFIX' };
  for (let i = 0; i < entries.length; i++) {
    for (let j = i + 1; j < entries.length; j++) {
      const [a, pa] = entries[i];
      const [b, pb] = entries[j];
      if (pa.startsWith(pb) || pb.startsWith(pa)) {
        problems.push(`${variable[a]} "${pa}" and ${variable[b]} "${pb}" overlap; each area needs its own folder.`);
      }
    }
  }
}

function readInteger(
  value: string | undefined,
  name: string,
  fallback: number,
  range: { min: number; max: number },
  problems: string[],
): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < range.min || parsed > range.max) {
    problems.push(`${name} "${value}" must be a whole number from ${range.min} to ${range.max}.`);
    return fallback;
  }
  return parsed;
}

/** What is wrong with a POLL_POLICY value (JSON), in the words loadConfig would use; empty when nothing is. */
export function pollPolicyProblems(value: string): string[] {
  const problems: string[] = [];
  readPollPolicy(value, problems);
  return problems;
}

function readPollPolicy(value: string | undefined, problems: string[]): PollPolicy {
  const policy: PollPolicy = { ...DEFAULTS.pollPolicy };
  if (value === undefined) return policy;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    problems.push(`POLL_POLICY is not JSON; expected e.g. ${JSON.stringify(DEFAULTS.pollPolicy)}.`);
    return policy;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    problems.push(`POLL_POLICY must be a JSON object like ${JSON.stringify(DEFAULTS.pollPolicy)}.`);
    return policy;
  }
  // maxPolls stays accepted (an optional cap below the derived count), and the estimator's optional waits.
  const known = [...Object.keys(DEFAULTS.pollPolicy), ...OPTIONAL_POLL_POLICY_KEYS];
  for (const [key, raw] of Object.entries(parsed)) {
    if (!known.includes(key)) {
      problems.push(`POLL_POLICY has an unknown key "${key}"; known keys: ${known.join(', ')}.`);
      continue;
    }
    const isInteger = key === 'maxPolls' || key === 'maxJobSeconds';
    const valid = typeof raw === 'number' && Number.isFinite(raw) && raw > 0 && (!isInteger || Number.isInteger(raw));
    if (!valid) {
      problems.push(`POLL_POLICY.${key} must be a positive ${isInteger ? 'whole number' : 'number'}, got ${JSON.stringify(raw)}.`);
      continue;
    }
    policy[key as keyof PollPolicy] = raw as number;
  }
  if (policy.factor < 1) problems.push(`POLL_POLICY.factor ${policy.factor} must be at least 1 (waits never shrink).`);
  if (policy.initialSeconds > policy.maxSeconds) {
    problems.push(`POLL_POLICY.initialSeconds ${policy.initialSeconds} is above maxSeconds ${policy.maxSeconds}.`);
  }
  return policy;
}

function dropUndefined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
