/**
 * The HTTP layer of the client: one place for the base URL, headers,
 * per-request timeout, retries and the mapping of failures to typed errors.
 *
 * Retry rule (also in docs/mapflow-client.md):
 * - idempotent requests (GET, PUT, DELETE, and POSTs that change nothing: cost
 *   estimates, catalog search, stats, restart) are retried on 5xx, 429,
 *   timeouts and network errors, with capped exponential backoff and full
 *   jitter, never sooner than the server's Retry-After;
 * - create requests (POST of a processing, project, mosaic, upload, link) are
 *   retried only when the server cannot have acted on them: the connection was
 *   never made (refused, DNS, connect timeout) or the server answered 429 or
 *   503 (refused before processing). When the request may have reached the
 *   server (timeout or reset after sending, a 500/502/504) the client throws
 *   MapflowOutcomeUnknown and does not retry;
 * - a streamed upload is retried only while its source stream is untouched
 *   (a stream cannot be rewound).
 * - a DELETE that answers 404 on a retry counts as done: the earlier attempt
 *   whose answer was lost deleted it.
 */
import { Readable } from 'node:stream';
import {
  MapflowError,
  MapflowOutcomeUnknown,
  MapflowRateLimited,
  MapflowUnavailable,
  errorClassForStatus,
  type MapflowErrorInit,
  type Redactor,
} from '../errors.ts';
import { findUploadSourceError, type StreamedBody } from '../multipart.ts';
import type { HttpRequester, HttpResponse } from './exchange.ts';
import { parseErrorBody } from '../normalise.ts';
import { backoffDelayMs, classifyNetworkError, parseRetryAfter, type ResolvedRetry } from './retry.ts';

/** Optional sink for retry/diagnostic lines (Powertools' Logger fits). Never receives the token. */
export interface MapflowLogger {
  warn(message: string, extra?: Record<string, unknown>): void;
  debug?(message: string, extra?: Record<string, unknown>): void;
}

export interface TransportOptions {
  baseUrl: string;
  authorization: string;
  identityHeaders: Record<string, string>;
  redactor: Redactor;
  timeoutMs: number;
  retry: ResolvedRetry;
  /** Sends one exchange (node:http by default, see exchange.ts). */
  http: HttpRequester;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  now: () => number;
  logger?: MapflowLogger;
}

/** 'create' requests are never retried once they may have reached the server. */
export type RequestKind = 'idempotent' | 'create';

export type QueryValue = string | number | boolean | readonly string[] | undefined;

// Defined where such bodies are made (multipart.ts), so multipart does not import the transport.
export type { StreamedBody } from '../multipart.ts';

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path relative to the base URL, ids already encoded. */
  path: string;
  query?: Record<string, QueryValue>;
  json?: unknown;
  stream?: StreamedBody;
  kind: RequestKind;
  accept?: string;
  /** Overrides the client's timeout for this request (uploads wait longer for the server's check of the file). */
  timeoutMs?: number;
}

export type ResponseData = HttpResponse;

type AttemptResult<T> =
  | { ok: true; value: T }
  | { ok: false; status: number; headers: ResponseData['headers']; bodyText: string }
  | { ok: false; status?: undefined; error: unknown; timedOut: boolean };

const ERROR_BODY_LIMIT = 64 * 1024;

export class Transport {
  readonly #options: TransportOptions;
  readonly #base: URL;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.#base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
  }

  /**
   * Sends the request (retrying as the rule above allows) and hands a 2xx
   * response to `read`. A failure inside `read` (reset, timeout while reading
   * the body) counts as a network failure of that attempt.
   * `read` must consume or return the body; `stream: true` keeps the timeout
   * from covering a body handed to the caller.
   */
  async send<T>(spec: RequestSpec, read: (res: ResponseData) => Promise<T>, opts: { stream?: boolean } = {}): Promise<T> {
    const { retry } = this.#options;
    const displayPath = this.#displayPath(spec);
    for (let attempt = 1; ; attempt++) {
      const result = await this.#attempt(spec, read, opts.stream === true);
      if (result.ok) return result.value;

      const init: MapflowErrorInit = { method: spec.method, path: displayPath, attempts: attempt };
      const decision =
        result.status !== undefined
          ? this.#decideStatus(spec, result.status, result.headers, result.bodyText, init, attempt)
          : this.#decideNetwork(spec, result.error, result.timedOut, init);

      // Only a DELETE ends this way, and its callers expect nothing back.
      if (decision.done) return undefined as T;
      const canResend = !spec.stream || !spec.stream.consumed();
      if (!decision.retry || !canResend || attempt >= retry.maxAttempts) throw decision.error;

      const retryAfterMs = decision.error.retryAfterMs;
      if (retryAfterMs !== undefined && retryAfterMs > retry.maxRetryAfterMs) throw decision.error;
      const delayMs = Math.max(backoffDelayMs(attempt, retry, this.#options.random), retryAfterMs ?? 0);
      this.#options.logger?.warn('Mapflow request failed; retrying', {
        method: spec.method,
        path: displayPath,
        attempt,
        delayMs,
        status: decision.error.status,
        code: decision.error.code,
        error: decision.error.name,
      });
      await this.#options.sleep(delayMs);
    }
  }

  async #attempt<T>(spec: RequestSpec, read: (res: ResponseData) => Promise<T>, streamOut: boolean): Promise<AttemptResult<T>> {
    const timeoutMs = spec.timeoutMs ?? this.#options.timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort(new TimeoutAbort(timeoutMs));
      }, timeoutMs);
    };
    arm();
    try {
      const headers: Record<string, string> = {
        authorization: this.#options.authorization,
        accept: spec.accept ?? 'application/json',
        ...this.#options.identityHeaders,
      };
      let body: string | Readable | undefined;
      if (spec.json !== undefined) {
        body = JSON.stringify(spec.json);
        headers['content-type'] = 'application/json';
      } else if (spec.stream) {
        // objectMode off: chunks are bytes, and backpressure follows the socket.
        body = Readable.from(spec.stream.open(arm), { objectMode: false });
        headers['content-type'] = spec.stream.contentType;
        headers['content-length'] = String(spec.stream.length);
      }
      const res = await this.#options.http(this.#url(spec), {
        method: spec.method,
        headers,
        body,
        signal: controller.signal,
        // Idle limit on a response body handed to the caller (downloads): our
        // timer stops covering it once the headers are in.
        bodyTimeoutMs: timeoutMs,
      });
      if (res.statusCode >= 200 && res.statusCode < 300) {
        if (streamOut) clearTimeout(timer);
        const value = await read(res);
        return { ok: true, value };
      }
      const bodyText = await readBounded(res.body, ERROR_BODY_LIMIT);
      return { ok: false, status: res.statusCode, headers: res.headers, bodyText };
    } catch (error) {
      // The upload's own source failed: a local problem, not Mapflow's, and
      // the truncated body cannot have created anything. Surface it as is.
      const sourceError = findUploadSourceError(error);
      if (sourceError) throw sourceError;
      return { ok: false, error, timedOut };
    } finally {
      clearTimeout(timer);
    }
  }

  #decideStatus(
    spec: RequestSpec,
    status: number,
    headers: ResponseData['headers'],
    bodyText: string,
    base: MapflowErrorInit,
    attempt: number,
  ): { done?: false; retry: boolean; error: MapflowError } | { done: true } {
    // A retried DELETE that finds nothing: the first attempt deleted it.
    if (status === 404 && spec.method === 'DELETE' && attempt > 1) return { done: true };

    const redactor = this.#options.redactor;
    const parsed = parseErrorBody(bodyText);
    const retryAfterMs = parseRetryAfter(headers['retry-after'], this.#options.now());
    const init: MapflowErrorInit = {
      ...base,
      status,
      code: parsed.code === undefined ? undefined : redactor.text(parsed.code),
      params: parsed.params === undefined ? undefined : redactor.value(parsed.params),
      retryAfterMs,
    };
    const detail = redactor.text(
      [parsed.code, parsed.message].filter((s): s is string => Boolean(s)).join(': ') || statusText(status),
    );
    const message = `Mapflow ${base.method} ${base.path} answered HTTP ${status}: ${detail}`;

    // The server turned the request away before acting on it.
    const refusedBeforeProcessing = status === 429 || status === 503 || status === 408;
    const serverError = status >= 500 || status === 429 || status === 408;
    if (!serverError) {
      const ErrorClass = errorClassForStatus(status, parsed.code);
      return { retry: false, error: new ErrorClass(message, init) };
    }
    if (spec.kind === 'create' && !refusedBeforeProcessing) {
      return {
        retry: false,
        error: new MapflowOutcomeUnknown(
          `${message}. The create may or may not have taken effect; look for it before creating again`,
          init,
        ),
      };
    }
    // 408 and 5xx on idempotent requests, 429 and 503 on anything.
    const ErrorClass = status === 429 ? MapflowRateLimited : MapflowUnavailable;
    return { retry: true, error: new ErrorClass(message, init) };
  }

  #decideNetwork(
    spec: RequestSpec,
    error: unknown,
    timedOut: boolean,
    base: MapflowErrorInit,
  ): { done?: false; retry: boolean; error: MapflowError } {
    const redactor = this.#options.redactor;
    const cause = redactor.cause(error);
    const { failure, transient } = timedOut
      ? { failure: 'maybe-sent' as const, transient: true }
      : classifyNetworkError(error);
    const what = timedOut
      ? `timed out after ${spec.timeoutMs ?? this.#options.timeoutMs} ms`
      : `failed: ${redactor.text(error instanceof Error ? error.message : String(error))}`;
    const message = `Mapflow ${base.method} ${base.path} ${what}`;
    const init: MapflowErrorInit = { ...base, cause };
    if (spec.kind === 'create' && failure === 'maybe-sent') {
      // Streamed uploads whose source was never read did not send anything either.
      const untouchedUpload = spec.stream !== undefined && !spec.stream.consumed();
      if (!untouchedUpload) {
        return {
          retry: false,
          error: new MapflowOutcomeUnknown(
            `${message}. The request may have reached the server; look for what it created before creating again`,
            init,
          ),
        };
      }
    }
    return { retry: transient, error: new MapflowUnavailable(message, init) };
  }

  #url(spec: RequestSpec): URL {
    const url = new URL(spec.path.replace(/^\//, ''), this.#base);
    for (const [key, value] of Object.entries(spec.query ?? {})) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) url.searchParams.append(key, String(v));
      else url.searchParams.append(key, String(value));
    }
    return url;
  }

  /** Path shown in errors and logs: relative path and query, never host or credentials. */
  #displayPath(spec: RequestSpec): string {
    const url = this.#url(spec);
    return this.#options.redactor.text(`/${spec.path.replace(/^\//, '')}${url.search}`);
  }
}

/** Abort reason of the per-request timer. */
class TimeoutAbort extends Error {
  readonly code = 'MAPFLOW_TIMEOUT';
  constructor(ms: number) {
    super(`request timed out after ${ms} ms`);
    this.name = 'TimeoutAbort';
  }
}

/** Reads at most `limit` bytes of a body as text and discards the rest. */
async function readBounded(body: AsyncIterable<unknown> & { destroyed: boolean; destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      if (size + buf.length > limit) {
        chunks.push(buf.subarray(0, limit - size));
        size = limit;
        break;
      }
      chunks.push(buf);
      size += buf.length;
    }
  } catch {
    // A body cut short still tells us the status; keep what arrived.
  } finally {
    if (!body.destroyed) body.destroy();
  }
  return Buffer.concat(chunks).toString('utf8');
}

function statusText(status: number): string {
  const texts: Record<number, string> = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    408: 'Request Timeout',
    409: 'Conflict',
    413: 'Payload Too Large',
    422: 'Unprocessable Entity',
    429: 'Too Many Requests',
    500: 'Internal Server Error',
    502: 'Bad Gateway',
    503: 'Service Unavailable',
    504: 'Gateway Timeout',
  };
  return texts[status] ?? 'HTTP error';
}
