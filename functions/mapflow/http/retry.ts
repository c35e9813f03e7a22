/**
 * Retry policy pieces: capped exponential backoff with full jitter, the
 * Retry-After header, and the classification of network failures into
 * "never reached the server" and "may have reached the server".
 */

export interface RetryOptions {
  /** Attempts in all, including the first. Default 4. */
  maxAttempts?: number;
  /** First backoff ceiling. Default 500 ms. */
  baseDelayMs?: number;
  /** Backoff ceiling. Default 10 s. */
  maxDelayMs?: number;
  /**
   * Longest Retry-After the client will sleep through. A longer one ends the
   * retries at once with the error (its `retryAfterMs` set) so the caller, e.g.
   * a Step Functions Wait, can wait without holding a Lambda. Default 30 s.
   */
  maxRetryAfterMs?: number;
}

export type ResolvedRetry = Required<RetryOptions>;

export const DEFAULT_RETRY: ResolvedRetry = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 30_000,
};

export function resolveRetry(options: RetryOptions | undefined): ResolvedRetry {
  const merged = { ...DEFAULT_RETRY, ...stripUndefined(options ?? {}) };
  return {
    maxAttempts: Math.max(1, Math.floor(merged.maxAttempts)),
    baseDelayMs: Math.max(0, merged.baseDelayMs),
    maxDelayMs: Math.max(0, merged.maxDelayMs),
    maxRetryAfterMs: Math.max(0, merged.maxRetryAfterMs),
  };
}

/**
 * Full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter"):
 * a uniform delay in [0, min(maxDelay, base * 2^(retry-1))].
 * `retry` is 1 for the first retry.
 */
export function backoffDelayMs(retry: number, policy: ResolvedRetry, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** Retry-After as milliseconds from now: delta-seconds or an HTTP date. Undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * Error codes that prove the request never left this machine or never got a
 * connection, so the server cannot have acted on it.
 */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  // node-http.ts: no connection within its connect timeout.
  'CONNECT_TIMEOUT',
]);

/** TLS handshake failures (bad certificate, ...) also happen before any request byte is sent. */
const isNotSent = (code: string) => NOT_SENT_CODES.has(code) || /^ERR_TLS|CERT|SIGNATURE/.test(code);

/** Error codes worth retrying for an idempotent request. */
const TRANSIENT_CODES = new Set([
  ...NOT_SENT_CODES,
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'BODY_TIMEOUT',
  'UND_ERR_ABORTED',
  'UND_ERR_REQ_RETRY',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
]);

/** Codes found on the error and its causes (undici wraps socket errors). */
export function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    // AggregateError (happy eyeballs) carries its reasons in `errors`.
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors)) for (const e of errors) codes.push(...errorCodes(e));
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

export type NetworkFailure =
  /** The request cannot have reached the server (connection refused, DNS, connect timeout). */
  | 'not-sent'
  /** The request may have reached the server (reset, closed, timed out after connecting). */
  | 'maybe-sent';

export function classifyNetworkError(error: unknown): { failure: NetworkFailure; transient: boolean } {
  const codes = errorCodes(error);
  const notSent = codes.length > 0 && codes.every(isNotSent);
  return {
    failure: notSent ? 'not-sent' : 'maybe-sent',
    // Unknown failures (no code) are treated as transient: a network stack
    // error without a code is far more often a blip than a permanent fault.
    transient: codes.length === 0 || codes.some((c) => TRANSIENT_CODES.has(c)),
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
