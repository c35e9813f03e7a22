/**
 * Test helpers: a plain-fetch client written only from the API spec (not the
 * bridge's Mapflow client), and a simulator started on 127.0.0.1.
 */
import { openAsBlob } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../src/index.ts';

export const TOKEN = 'sim-test-token-7f3a';
export const EMAIL = 'tester@example.com';
export const BEARER = `Bearer ${TOKEN}`;
export const BASIC = `Basic ${Buffer.from(`${EMAIL}:${TOKEN}`).toString('base64')}`;

const here = dirname(fileURLToPath(import.meta.url));
export const RASTERS = join(here, '../../../samples/rasters');
export const AOIS = join(here, '../../../samples/aoi');

/** A small square AOI in Bern, about 0.84 km². */
export const BERN = {
  type: 'Polygon',
  coordinates: [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]],
} as const;

/** Inside the footprint of cogeo.tif (128.6554-128.6609°E, 37.6664-37.6708°N). */
export const COGEO_AOI = {
  type: 'Polygon',
  coordinates: [[[128.6560, 37.6670], [128.6600, 37.6670], [128.6600, 37.6700], [128.6560, 37.6700], [128.6560, 37.6670]]],
} as const;

export function start(options: Partial<SimulatorOptions> = {}): Promise<RunningSimulator> {
  return startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 1, ...options });
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** One request; the JSON body (if any) parsed. */
export async function call(sim: { url: string }, method: string, path: string, body?: unknown, auth: string | null = BEARER): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = auth;
  let payload: FormData | string | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const response = await fetch(`${sim.url}${path}`, { method, headers, body: payload });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** A multipart body with the file (file-backed Blob, not read into memory by us) as part `file`. */
export async function fileForm(path: string): Promise<FormData> {
  const form = new FormData();
  form.append('file', await openAsBlob(path), basename(path));
  return form;
}

export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const TERMINAL = ['OK', 'FAILED', 'CANCELLED', 'REFUNDED'];

/** Polls GET /processings/{id} (v1, full record) until the processing is terminal. */
export async function finished(sim: { url: string }, id: string): Promise<any> {
  const answer = await waitFor(() => call(sim, 'GET', `/processings/${id}`), (a) => TERMINAL.includes(a.json?.status));
  return answer.json;
}

export function v2Body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'test processing',
    wdName: '🏠 Buildings',
    geometry: BERN,
    params: { sourceParams: { dataProvider: { providerName: 'Mapbox', zoom: 18 } } },
    ...overrides,
  };
}
