/**
 * HTTP plumbing shared by the handlers: typed request errors in the two body
 * shapes of the live service, JSON body reading, and response writers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The error families of the live service (real-api-notes.md):
 * - processing/project endpoints: `{code, message, params}`
 * - data endpoints (`/rasters/...`): `{detail: {code, parameters}}`
 */
export type ErrorFamily = 'api' | 'data';

/** A request-level failure; the router turns it into a response. */
export class SimHttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly params: Record<string, unknown>;
  readonly headers: Record<string, string>;
  /** A body written as is, without a code (a web framework's own answer). */
  readonly rawBody?: unknown;
  constructor(status: number, code: string, message: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}, rawBody?: unknown) {
    super(message);
    this.name = 'SimHttpError';
    this.status = status;
    this.code = code;
    this.params = params;
    this.headers = headers;
    this.rawBody = rawBody;
  }
}

/**
 * FastAPI's answer to a request it cannot validate: 422 with `detail` a list
 * and no code (FastAPI's RequestValidationError handler). The live data API
 * answers `{"detail": ...}` (mapflow-qgis spec/002_api.md "Error model"); no
 * source shows a code for a malformed data request, so --real-shapes sends none.
 */
export const validationFailed = (message: string, field: string) =>
  new SimHttpError(422, '', message, {}, {}, { detail: [{ loc: ['body', field], msg: message, type: 'value_error' }] });

export const badRequest = (message: string, params: Record<string, unknown> = {}, code = 'BAD_REQUEST') =>
  new SimHttpError(400, code, message, params);
export const notFound = (what: string, id: string) =>
  new SimHttpError(404, 'NOT_FOUND', `${what} ${id} not found`, { id });

export function errorBody(error: SimHttpError, family: ErrorFamily): unknown {
  if (error.rawBody !== undefined) return error.rawBody;
  if (family === 'data') return { detail: { code: error.code, parameters: { message: error.message, ...error.params } } };
  return { code: error.code, message: error.message, params: error.params };
}

/** Largest JSON body accepted (big AOI collections are a few MB). */
const MAX_JSON_BYTES = 64 * 1024 * 1024;

/** Reads and parses a JSON body; an empty body is `undefined`. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_JSON_BYTES) throw new SimHttpError(413, 'BAD_REQUEST', 'Request body too large');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw badRequest(`Request body is not valid JSON: ${(cause as Error).message}`);
  }
}

/** The body as a JSON object, or a 400. */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readJson(req);
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object');
  return body as Record<string, unknown>;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** The cost endpoints answer a bare number as text (real-api-notes.md). */
export function sendText(res: ServerResponse, status: number, text: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Operations whose response the spec does not show answer 200 with an empty body. */
export function sendEmpty(res: ServerResponse, status = 200): void {
  res.writeHead(status, { 'content-length': 0 });
  res.end();
}
