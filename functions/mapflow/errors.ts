/**
 * Typed errors of the Mapflow client.
 *
 * The `name` of each class is what a Lambda reports as its errorType and so
 * what the state machine's Retry/Catch match on: keep the names exactly.
 *
 * Every message, parameter and cause that reaches one of these errors has been
 * passed through a redactor that removes the API token and the Basic
 * credential (see `Redactor`), so printing, logging or serialising an error
 * never leaks the secret.
 */

/** What the transport knows about the failed call. */
export interface MapflowErrorInit {
  method: string;
  /** Request path relative to the base URL, with the query string; never the host or credentials. */
  path: string;
  status?: number;
  /** Mapflow error code, e.g. `geometry.Invalid`, `TOO_LARGE_PROCESSING`, `FileTooBig`. */
  code?: string;
  params?: Record<string, unknown>;
  /** Attempts made (1 when not retried). */
  attempts?: number;
  /** Server's Retry-After, in milliseconds, when it sent one. */
  retryAfterMs?: number;
  cause?: unknown;
}

/** Base class: HTTP status, Mapflow code/params, the call it came from. Never the token. */
export class MapflowError extends Error {
  readonly method: string;
  readonly path: string;
  readonly status?: number;
  readonly code?: string;
  readonly params?: Record<string, unknown>;
  readonly attempts: number;
  readonly retryAfterMs?: number;

  constructor(message: string, init: MapflowErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'MapflowError';
    this.method = init.method;
    this.path = init.path;
    this.status = init.status;
    this.code = init.code;
    this.params = init.params;
    this.attempts = init.attempts ?? 1;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** JSON form for logs and reports (Error's message is not enumerable by default). */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      message: this.message,
      method: this.method,
      path: this.path,
      status: this.status,
      code: this.code,
      params: this.params,
      attempts: this.attempts,
      retryAfterMs: this.retryAfterMs,
    };
  }
}

/** 401 (bad or missing token), or the server's authentication codes whatever the status (AUTH_ERROR_CODES). */
export class MapflowAuthError extends MapflowError {
  constructor(message: string, init: MapflowErrorInit) {
    super(message, init);
    this.name = 'MapflowAuthError';
  }
}

/**
 * 403 without an authentication code: the token was accepted, but the account
 * may not do this. The server answers so for a resource or permission it
 * does not grant (`Validations.checkPermission`/`checkUserPermission`:
 * `AccessDenied("Access denied")`, 403 ACCESS_DENIED); the data API for an
 * image or mosaic of another account (mapflow-qgis mapflow/errors/data_errors.py
 * line 18, AccessDenied: "You do not have access to {instance_type} with id
 * {uid}"). Not a token problem: it must not ask the user to check the token.
 */
export class MapflowForbidden extends MapflowError {
  constructor(message: string, init: MapflowErrorInit) {
    super(message, init);
    this.name = 'MapflowForbidden';
  }
}

/** 404: unknown id. */
export class MapflowNotFound extends MapflowError {
  constructor(message: string, init: MapflowErrorInit) {
    super(message, init);
    this.name = 'MapflowNotFound';
  }
}

/** 400, 409, 413, 422 and any other 4xx: the request itself is wrong; retrying will not help. */
export class MapflowRequestError extends MapflowError {
  constructor(message: string, init: MapflowErrorInit) {
    super(message, init);
    this.name = 'MapflowRequestError';
  }
}

/** 429 that persisted through the client's retries (or asked for a wait longer than the client will sleep). */
export class MapflowRateLimited extends MapflowError {
  constructor(message: string, init: MapflowErrorInit) {
    super(message, init);
    this.name = 'MapflowRateLimited';
  }
}

/** 5xx, network failure or timeout that persisted through the client's retries. Transient. */
export class MapflowUnavailable extends MapflowError {
  constructor(message: string, init: MapflowErrorInit) {
    super(message, init);
    this.name = 'MapflowUnavailable';
  }
}

/**
 * A create (processing, project, mosaic, upload, link) whose request may have
 * reached the server but whose answer was lost: the object may or may not
 * exist now. Never retried blindly; the caller looks for what the first
 * attempt made before creating again.
 */
export class MapflowOutcomeUnknown extends MapflowError {
  constructor(message: string, init: MapflowErrorInit) {
    super(message, init);
    this.name = 'MapflowOutcomeUnknown';
  }
}

/** A 2xx answer the client cannot read (e.g. not JSON where JSON is required). */
export class MapflowBadResponse extends MapflowError {
  constructor(message: string, init: MapflowErrorInit) {
    super(message, init);
    this.name = 'MapflowBadResponse';
  }
}

/**
 * The server's authentication errors, whatever their status: the Mapflow
 * server's `AuthenticationError` and its subclasses (package
 * `io.geoalert.mapflow.exception`: AUTHENTICATION_ERROR 401, NO_TOKEN 401,
 * TOKEN_EXPIRED 401, and BAD_TOKEN, which it answers with 400).
 */
export const AUTH_ERROR_CODES: readonly string[] = ['AUTHENTICATION_ERROR', 'NO_TOKEN', 'BAD_TOKEN', 'TOKEN_EXPIRED'];

/** The error class for a definitive HTTP error status (not retried further). */
export function errorClassForStatus(status: number, code?: string): new (message: string, init: MapflowErrorInit) => MapflowError {
  if (code !== undefined && AUTH_ERROR_CODES.includes(code)) return MapflowAuthError;
  if (status === 401) return MapflowAuthError;
  if (status === 403) return MapflowForbidden;
  if (status === 404) return MapflowNotFound;
  if (status === 429) return MapflowRateLimited;
  if (status >= 500) return MapflowUnavailable;
  return MapflowRequestError;
}

/**
 * Removes secrets from text and from values headed for an error. Secrets
 * shorter than 4 characters are ignored (redacting them would mangle text
 * without protecting anything).
 */
export class Redactor {
  readonly #secrets: string[];

  constructor(secrets: readonly string[]) {
    // Longest first so a secret containing another is replaced whole.
    this.#secrets = [...new Set(secrets.filter((s) => s.length >= 4))].sort((a, b) => b.length - a.length);
  }

  text(value: string): string {
    let out = value;
    for (const secret of this.#secrets) out = out.split(secret).join('[REDACTED]');
    return out;
  }

  /** Deep copy of a JSON-like value with every string redacted. */
  value<T>(value: T): T {
    if (typeof value === 'string') return this.text(value) as T;
    if (Array.isArray(value)) return value.map((v) => this.value(v)) as T;
    if (value && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[this.text(k)] = this.value(v);
      return out as T;
    }
    return value;
  }

  /**
   * A cause safe to attach to an error: the original when neither its message
   * nor its stack (nor its own causes) mention a secret, else a plain Error
   * with the redacted message.
   */
  cause(cause: unknown, depth = 0): unknown {
    if (!(cause instanceof Error)) return typeof cause === 'string' ? this.text(cause) : cause;
    const text = `${cause.message}\n${cause.stack ?? ''}\n${safeJson(cause)}`;
    const nested = depth < 4 && cause.cause !== undefined ? this.cause(cause.cause, depth + 1) : cause.cause;
    if (this.text(text) === text && nested === cause.cause) return cause;
    const copy = new Error(this.text(cause.message), nested === undefined ? undefined : { cause: nested });
    copy.name = cause.name;
    copy.stack = this.text(cause.stack ?? copy.stack ?? '');
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') (copy as Error & { code?: string }).code = code;
    return copy;
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/**
 * The server has no such route (an older service), as opposed to "no such
 * object": 405, or a 404 without an error code. The Mapflow server answers a
 * missing project or processing with 404 and the code NOT_FOUND (its
 * `NotFound` exception); only a path it has no route for gets the web
 * framework's plain 404 ("The requested resource could not be found.", or
 * FastAPI's `{"detail": "Not Found"}` on the data API).
 */
export function isRouteNotFound(err: unknown): boolean {
  if (!(err instanceof MapflowError)) return false;
  return err.status === 405 || (err.status === 404 && (err.code === undefined || err.code === ''));
}
