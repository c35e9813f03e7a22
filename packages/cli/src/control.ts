/**
 * The control endpoint of a running `start`: `jobs retry` and `jobs cancel`
 * run in another process, but the local executions live in the `start`
 * process, so they ask it over HTTP on 127.0.0.1. A random token, written to
 * <stateDir>/control.json (readable by this user only), guards it.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { eventDetailFromRow } from 'mapflow-bridge/functions/events/publisher.ts';
import { bridgeContext } from 'mapflow-bridge/functions/runtime/context.ts';
import { resultPrefix } from 'mapflow-bridge/functions/routing/index.ts';
import type { LocalBridge } from '@mapflow-bridge/local/bridge';
import { cancelJob, OperationRefused, retryJob, type OperatorBackend } from './operations.ts';

export const CONTROL_FILE = 'control.json';

/** The backend of the local bridge, in the process that runs it. */
export function localBackend(bridge: LocalBridge): OperatorBackend {
  const context = bridgeContext(process.env);
  return {
    ledger: bridge.ledger,
    releaseSlots: (jobId) => context.slots.releaseJob(jobId),
    publish: (detailType, row) => context.events.publish(detailType, { ...eventDetailFromRow(row), at: new Date().toISOString() }),
    async startExecution(input) {
      await bridge.engine.start(input.jobId, input);
      return { executionArn: bridge.engine.executionArn(input.jobId) };
    },
    async stopExecution(row) {
      const running = bridge.engine.describe(row.jobId)?.status === 'RUNNING';
      if (running) await bridge.engine.stopExecution(row.jobId);
      return running;
    },
    mapflow: () => context.mapflow(),
    resultPrefixOf: (key) => resultPrefix(context.config.prefixes, key),
    now: () => new Date(),
  };
}

export interface ControlServer {
  url: string;
  close(): Promise<void>;
}

/** Serves retry and cancel for the local bridge on 127.0.0.1 and writes <stateDir>/control.json. */
export async function startControlServer(bridge: LocalBridge, stateDir: string): Promise<ControlServer> {
  const backend = localBackend(bridge);
  const token = randomBytes(24).toString('hex');
  const server: Server = createServer((request, response) => {
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    const auth = Buffer.from(request.headers.authorization ?? '');
    const expected = Buffer.from(`Bearer ${token}`);
    if (auth.length !== expected.length || !timingSafeEqual(auth, expected)) return reply(401, { error: { code: 'UNAUTHORIZED', message: 'bad control token' } });
    const match = /^\/jobs\/([A-Za-z0-9_-]{1,128})\/(retry|cancel)$/.exec(request.url ?? '');
    if (request.method !== 'POST' || !match) return reply(404, { error: { code: 'NOT_FOUND', message: 'POST /jobs/<id>/retry or /jobs/<id>/cancel' } });
    void (async () => {
      try {
        const body = JSON.parse((await readBody(request, 4096)) || '{}') as { reason?: unknown; deleteFinished?: unknown };
        const [, jobId, action] = match as unknown as [string, string, string];
        const result =
          action === 'retry'
            ? await retryJob(backend, jobId)
            : await cancelJob(backend, jobId, {
                ...(typeof body.reason === 'string' && body.reason ? { reason: body.reason.slice(0, 300) } : {}),
                deleteFinished: body.deleteFinished === true,
              });
        reply(200, { result });
      } catch (error) {
        if (error instanceof OperationRefused) reply(error.code === 'JOB_NOT_FOUND' ? 404 : 409, { error: { code: error.code, message: error.message } });
        else reply(500, { error: { code: 'INTERNAL', message: `${(error as Error).name}: ${(error as Error).message}` } });
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;
  const file = path.join(stateDir, CONTROL_FILE);
  await writeFile(file, JSON.stringify({ url, token, pid: process.pid }), { mode: 0o600 });
  return {
    url,
    async close() {
      await rm(file, { force: true });
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
    },
  };
}

async function readBody(request: IncomingMessage, maxBytes: number): Promise<string> {
  let text = '';
  for await (const chunk of request as AsyncIterable<Buffer>) {
    text += chunk.toString('utf8');
    if (text.length > maxBytes) throw new OperationRefused('NOT_RETRYABLE', 'request body too large');
  }
  return text;
}

/** Calls the control endpoint of the `start` running on `stateDir`. */
export async function callControl<T>(stateDir: string, jobId: string, action: 'retry' | 'cancel', body: Record<string, unknown> = {}): Promise<T> {
  const text = await readFile(path.join(stateDir, CONTROL_FILE), 'utf8').catch(() => undefined);
  const notRunning = `the local bridge is not running (no ${path.join(stateDir, CONTROL_FILE)}): start it with 'npm start', then run this again.`;
  if (!text) throw new OperationRefused('NO_EXECUTION_CONTROL', notRunning);
  const { url, token } = JSON.parse(text) as { url: string; token: string };
  let response: Response;
  try {
    response = await fetch(`${url}/jobs/${encodeURIComponent(jobId)}/${action}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
  } catch {
    throw new OperationRefused('NO_EXECUTION_CONTROL', notRunning);
  }
  const answer = (await response.json()) as { result?: T; error?: { code: OperationRefused['code']; message: string } };
  if (answer.error) throw new OperationRefused(answer.error.code, answer.error.message);
  return answer.result as T;
}
