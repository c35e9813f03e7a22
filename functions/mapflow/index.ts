/**
 * Public API of the Mapflow client. Import from here, not from the files
 * behind it: `import { MapflowClient } from '../mapflow/index.ts'`.
 */
export { MapflowClient, DEFAULT_BASE_URL, DEFAULT_CLIENT_NAME, DEFAULT_CLIENT_VERSION, DEFAULT_TIMEOUTS, TIMEOUT_VARIABLES, timeoutsFromEnv } from './client.ts';
export type { MapflowClientOptions, MapflowTimeouts } from './client.ts';
export { AUTH_SCHEMES, resolveAuth, decodeBasicCredential, padToken } from './auth.ts';
export type { AuthScheme, ResolvedAuth } from './auth.ts';
export {
  MapflowError,
  MapflowAuthError,
  MapflowForbidden,
  MapflowNotFound,
  MapflowRequestError,
  MapflowRateLimited,
  MapflowUnavailable,
  MapflowOutcomeUnknown,
  MapflowBadResponse,
  Redactor,
  AUTH_ERROR_CODES,
  isRouteNotFound,
} from './errors.ts';
export type { MapflowErrorInit } from './errors.ts';
export type { MapflowLogger } from './http/transport.ts';
// The HTTP client under the transport (undici's adapter is functions/mapflow/http/undici.ts, imported only where used).
export type { HttpRequester, HttpRequestInit, HttpResponse, ResponseBody } from './http/exchange.ts';
export { nodeHttpRequester, HttpExchangeError, CONNECT_TIMEOUT_MS } from './http/node-http.ts';
export { DEFAULT_RETRY, backoffDelayMs, parseRetryAfter } from './http/retry.ts';
export type { RetryOptions } from './http/retry.ts';
export { UploadSizeMismatch, UploadSourceError } from './multipart.ts';
export { parseErrorBody, normaliseReviewStatus } from './normalise.ts';
export * from './types.ts';
