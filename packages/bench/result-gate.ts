/**
 * A gate in front of the Mapflow simulator, on 127.0.0.1, that holds every
 * result download (GET .../processings/<id>/result) until the test lets them
 * through: a result delay as long as the test needs (the live service takes
 * 45 s or more before the first byte of a large result), ended by an event of
 * the test rather than by a clock. Everything else passes straight through.
 */
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const RESULT_DOWNLOAD = /\/processings\/[^/]+\/result(\?|$)/;

export interface ResultGate {
  /** The simulator's URL through the gate (same path). */
  readonly url: string;
  /** Result downloads that reached the gate so far. */
  readonly arrived: number;
  /** Result downloads let through to the simulator so far. */
  readonly released: number;
  /** Resolves once `count` result downloads have reached the gate. */
  arrivals(count: number): Promise<void>;
  /** Lets the held downloads through, and every later one. */
  open(): void;
  close(): Promise<void>;
}

export async function startResultGate(simulatorUrl: string): Promise<ResultGate> {
  const target = new URL(simulatorUrl);
  const held: (() => void)[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  let arrived = 0;
  let released = 0;
  let opened = false;

  const forward = (incoming: IncomingMessage, response: ServerResponse, body: Buffer) => {
    const outgoing = request(
      { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    outgoing.on('error', () => response.destroy());
    response.on('close', () => outgoing.destroy());
    outgoing.end(body);
  };

  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      if (!RESULT_DOWNLOAD.test(incoming.url ?? '')) return forward(incoming, response, body);
      arrived++;
      for (const waiter of waiting.filter((w) => arrived >= w.count)) {
        waiting.splice(waiting.indexOf(waiter), 1);
        waiter.resolve();
      }
      const go = () => {
        released++;
        forward(incoming, response, body);
      };
      if (opened) go();
      else held.push(go);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const url = new URL(simulatorUrl);
  url.host = `127.0.0.1:${port}`;

  return {
    url: url.toString().replace(/\/$/, ''),
    get arrived() {
      return arrived;
    },
    get released() {
      return released;
    },
    arrivals: (count) => (arrived >= count ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ count, resolve }))),
    open() {
      opened = true;
      for (const go of held.splice(0)) go();
    },
    async close() {
      held.length = 0;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
