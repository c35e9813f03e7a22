/**
 * `.waitForTaskToken` for the local engine. aws-local-stepfunctions 3.0 has no
 * callback pattern (no `$$.Task.Token`, no SendTaskSuccess), so the engine
 * gives each invocation of a waiting Task state a fresh token, and this
 * registry settles it when SendTaskSuccess / SendTaskFailure arrive.
 *
 * The handlers call SendTaskSuccess through the real AWS SDK, exactly as on
 * AWS: `listen()` answers the Step Functions JSON protocol (awsJson1_0,
 * `X-Amz-Target: AWSStepFunctions.SendTaskSuccess`) on 127.0.0.1, and the
 * bridge points BRIDGE_SFN_ENDPOINT at it. Unknown or settled tokens answer
 * TaskDoesNotExist, as AWS does for a stopped execution.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Pending {
  execution: string;
  resolve(output: unknown): void;
  reject(error: Error): void;
}

/** A task that failed through SendTaskFailure: Error and Cause as given. */
export class TaskFailure extends Error {
  constructor(error: string, cause: string) {
    super(cause);
    this.name = error || 'TaskFailed';
  }
}

export class TaskTokenError extends Error {
  constructor(readonly code: 'TaskDoesNotExist' | 'InvalidOutput', message: string) {
    super(message);
    this.name = code;
  }
}

/** Largest request body accepted (a token + 256 KiB output). */
const MAX_BODY_BYTES = 300 * 1024;

/** A gate for the task-token endpoint (local/auth/gate.ts's Authorizer.authorize fits). */
export type TaskTokenAuthorizer = (
  request: { method: string; url: string; headers: IncomingMessage['headers'] },
  rawBody: Buffer,
) => Promise<{ allowed: true } | { allowed: false; status: number; headers: Record<string, string>; body: string }>;

export class LocalTaskTokens {
  private readonly pending = new Map<string, Pending>();

  /** A new token for one invocation of a waiting state of `execution` (its name). */
  create(execution: string): { token: string; settled: Promise<unknown> } {
    const token = `local-token-${randomBytes(24).toString('base64url')}`;
    const settled = new Promise<unknown>((resolve, reject) => {
      this.pending.set(token, { execution, resolve, reject });
    });
    // Nobody may be listening yet when a token is failed early.
    settled.catch(() => undefined);
    return { token, settled };
  }

  /** SendTaskSuccess: `output` is a JSON text. */
  succeed(token: string, output: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(output);
    } catch {
      throw new TaskTokenError('InvalidOutput', 'The output is not JSON.');
    }
    this.take(token).resolve(parsed);
  }

  /** SendTaskFailure. */
  fail(token: string, error: string, cause: string): void {
    this.take(token).reject(new TaskFailure(error, cause));
  }

  /** SendTaskHeartbeat: the token must still wait. */
  heartbeat(token: string): void {
    if (!this.pending.has(token)) throw new TaskTokenError('TaskDoesNotExist', 'Task does not exist anymore');
  }

  /** Forgets a token whose invocation failed (the state fails on the Lambda's error instead). */
  forget(token: string): void {
    this.pending.delete(token);
  }

  /** The execution stopped: its tokens are gone (later sends answer TaskDoesNotExist). */
  abortExecution(execution: string): void {
    for (const [token, entry] of this.pending) {
      if (entry.execution !== execution) continue;
      this.pending.delete(token);
      entry.reject(new Error('The execution was stopped.'));
    }
  }

  /** Tokens still waiting (tests, diagnostics). */
  waiting(): number {
    return this.pending.size;
  }

  private take(token: string): Pending {
    const entry = this.pending.get(token);
    if (!entry) throw new TaskTokenError('TaskDoesNotExist', 'Task does not exist anymore');
    this.pending.delete(token);
    return entry;
  }

  /**
   * Serves SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat on 127.0.0.1.
   * `authorize` (the bridge's gate, local/auth/gate.ts) judges each request
   * with its body first; a refusal is sent as it is.
   */
  async listen(options: { authorize?: TaskTokenAuthorizer } = {}): Promise<{ endpoint: string; close(): Promise<void> }> {
    const server = createServer((request, response) => {
      void this.serve(request, response, options.authorize);
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

  private async serve(request: IncomingMessage, response: ServerResponse, authorize?: TaskTokenAuthorizer): Promise<void> {
    const answer = (status: number, body: Record<string, unknown>, errorType?: string) => {
      response.writeHead(status, {
        'content-type': 'application/x-amz-json-1.0',
        ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
      });
      response.end(JSON.stringify(body));
    };
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) return answer(413, { __type: 'InvalidOutput', message: 'request too large' }, 'InvalidOutput');
      chunks.push(chunk as Buffer);
    }
    if (authorize) {
      const verdict = await authorize({ method: request.method ?? 'POST', url: request.url ?? '/', headers: request.headers }, Buffer.concat(chunks));
      if (!verdict.allowed) {
        response.writeHead(verdict.status, verdict.headers);
        response.end(verdict.body);
        return;
      }
    }
    const target = String(request.headers['x-amz-target'] ?? '');
    let body: { taskToken?: unknown; output?: unknown; error?: unknown; cause?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as typeof body;
    } catch {
      return answer(400, { __type: 'SerializationException', message: 'body is not JSON' }, 'SerializationException');
    }
    const token = typeof body.taskToken === 'string' ? body.taskToken : '';
    try {
      if (target === 'AWSStepFunctions.SendTaskSuccess') this.succeed(token, typeof body.output === 'string' ? body.output : 'null');
      else if (target === 'AWSStepFunctions.SendTaskFailure') this.fail(token, String(body.error ?? ''), String(body.cause ?? ''));
      else if (target === 'AWSStepFunctions.SendTaskHeartbeat') {
        if (!this.pending.has(token)) throw new TaskTokenError('TaskDoesNotExist', 'Task does not exist anymore');
      } else return answer(400, { __type: 'UnknownOperationException', message: `not served locally: ${target}` }, 'UnknownOperationException');
      answer(200, {});
    } catch (error) {
      const code = error instanceof TaskTokenError ? error.code : 'InternalError';
      answer(code === 'InternalError' ? 500 : 400, { __type: code, message: (error as Error).message }, code);
    }
  }
}
