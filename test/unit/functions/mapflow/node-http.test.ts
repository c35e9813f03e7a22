/**
 * The client's default HTTP requester (node:http, functions/mapflow/http/node-http.ts),
 * against servers on 127.0.0.1: what the Lambda bundles send through since
 * undici left them. The MockAgent tests cover the transport's logic through
 * undiciRequester; these cover the wire.
 */
import { once } from 'node:events';
import http, { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpExchangeError, nodeHttpRequester } from '../../../../functions/mapflow/index.ts';
import { classifyNetworkError } from '../../../../functions/mapflow/http/retry.ts';
import { rejectionOf } from './helpers.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function startServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<URL> {
  const server = createServer(handler);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/rest/x`);
}

const noSignal = () => new AbortController().signal;

describe('node:http requester', () => {
  it('streams a body with the given Content-Length, never chunked, byte for byte', async () => {
    // Prepare
    let seen: { headers: IncomingMessage['headers']; bytes: number; sum: number } | undefined;
    const url = await startServer(async (req, res) => {
      let bytes = 0;
      let sum = 0;
      for await (const chunk of req) for (const b of chunk as Buffer) ((bytes += 1), (sum = (sum + b) % 65_521));
      seen = { headers: req.headers, bytes, sum };
      res.end('{"ok":true}');
    });
    const chunks = Array.from({ length: 64 }, (_, i) => Buffer.alloc(16 * 1024, i));
    const expectedSum = chunks.reduce((s, c) => (s + c.reduce((a, b) => (a + b) % 65_521, 0)) % 65_521, 0);

    // Act
    const res = await nodeHttpRequester()(url, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(64 * 16 * 1024) },
      body: Readable.from(chunks),
      signal: noSignal(),
      bodyTimeoutMs: 5_000,
    });

    // Assess
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('{"ok":true}');
    expect(seen?.headers['content-length']).toBe(String(64 * 16 * 1024));
    expect(seen?.headers['transfer-encoding']).toBeUndefined();
    expect(seen?.bytes).toBe(64 * 16 * 1024);
    expect(seen?.sum).toBe(expectedSum);
  });

  it('sends a JSON text with its byte length and reads the answer as bytes', async () => {
    // Prepare
    let length: string | undefined;
    const url = await startServer(async (req, res) => {
      length = req.headers['content-length'];
      for await (const _ of req) void _;
      res.end(Buffer.from([1, 2, 3]));
    });

    // Act
    const res = await nodeHttpRequester()(url, { method: 'POST', headers: {}, body: '{"name":"é"}', signal: noSignal(), bodyTimeoutMs: 5_000 });

    // Assess
    expect(length).toBe(String(Buffer.byteLength('{"name":"é"}')));
    expect([...new Uint8Array(await res.body.arrayBuffer())]).toEqual([1, 2, 3]);
  });

  it('waits for late headers beyond the body idle limit (the caller times the exchange), then limits an idle body', async () => {
    // Prepare: headers after 600 ms, one chunk, then silence.
    const url = await startServer((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.write(Buffer.alloc(10));
      }, 600);
    });

    // Act
    const res = await nodeHttpRequester()(url, { method: 'GET', headers: {}, signal: noSignal(), bodyTimeoutMs: 200 });
    const error = await rejectionOf(res.body.text());

    // Assess
    expect(res.statusCode).toBe(200);
    expect(error).toBeInstanceOf(HttpExchangeError);
    expect(error.code).toBe('BODY_TIMEOUT');
    expect(classifyNetworkError(error)).toEqual({ failure: 'maybe-sent', transient: true });
  }, 30_000);

  it('gives the kept-alive connection back with the agent\'s own idle timeout, not the body limit', async () => {
    // Prepare
    const url = await startServer((_req, res) => res.end('ok'));

    // Act
    const res = await nodeHttpRequester()(url, { method: 'GET', headers: {}, signal: noSignal(), bodyTimeoutMs: 777 });
    const socket = (res.body as unknown as IncomingMessage).socket;
    const during = socket.timeout;
    await res.body.text();
    await new Promise((resolve) => setImmediate(resolve));

    // Assess: the global agent's free-socket timeout (Node: 5 s), so idle pooled sockets still close.
    expect(during).toBe(777);
    expect(socket.timeout).toBe((http.globalAgent as unknown as { options: { timeout?: number } }).options.timeout ?? 0);
  });

  it('ends the exchange when the signal aborts before the headers', async () => {
    // Prepare
    let arrived!: () => void;
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    const url = await startServer(() => arrived());
    const controller = new AbortController();

    // Act
    const pending = nodeHttpRequester()(url, { method: 'GET', headers: {}, signal: controller.signal, bodyTimeoutMs: 5_000 });
    await requestArrived;
    controller.abort(new Error('caller timer'));
    const error = await rejectionOf(pending);

    // Assess
    expect(error.name).toBe('AbortError');
  }, 30_000);

  it('takes an early answer to an upload the server does not read, without an unhandled error', async () => {
    // Prepare: the server refuses at once and closes the connection.
    const url = await startServer((_req, res) => {
      res.writeHead(413, { connection: 'close' });
      res.end('{"code":"FILE_TOO_LARGE"}');
    });
    const big = Readable.from((function* () {
      for (let i = 0; i < 512; i++) yield Buffer.alloc(64 * 1024, 7);
    })());

    // Act
    const res = await nodeHttpRequester()(url, {
      method: 'POST',
      headers: { 'content-length': String(512 * 64 * 1024) },
      body: big,
      signal: noSignal(),
      bodyTimeoutMs: 5_000,
    });

    // Assess
    expect(res.statusCode).toBe(413);
    expect(await res.body.text()).toContain('FILE_TOO_LARGE');
  }, 30_000);

  it('counts a refused connection and its own connect timeout as never sent', async () => {
    // Prepare: a port that was just closed refuses.
    const url = await startServer(() => {});
    const server = servers.pop() as Server;
    server.close();
    await once(server, 'close');

    // Act
    const refused = await rejectionOf(nodeHttpRequester()(url, { method: 'POST', headers: {}, body: '{}', signal: noSignal(), bodyTimeoutMs: 1_000 }));

    // Assess
    expect(classifyNetworkError(refused).failure).toBe('not-sent');
    expect(classifyNetworkError(new HttpExchangeError('connecting timed out', 'CONNECT_TIMEOUT'))).toEqual({ failure: 'not-sent', transient: true });
  }, 30_000);
});
