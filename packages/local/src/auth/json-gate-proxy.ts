/**
 * A gate in front of an AWS JSON-protocol service that checks nothing itself
 * (DynamoDB Local accepts any key): listens on 127.0.0.1, authorizes each
 * request (gate.ts) and forwards what passes, unchanged, to the service.
 * Bodies are read whole first (the signature covers them; DynamoDB requests
 * are at most 16 MB).
 *
 * While the state folder's disk is full (disk-watch.ts), a write is held
 * here until space is back, and a write the service failed (5xx) while the
 * disk is full is sent again then: DynamoDB on AWS does not fail a job for
 * a full local disk. A failed write changed nothing (DynamoDB Local's
 * SQLite rolls the transaction back), so sending it again is safe.
 */
import { createServer, request as httpRequest, Agent, type IncomingMessage } from 'node:http';
import { retryAfterNoSpace, type DiskHold } from '../disk-watch.ts';
import { replacedBodyHeaders, type JsonGateInterceptor } from '../faults.ts';
import type { CredentialStore } from './credentials.ts';
import { jsonAuthorizer, sendRefusal, type IncomingSignedRequest, type Refusal } from './gate.ts';
import type { JsonAuthorizationOptions, JsonServiceName } from './json-actions.ts';

/** DynamoDB's largest request (BatchWriteItem / TransactWriteItems). */
const MAX_BODY_BYTES = 16 * 1024 * 1024 + 64 * 1024;

export interface JsonGateProxyOptions extends JsonAuthorizationOptions {
  service: JsonServiceName;
  /** The service behind the gate, e.g. DynamoDB Local's http://127.0.0.1:PORT. */
  target: string;
  /**
   * Resolves once the target answers: while a supervised service restarts on
   * the same port (packages/local/src/supervisor.ts), requests wait here, and a
   * request whose connection the dying service refused or cut is sent once more.
   */
  targetReady?: () => Promise<void>;
  store: CredentialStore;
  /** Default 0: a free port. */
  port?: number;
  onRefused?: (refusal: Refusal, request: IncomingSignedRequest) => void;
  /** Headers added to every forwarded request (the secret DynamoDB Local's launcher asks for). */
  forwardHeaders?: Record<string, string>;
  /**
   * Fault injection (local mode's --inject-faults, packages/local/src/faults.ts):
   * told each authorized request (its X-Amz-Target and body), it may answer it
   * instead of the service, or replace the service's answer. Default: none.
   */
  intercept?: JsonGateInterceptor;
  /** The state folder's disk: writes wait while it is full (see above). Default: none, writes pass at once. */
  disk?: DiskHold;
}

export interface JsonGateProxy {
  /** http://127.0.0.1:PORT: what clients use instead of the target. */
  readonly endpoint: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Thrown when the gate cannot listen. */
export class JsonGateStartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'JsonGateStartError';
  }
}

/** Operations that read only: they need no disk, and pass while it is full. */
const READ_OPERATION = /\.(Get|BatchGet|TransactGet|Query|Scan|Describe|List)[A-Za-z]*$/;

/** Whether a request (by its X-Amz-Target) may write to the service's disk. */
export function writesToDisk(target: string): boolean {
  return target !== '' && !READ_OPERATION.test(target);
}

function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

export async function startJsonGateProxy(options: JsonGateProxyOptions): Promise<JsonGateProxy> {
  const target = new URL(options.target);
  let port: number | undefined;
  const authorizer = jsonAuthorizer(options.service, {
    store: options.store,
    listening: () => port,
    ...(options.resourceOf ? { resourceOf: options.resourceOf } : {}),
    ...(options.onRefused ? { onRefused: options.onRefused } : {}),
  });
  const agent = new Agent({ keepAlive: true });
  // After a refused connection the supervisor may not have seen the exit yet: a moment, then its word.
  const waitForTarget = async () => {
    await new Promise((resolve) => setTimeout(resolve, 250));
    await options.targetReady?.();
  };
  const server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      if (body === undefined) {
        response.writeHead(413, { 'content-type': 'text/plain', connection: 'close' });
        response.end('request body too large');
        return;
      }
      const verdict = await authorizer.authorize({ method: request.method ?? 'GET', url: request.url ?? '/', headers: request.headers }, body);
      if (!verdict.allowed) return sendRefusal(response, verdict, request.method);
      const interception = options.intercept?.(String(request.headers['x-amz-target'] ?? ''), body);
      if (interception && 'answer' in interception) {
        response.writeHead(interception.answer.status, interception.answer.headers);
        response.end(interception.answer.body);
        return;
      }
      const operation = String(request.headers['x-amz-target'] ?? '');
      const disk = writesToDisk(operation) ? options.disk : undefined;
      const what = `the ${options.service} service`;
      // The client gave up meanwhile (a killed function): its write is not made behind its back.
      const clientGone = () => request.socket.destroyed || response.destroyed;
      const send = (again: boolean) => {
        const forward = httpRequest(
          { protocol: target.protocol, hostname: target.hostname, port: target.port, method: request.method, path: request.url, headers: { ...request.headers, host: target.host, 'content-length': String(body.length), ...options.forwardHeaders }, agent },
          (answer) => {
            // A write failed while the disk is full: sent again once space is back.
            if (disk && (answer.statusCode ?? 502) >= 500) {
              const chunks: Buffer[] = [];
              answer.on('data', (chunk: Buffer) => chunks.push(chunk));
              answer.on('error', (error) => response.destroy(error));
              answer.on('end', () => {
                void (async () => {
                  if (await retryAfterNoSpace(disk, what)) {
                    if (!clientGone()) send(again);
                    return;
                  }
                  response.writeHead(answer.statusCode ?? 502, answer.headers);
                  response.end(Buffer.concat(chunks));
                })().catch((error: unknown) => response.destroy(error as Error));
              });
              return;
            }
            // An answer the interceptor may replace is read whole first (a compressed one passes unchanged).
            if (interception && !answer.headers['content-encoding']) {
              const chunks: Buffer[] = [];
              answer.on('data', (chunk: Buffer) => chunks.push(chunk));
              answer.on('error', (error) => response.destroy(error));
              answer.on('end', () => {
                const original = Buffer.concat(chunks);
                let replaced: Buffer | undefined;
                try {
                  replaced = interception.onAnswer(answer.statusCode ?? 502, original);
                } catch {
                  replaced = undefined; // an answer the interceptor cannot read passes unchanged
                }
                response.writeHead(answer.statusCode ?? 502, replaced ? replacedBodyHeaders(answer.headers, replaced) : answer.headers);
                response.end(replaced ?? original);
              });
              return;
            }
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(response);
          },
        );
        forward.on('error', (error: NodeJS.ErrnoException) => {
          if (response.headersSent) return response.destroy(error);
          // The service died under this request (supervised: it is being started again): once more when it is back.
          if (again && options.targetReady && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE'].includes(error.code ?? '')) {
            void waitForTarget().then(() => send(false));
            return;
          }
          response.writeHead(502, { 'content-type': 'text/plain' });
          response.end(`the ${options.service} service behind the gate did not answer: ${error.message}`);
        });
        forward.end(body);
      };
      await options.targetReady?.();
      if (disk?.full) {
        await disk.whenFree(what);
        if (clientGone()) return;
      }
      send(true);
    })().catch((error: unknown) => {
      // Fail closed.
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(`the gate failed: ${(error as Error).message}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new JsonGateStartError(`the ${options.service} gate cannot listen on 127.0.0.1:${options.port ?? 0}: ${error.message}`, { cause: error })));
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as { port: number }).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      agent.destroy();
      await closed;
    },
  };
}
