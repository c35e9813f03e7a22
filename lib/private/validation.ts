/**
 * Early validation of the construct's props: a typo must fail `cdk synth`
 * with a message that says what to fix, not a deployed bridge at 3 a.m.
 * Values that are CDK tokens (resolved at deploy time) are not checked.
 */
import type { IConstruct } from 'constructs';
import { AUTH_SCHEMES } from '../../functions/mapflow/index.ts';
import { Token } from 'aws-cdk-lib';
import { parseRoutes, type Route, type Routes } from '../../functions/routing/index.ts';
import {
  DEFAULT_AUTH_SCHEME,
  DEFAULT_EVENT_SOURCE,
  DEFAULT_MAPFLOW_BASE_URL,
  DEFAULT_MAX_CONCURRENT_PROCESSINGS,
  DEFAULT_POLL_POLICY,
  OPTIONAL_POLL_POLICY_KEYS,
  DEFAULT_PREFIXES,
  MAX_POLLS,
  MAX_ROUTES_JSON_BYTES,
  type PollPolicy,
} from './defaults.ts';
import { MapflowBridgeConfigError } from '../errors.ts';
import type { AuthScheme, BridgeSettings, BridgeSettingsInput, Prefixes } from '../settings.ts';

/** A setting the checks below refuse; resolveBridgeSettings hands it on as a MapflowBridgeConfigError on its scope. */
class InvalidSetting extends Error {}

/** Applies the defaults and checks every setting; throws a MapflowBridgeConfigError on `scope` (the bridge). */
export function resolveBridgeSettings(scope: IConstruct, input: BridgeSettingsInput): BridgeSettings {
  try {
    return resolve(input);
  } catch (error) {
    if (error instanceof InvalidSetting) throw new MapflowBridgeConfigError(error.message, scope, { cause: error.cause });
    throw error;
  }
}

function resolve(input: BridgeSettingsInput): BridgeSettings {
  const prefixes: Prefixes = {
    inbox: checkPrefix('inboxPrefix', input.inboxPrefix ?? DEFAULT_PREFIXES.inbox),
    results: checkPrefix('resultsPrefix', input.resultsPrefix ?? DEFAULT_PREFIXES.results),
    failed: checkPrefix('failedPrefix', input.failedPrefix ?? DEFAULT_PREFIXES.failed),
    work: checkPrefix('workPrefix', input.workPrefix ?? DEFAULT_PREFIXES.work),
  };
  checkPrefixesApart(prefixes);
  return {
    routes: checkRoutes(input.routes),
    prefixes,
    mapflowBaseUrl: checkBaseUrl(input.mapflowBaseUrl ?? DEFAULT_MAPFLOW_BASE_URL),
    authScheme: checkAuthScheme(input.authScheme ?? DEFAULT_AUTH_SCHEME),
    maxConcurrentProcessings: checkInteger(
      'maxConcurrentProcessings',
      input.maxConcurrentProcessings ?? DEFAULT_MAX_CONCURRENT_PROCESSINGS,
      1,
      100,
    ),
    pollPolicy: checkPollPolicy({ ...DEFAULT_POLL_POLICY, ...input.pollPolicy }),
    eventSource: checkEventSource(input.eventSource ?? DEFAULT_EVENT_SOURCE),
    ledgerRetentionDays:
      input.ledgerRetentionDays === undefined ? undefined : checkInteger('ledgerRetentionDays', input.ledgerRetentionDays, 1, 36_500),
  };
}

/** S3 prefixes: plain folder names ending in '/', safe in EventBridge wildcards and URL-encoded event keys. */
function checkPrefix(name: string, value: string): string {
  if (Token.isUnresolved(value)) throw new InvalidSetting(`${name} must be a plain string, not a token`);
  if (!/^([A-Za-z0-9._-]+\/)+$/.test(value)) {
    throw new InvalidSetting(
      `${name} '${value}' must be one or more folder names of letters, digits, '.', '_' or '-', each ending in '/' (e.g. 'inbox/')`,
    );
  }
  return value;
}

/** Nothing the bridge writes may land under the inbox (it would trigger itself), and no two areas may overlap. */
function checkPrefixesApart(prefixes: Prefixes): void {
  const entries = Object.entries(prefixes);
  for (const [nameA, a] of entries) {
    for (const [nameB, b] of entries) {
      if (nameA !== nameB && b.startsWith(a)) {
        throw new InvalidSetting(
          `${nameB}Prefix '${b}' lies under ${nameA}Prefix '${a}'; the inbox, results, failed and work prefixes must not overlap`,
        );
      }
    }
  }
}

function checkRoutes(routes: Route[] | undefined): Routes | undefined {
  if (routes === undefined) return undefined;
  if (!Array.isArray(routes)) throw new InvalidSetting('routes must be an array of routes');
  let parsed: Routes;
  try {
    parsed = parseRoutes(JSON.stringify({ routes }));
  } catch (cause) {
    throw new InvalidSetting(`invalid routes: ${(cause as Error).message}`, { cause });
  }
  const bytes = Buffer.byteLength(JSON.stringify(parsed));
  if (bytes > MAX_ROUTES_JSON_BYTES) {
    throw new InvalidSetting(
      `routes take ${bytes} bytes of JSON; Lambda environments hold 4 KB in all, so keep routes under ${MAX_ROUTES_JSON_BYTES} bytes`,
    );
  }
  return parsed;
}

function checkBaseUrl(value: string): string {
  if (Token.isUnresolved(value)) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch (cause) {
    throw new InvalidSetting(`mapflowBaseUrl '${value}' is not a URL`, { cause });
  }
  if (url.protocol !== 'https:') {
    throw new InvalidSetting(`mapflowBaseUrl '${value}' must use https (the token is sent with every request)`);
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new InvalidSetting('mapflowBaseUrl must not carry credentials, a query or a fragment; put the token in the secret');
  }
  return value.replace(/\/+$/, '');
}

function checkAuthScheme(value: string): AuthScheme {
  if (!(AUTH_SCHEMES as readonly string[]).includes(value)) {
    throw new InvalidSetting(`authScheme '${value}' must be one of ${AUTH_SCHEMES.join(', ')}`);
  }
  return value as AuthScheme;
}

function checkInteger(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidSetting(`${name} must be an integer from ${min} to ${max} (got ${value})`);
  }
  return value;
}

function checkNumber(name: string, value: number, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new InvalidSetting(`${name} must be a number from ${min} to ${max} (got ${value})`);
  }
  return value;
}

function checkPollPolicy(policy: PollPolicy): PollPolicy {
  // maxPolls is optional (no default): the count then follows from maxJobSeconds.
  const unknown = Object.keys(policy).filter((k) => !(k in DEFAULT_POLL_POLICY) && !(OPTIONAL_POLL_POLICY_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new InvalidSetting(`pollPolicy has unknown field '${unknown[0]}'`);
  checkInteger('pollPolicy.initialSeconds', policy.initialSeconds, 1, 3_600);
  checkInteger('pollPolicy.maxSeconds', policy.maxSeconds, 1, 3_600);
  if (policy.maxSeconds < policy.initialSeconds) {
    throw new InvalidSetting(
      `pollPolicy.maxSeconds (${policy.maxSeconds}) must not be below pollPolicy.initialSeconds (${policy.initialSeconds})`,
    );
  }
  checkNumber('pollPolicy.factor', policy.factor, 1, 10);
  // An explicit cap on the poll count (the history budget counts the smaller of it and the derived count).
  if (policy.maxPolls !== undefined) checkInteger('pollPolicy.maxPolls', policy.maxPolls, 1, MAX_POLLS);
  // The estimator's waits (optional; derived from maxSeconds when unset).
  if (policy.nearEndSeconds !== undefined) checkNumber('pollPolicy.nearEndSeconds', policy.nearEndSeconds, 1, 3_600);
  if (policy.maxEstimatedSeconds !== undefined) checkNumber('pollPolicy.maxEstimatedSeconds', policy.maxEstimatedSeconds, 1, 86_400);
  // Standard executions run for at most a year; leave room for the margin.
  checkInteger('pollPolicy.maxJobSeconds', policy.maxJobSeconds, 60, 300 * 86_400);
  // The poll count follows from maxJobSeconds (pollsFor); whether it fits the
  // execution history is checked on the synthesized definition (lib/private/history-budget.ts).
  return policy;
}

function checkEventSource(value: string): string {
  if (Token.isUnresolved(value)) return value;
  if (!/^[A-Za-z0-9._-]{1,256}$/.test(value) || value.startsWith('aws.')) {
    throw new InvalidSetting(
      `eventSource '${value}' must be 1-256 letters, digits, '.', '_' or '-' and must not start with 'aws.' (reserved by AWS)`,
    );
  }
  return value;
}
