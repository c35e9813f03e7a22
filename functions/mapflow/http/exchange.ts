/**
 * One HTTP exchange, the only thing the transport needs from an HTTP client.
 *
 * The transport (retries, timeouts, error mapping, redaction) is the same
 * whatever sends the bytes. The default is `nodeHttpRequester` (node:http and
 * node:https, nothing bundled); `undiciRequester` (./undici.ts) sends through
 * an undici Dispatcher, which is what the client tests use (a MockAgent).
 * Keeping undici out of the default path keeps 525 KiB out of every Lambda
 * bundle that calls Mapflow.
 */
import type { Readable } from 'node:stream';

/** The response body: a byte stream with the readers the client uses (undici's BodyReadable has them too). */
export interface ResponseBody extends Readable {
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
  /** Reads and discards what is left, so a keep-alive connection can be reused. */
  dump(): Promise<void>;
}

export interface HttpResponse {
  statusCode: number;
  /** Lower-case names. */
  headers: Record<string, string | string[] | undefined>;
  body: ResponseBody;
}

export interface HttpRequestInit {
  method: string;
  headers: Record<string, string>;
  /** A JSON text, or a byte stream whose length is in the content-length header. */
  body?: string | Readable;
  /** Aborting it ends the exchange, before or after the response headers. */
  signal: AbortSignal;
  /**
   * Idle limit while the response body is read (no byte for this long fails
   * the read). Waiting for the headers has no limit of its own: the caller's
   * per-call timer covers it.
   */
  bodyTimeoutMs: number;
}

/** Sends one request and resolves with the response once its headers are in. */
export type HttpRequester = (url: URL, init: HttpRequestInit) => Promise<HttpResponse>;
