/**
 * The HTTP server: faults and latency first (as a gateway would add them),
 * then authentication, routing under the base path `/rest`, and writing (or,
 * for dropAfterCommit, losing) the handler's reply.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAuthorized } from './auth.ts';
import { catalogRoutes } from './catalog.ts';
import type { Reply, Route, SimContext } from './context.ts';
import type { FaultInjector } from './faults.ts';
import { errorBody, SimHttpError, sendEmpty, sendJson, sendText, type ErrorFamily } from './http.ts';
import { processingRoutes } from './processings.ts';
import { rasterRoutes } from './rasters.ts';

export const BASE_PATH = '/rest';

const ROUTES: Route[] = [...processingRoutes, ...rasterRoutes, ...catalogRoutes];

export interface Counters {
  requests: number;
  faults: number;
  droppedResponses: number;
  processingsCreated: number;
}

function familyOf(path: string): ErrorFamily {
  return path.startsWith('/rasters') ? 'data' : 'api';
}

function sendError(res: ServerResponse, error: SimHttpError, family: ErrorFamily): void {
  sendJson(res, error.status, errorBody(error, family), error.headers);
}

/**
 * Reads and discards what is left of a request body. An error is answered only
 * after that: a server that answers and closes while the client is still
 * sending (a refused upload) makes the client fail with EPIPE instead of
 * reading the answer.
 */
async function drain(req: IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) return;
  req.resume();
  await new Promise<void>((resolve) => {
    req.once('end', resolve);
    req.once('close', resolve);
    req.once('error', () => resolve());
  });
}

async function writeReply(res: ServerResponse, reply: Reply): Promise<void> {
  switch (reply.kind) {
    case 'json':
      sendJson(res, reply.status ?? 200, reply.body);
      return;
    case 'text':
      sendText(res, reply.status ?? 200, reply.body);
      return;
    case 'empty':
      sendEmpty(res, reply.status ?? 200);
      return;
    case 'binary':
      res.writeHead(200, { 'content-type': reply.contentType, 'content-length': reply.body.length });
      res.end(reply.body);
      return;
    case 'stream':
      res.writeHead(200, { 'content-type': reply.contentType });
      // A client that goes away mid-stream is not a simulator failure.
      await pipeline(reply.body, res).catch(() => res.destroy());
      return;
  }
}

/** Applies the next fault, if any; an answered fault is a clean answer (the body is read first), a reset is not. */
async function injectFault(req: IncomingMessage, res: ServerResponse, faults: FaultInjector): Promise<boolean> {
  const fault = faults.nextFault();
  if (!fault) return false;
  switch (fault.kind) {
    case 'reset':
      req.socket.destroy();
      break;
    case 'rate-limited':
      await drain(req);
      sendJson(res, 429, { code: 'TOO_MANY_REQUESTS', message: 'Rate limit exceeded, retry later', params: {} }, { 'retry-after': '1' });
      break;
    case 'status':
      await drain(req);
      if (fault.status === 502) sendText(res, 502, '<html><body><h1>502 Bad Gateway</h1></body></html>', 'text/html');
      else sendJson(res, fault.status, { code: 'INTERNAL_ERROR', message: 'The service is temporarily unavailable', params: {} });
      break;
  }
  return true;
}

function decodePathParam(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new SimHttpError(400, 'BAD_REQUEST', 'The path has a malformed percent-escape');
  }
}

export function createSimServer(ctx: SimContext, faults: FaultInjector, latencyMs: number, counters: Counters): Server {
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    counters.requests++;
    if (latencyMs > 0) await sleep(latencyMs);
    if (await injectFault(req, res, faults)) {
      counters.faults++;
      return;
    }
    const url = new URL(req.url ?? '/', 'http://simulator');
    const path = url.pathname.startsWith(`${BASE_PATH}/`) ? url.pathname.slice(BASE_PATH.length).replace(/\/+$/, '') : undefined;
    const family = familyOf(path ?? '');
    if (path === undefined) {
      await drain(req);
      sendError(res, new SimHttpError(404, 'NOT_FOUND', `Every path is under ${BASE_PATH}`), family);
      return;
    }
    if (!isAuthorized(req.headers.authorization, ctx.account)) {
      await drain(req);
      const error = family === 'data'
        ? new SimHttpError(401, 'AccessDenied', 'Missing or invalid credentials')
        : ctx.realShapes
          // The server's AuthenticationError (io.geoalert.mapflow.exception): 401 AUTHENTICATION_ERROR.
          ? new SimHttpError(401, 'AUTHENTICATION_ERROR', 'Wrong login/password.')
          : new SimHttpError(401, 'UNAUTHORIZED', 'Missing or invalid credentials');
      sendError(res, error, family);
      return;
    }
    const allowedMethods = (p: string) => [...new Set(ROUTES.filter((r) => (!r.live || ctx.realShapes) && r.pattern.test(p)).map((r) => r.method))];
    let matchedPath = false;
    for (const route of ROUTES) {
      if (route.live && !ctx.realShapes) continue;
      const match = route.pattern.exec(path);
      if (!match) continue;
      matchedPath = true;
      if (route.method !== req.method) continue;
      let reply: Reply;
      try {
        // A malformed percent-escape (`%zz`) is the client's error: 400, not a crash answered 500.
        const params = match.slice(1).map((p) => decodePathParam(p));
        reply = await route.handle(ctx, { req, url, params });
      } catch (error) {
        if (error instanceof SimHttpError) {
          await drain(req);
          sendError(res, error, route.family);
          return;
        }
        throw error;
      }
      if (route.createsProcessing) counters.processingsCreated++;
      if (route.create && faults.dropResponse()) {
        // The create took effect; its answer is lost on the way back.
        counters.droppedResponses++;
        req.socket.destroy();
        return;
      }
      await writeReply(res, reply);
      return;
    }
    await drain(req);
    // With --real-shapes, as akka-http's sealed routes answer a method without a route: text, no code.
    if (matchedPath && ctx.realShapes && family !== 'data') sendText(res, 405, `HTTP method not allowed, supported methods: ${allowedMethods(path).join(', ')}`, 'text/plain; charset=UTF-8');
    // FastAPI's own 405 on the data API, without a code.
    else if (matchedPath && ctx.realShapes) sendJson(res, 405, { detail: 'Method Not Allowed' });
    else if (matchedPath) sendError(res, new SimHttpError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}`), family);
    // A path the server has no route for gets the web framework's own answer, without an error code, so a
    // client tells it from a missing object (404 NOT_FOUND): akka-http's Route.seal on the processing API
    // (the Mapflow server's HttpServer seals its routes), FastAPI's default on the data API.
    else if (family === 'data') sendJson(res, 404, { detail: 'Not Found' });
    else sendText(res, 404, 'The requested resource could not be found.', 'text/plain; charset=UTF-8');
  };

  return createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // An unexpected failure: report it without details (never echo the request).
      console.error(`mapflow simulator: ${req.method} ${req.url?.split('?')[0]} failed: ${(error as Error)?.stack ?? String(error)}`);
      if (!res.headersSent) sendJson(res, 500, { code: 'INTERNAL_ERROR', message: 'Internal simulator error', params: {} });
      else res.destroy();
    });
  });
}
