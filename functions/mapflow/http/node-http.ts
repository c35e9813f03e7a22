/**
 * The default HTTP requester of the Mapflow client: node:http / node:https
 * (the global keep-alive agents), nothing bundled. It keeps what the client
 * relied on when it sent through undici:
 * - no limit on waiting for the response headers (the transport's per-call
 *   timer covers the whole exchange, re-armed while an upload sends bytes);
 * - an idle limit while the response body is read (`bodyTimeoutMs`), which
 *   is what bounds a streamed download once the transport hands it over;
 * - a connect timeout (10 s, undici's default) that fails with a code the
 *   retry rule counts as "never sent", so a create is retried safely;
 * - a streamed request body with the Content-Length the caller gives (never
 *   chunked), with backpressure from the socket; a failure of the body's own
 *   source rejects with that very error (the transport tells it apart).
 */
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream';
import type { HttpRequester, ResponseBody } from './exchange.ts';

/** undici's default connect timeout. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** What `dump()` reads before it gives the connection up (undici's default too). */
const DUMP_LIMIT_BYTES = 128 * 1024;

/** A failure this requester detects itself; `code` is classified in retry.ts. */
export class HttpExchangeError extends Error {
  readonly code: 'CONNECT_TIMEOUT' | 'BODY_TIMEOUT';
  constructor(message: string, code: 'CONNECT_TIMEOUT' | 'BODY_TIMEOUT') {
    super(message);
    this.name = 'HttpExchangeError';
    this.code = code;
  }
}

export interface NodeHttpOptions {
  /** @default CONNECT_TIMEOUT_MS */
  connectTimeoutMs?: number;
}

export function nodeHttpRequester(options: NodeHttpOptions = {}): HttpRequester {
  const connectTimeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  return (url, init) =>
    new Promise((resolve, reject) => {
      const transport = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : undefined;
      if (!transport) {
        reject(new TypeError(`unsupported protocol ${url.protocol}`));
        return;
      }
      const headers = { ...init.headers };
      if (typeof init.body === 'string') headers['content-length'] = String(Buffer.byteLength(init.body));
      let answered = false;
      // The request dies of its body's failure with a socket error of its own; the caller needs the cause.
      let sourceError: unknown;
      if (init.body !== undefined && typeof init.body !== 'string') init.body.once('error', (error) => (sourceError ??= error));
      const req = transport.request(url, { method: init.method, headers, signal: init.signal });
      // Errors after the answer (an upload the server stopped reading) belong to no one; never crash on them.
      req.on('error', (error) => {
        if (!answered) {
          answered = true;
          reject(sourceError ?? error);
        }
      });
      req.once('socket', (socket: Socket) => {
        if (!socket.connecting) return; // a kept-alive connection
        const timer = setTimeout(
          () => req.destroy(new HttpExchangeError(`connecting to ${url.host} timed out after ${connectTimeoutMs} ms`, 'CONNECT_TIMEOUT')),
          connectTimeoutMs,
        );
        socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(timer));
        socket.once('close', () => clearTimeout(timer));
      });
      req.once('response', (res) => {
        if (answered) {
          res.destroy();
          return;
        }
        answered = true;
        res.on('error', () => {}); // readers see the error through the stream; this only keeps it from being unhandled
        const socket = res.socket;
        const idle = () =>
          res.destroy(new HttpExchangeError(`no byte of the response body for ${init.bodyTimeoutMs} ms`, 'BODY_TIMEOUT'));
        // The keep-alive agent has its own idle timeout on the socket (for when it is free): put it back after.
        const agentTimeout = socket.timeout ?? 0;
        socket.setTimeout(init.bodyTimeoutMs);
        socket.on('timeout', idle);
        const release = () => {
          socket.setTimeout(agentTimeout);
          socket.off('timeout', idle);
        };
        res.once('end', release);
        res.once('close', release);
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: withReaders(res) });
      });
      if (init.body === undefined || typeof init.body === 'string') req.end(init.body);
      // pipeline destroys the request when the source fails, which then rejects above.
      else pipeline(init.body, req, () => {});
    });
}

function withReaders(res: http.IncomingMessage): ResponseBody {
  const bytes = async (): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
  return Object.assign(res, {
    text: async () => (await bytes()).toString('utf8'),
    arrayBuffer: async () => {
      const buf = await bytes();
      return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
    },
    dump: async () => {
      let read = 0;
      try {
        for await (const chunk of res) {
          read += (chunk as Buffer).length;
          if (read > DUMP_LIMIT_BYTES) break; // leaving the loop destroys the stream
        }
      } catch {
        // A body we throw away may break off: nothing was waiting for it.
      }
    },
  });
}
