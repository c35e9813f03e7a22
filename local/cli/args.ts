/**
 * Command-line parsing for the local commands: node:util parseArgs, with its
 * errors turned into the project's own one-line messages. Node's text
 * ("Unknown option '--x'. To specify a positional argument starting with a
 * '-', place it at the end of the command after '--', as in '-- \"--x\".")
 * speaks of its own internals; a user needs the option and where to look.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { validDynamoDbEndpoint } from '../dynamodb/endpoint.ts';
import type { PollPolicy } from '../../functions/polling/poll-policy.ts';
import { pollPolicyProblems } from '../../functions/runtime/config.ts';
import { localPollPolicy } from '../poll-policy.ts';
import type { MapflowTarget } from '../bridge.ts';

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
