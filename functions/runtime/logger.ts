/**
 * Structured logging (Powertools Logger) that cannot leak the Mapflow token.
 *
 * Two layers, both applied to every value of every log line by the logger's
 * JSON replacer (so messages, extra keys, nested objects and formatted errors
 * are all covered):
 *  - values under sensitive keys (token, authorization, password, secret, ...)
 *    are replaced whatever they contain;
 *  - every registered secret (the token, and the forms it travels in: the
 *    Basic credentials, their base64) is cut out of any string it appears in.
 * `registerSecret` is called by the runtime as soon as a token is read.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';

export const REDACTED = '[REDACTED]';
export const SERVICE_NAME = 'mapflow-bridge';

const SENSITIVE_KEY = /^(token|mapflow_?token|access_?token|authorization|proxy-authorization|password|secret|secret_?string|api_?key|x-api-key|cookie|set-cookie)$/i;

/** Secret strings known to this process; shortest ones are ignored (too likely to hit ordinary text). */
const secrets = new Set<string>();
const MIN_SECRET_LENGTH = 6;

/**
 * Remembers a secret so that it is cut out of every later log line. Also
 * registers the encodings it is sent in (base64 of the token and of
 * `email:token`, as used by Basic auth).
 */
export function registerSecret(secret: string | undefined, options?: { email?: string }): void {
  if (!secret || secret.length < MIN_SECRET_LENGTH) return;
  secrets.add(secret);
  secrets.add(Buffer.from(secret, 'utf8').toString('base64'));
  if (options?.email) secrets.add(Buffer.from(`${options.email}:${secret}`, 'utf8').toString('base64'));
  // A token that already is base64("login:password") is sent as is, but its
  // decoded password must not be logged either.
  const decoded = tryDecodeBasic(secret);
  if (decoded && decoded.length >= MIN_SECRET_LENGTH) secrets.add(decoded);
}

/** Cuts every registered secret out of a string. */
export function redactSecrets(text: string): string {
  let result = text;
  for (const secret of secrets) {
    if (result.includes(secret)) result = result.split(secret).join(REDACTED);
  }
  return result;
}

/**
 * JSON replacer used by the logger; exported so other serialisations (error
 * reports, events) can apply the same rules.
 */
export function redactingReplacer(key: string, value: unknown): unknown {
  if (key !== '' && SENSITIVE_KEY.test(key) && value !== undefined && value !== null && value !== '') return REDACTED;
  if (typeof value === 'string') return redactSecrets(value);
  if (value instanceof Error) {
    // Format errors here so their message, stack and cause pass through the
    // string rule above when JSON.stringify visits them.
    return {
      name: value.name,
      message: value.message,
      stack: value.stack,
      ...(value.cause !== undefined ? { cause: value.cause } : {}),
      ...ownEnumerableFields(value),
    };
  }
  return value;
}

export interface LoggerOptions {
  serviceName?: string;
  logLevel?: LogLevel;
  persistentKeys?: Record<string, unknown>;
}

/** A Powertools Logger whose output is redacted as described above. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return new Logger({
    serviceName: options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME,
    ...(options.logLevel ? { logLevel: options.logLevel } : {}),
    ...(options.persistentKeys ? { persistentKeys: options.persistentKeys } : {}),
    jsonReplacerFn: redactingReplacer,
  });
}

function tryDecodeBasic(token: string): string | undefined {
  if (!/^[A-Za-z0-9+/]+=*$/.test(token)) return undefined;
  const text = Buffer.from(token, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0 || !/^[\x20-\x7e]+$/.test(text)) return undefined;
  return text.slice(colon + 1);
}

function ownEnumerableFields(error: Error): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (key !== 'name' && key !== 'message' && key !== 'stack' && key !== 'cause') fields[key] = value;
  }
  return fields;
}
