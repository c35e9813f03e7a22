/**
 * A small server of an AWS JSON-protocol service on 127.0.0.1 (awsJson1_0 /
 * awsJson1_1: `POST /`, the operation in `X-Amz-Target: <prefix>.<Operation>`,
 * a JSON body), for the services the bundles call that have no local stand-in
 * (Step Functions, EventBridge, Secrets Manager). The bundles reach it through
 * the SDK's standard per-service endpoint variables (AWS_ENDPOINT_URL_SFN, ...).
 *
 * Errors are answered as AWS answers them: status 400 (or the given one),
 * `x-amzn-errortype` and a body `{"__type": code, "message": ...}`, which the
 * SDK turns into an exception of that name.
 *
 * `authorize(request, rawBody)` (the hook of local IAM) runs before any
 * operation and may refuse the request with an AWS-shaped error.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Why a request is refused: answered as `{__type: code, message}` with this status. */
export interface AwsRefusal {
  status: number;
  code: string;
  message: string;
}

/** Runs before an operation; a refusal answers the request without serving it. */
export type AuthorizeHook = (request: IncomingMessage, rawBody: Buffer) => AwsRefusal | undefined | Promise<AwsRefusal | undefined>;

/** An error an operation answers with, as AWS would (e.g. ExecutionDoesNotExist, 400). */
export class AwsServiceError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = code;
  }
}

export type AwsOperation = (input: Record<string, unknown>) => unknown;

export interface AwsJsonEndpointOptions {
  /** For messages: 'Step Functions'. */
  service: string;
  /** The X-Amz-Target prefix: 'AWSStepFunctions', 'AWSEvents', 'secretsmanager'. */
  targetPrefix: string;
  /** '1.0' or '1.1' (the response content type). */
  jsonVersion: '1.0' | '1.1';
  operations: Record<string, AwsOperation>;
  authorize?: AuthorizeHook;
  /** Largest request body accepted (default 1 MiB; PutEvents and task outputs are at most 256 KiB). */
  maxBodyBytes?: number;
}

export interface RunningEndpoint {
  endpoint: string;
  close(): Promise<void>;
}

export async function startAwsJsonEndpoint(options: AwsJsonEndpointOptions): Promise<RunningEndpoint> {
  const server = createServer((request, response) => {
    void serve(options, request, response).catch((error: unknown) => {
      answerError(response, options.jsonVersion, new AwsServiceError('InternalFailure', (error as Error)?.message ?? String(error), 500));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function serve(options: AwsJsonEndpointOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const limit = options.maxBodyBytes ?? 1024 * 1024;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      return answerError(response, options.jsonVersion, new AwsServiceError('RequestEntityTooLargeException', `request body above ${limit} bytes`, 413));
    }
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks);
  const refusal = await options.authorize?.(request, raw);
  if (refusal) return answerError(response, options.jsonVersion, new AwsServiceError(refusal.code, refusal.message, refusal.status));
  const target = String(request.headers['x-amz-target'] ?? '');
  const [prefix, operationName] = target.split('.');
  const operation = prefix === options.targetPrefix && operationName ? options.operations[operationName] : undefined;
  if (request.method !== 'POST' || !operation) {
    return answerError(response, options.jsonVersion, new AwsServiceError('UnknownOperationException', `${options.service} locally does not serve ${target || 'this request'}`));
  }
  let input: Record<string, unknown>;
  try {
    const parsed = JSON.parse(raw.toString('utf8') || '{}') as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    input = parsed as Record<string, unknown>;
  } catch {
    return answerError(response, options.jsonVersion, new AwsServiceError('SerializationException', 'the request body is not a JSON object'));
  }
  try {
    const output = await operation(input);
    response.writeHead(200, { 'content-type': `application/x-amz-json-${options.jsonVersion}` });
    response.end(JSON.stringify(output ?? {}));
  } catch (error) {
    answerError(
      response,
      options.jsonVersion,
      error instanceof AwsServiceError ? error : new AwsServiceError('InternalFailure', (error as Error)?.message ?? String(error), 500),
    );
  }
}

function answerError(response: ServerResponse, jsonVersion: string, error: AwsServiceError): void {
  if (response.headersSent) return void response.end();
  response.writeHead(error.status, { 'content-type': `application/x-amz-json-${jsonVersion}`, 'x-amzn-errortype': error.code });
  response.end(JSON.stringify({ __type: error.code, message: error.message }));
}
