/**
 * The jobs console: a web page on 127.0.0.1 with the jobs as a live table and
 * a map of their AOIs and results (Leaflet, served from node_modules, with a
 * plain background so it works offline). Read-only: it only answers GET, and
 * only reads the ledger and the bucket (local, or a deployed one).
 *
 * Bound to 127.0.0.1, and requests whose Host is not this address are
 * refused, so a web page elsewhere cannot reach it through DNS rebinding.
 */
import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { StringDecoder } from 'node:string_decoder';
import type { S3Client } from '@aws-sdk/client-s3';
import { JOB_STATUSES, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import type { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
import { jobCost } from 'mapflow-bridge/functions/core/credits.ts';
import { partsDone } from 'mapflow-bridge/functions/core/progress.ts';
import { FeatureScanner } from 'mapflow-bridge/functions/geojson/features.ts';
import { quicklookKeyBeside, readAoi } from 'mapflow-bridge/functions/quicklook/index.ts';
import { openObjectStream } from 'mapflow-bridge/functions/storage/s3.ts';
import { inspectGeoTiff, s3RangeSource } from 'mapflow-bridge/functions/geotiff/index.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const LEAFLET_DIST = path.dirname(require.resolve('leaflet/dist/leaflet.js'));

/** Result features sent to the map at most per job (the page says when there were more). */
export const MAX_MAP_FEATURES = 5_000;
/** Result bytes read at most per job for the map. */
export const MAX_MAP_RESULT_BYTES = 64 * 1024 * 1024;
/** Parts whose AOI is drawn at most. */
const MAX_AOI_PARTS = 20;

export interface ConsoleOptions {
  ledger: Pick<Ledger, 'get' | 'listRecent' | 'listByStatus'>;
  /** Where results, reports and quicklooks are read; without it the map shows no results. */
  s3?: S3Client;
  /** Work prefix of the bridge (part geometries). Default 'work/'. */
  workPrefix?: string;
  /** What the page says it shows, e.g. "the local bridge" or "table X". */
  description: string;
  /** Default 0: any free port. */
  port?: number;
}

export interface ConsoleServer {
  url: string;
  close(): Promise<void>;
}

const STATIC: Record<string, { file: string; type: string }> = {
  '/': { file: path.join(HERE, 'index.html'), type: 'text/html; charset=utf-8' },
  '/app.js': { file: path.join(HERE, 'app.js'), type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: path.join(HERE, 'app.css'), type: 'text/css; charset=utf-8' },
  '/vendor/leaflet.js': { file: path.join(LEAFLET_DIST, 'leaflet.js'), type: 'text/javascript; charset=utf-8' },
  '/vendor/leaflet.css': { file: path.join(LEAFLET_DIST, 'leaflet.css'), type: 'text/css; charset=utf-8' },
};

const JOB_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The page's icon: a map pin in the header's blue (browsers ask for /favicon.ico whatever the page says). */
const FAVICON = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1c3d6e"/>' +
    '<path d="M16 5a8 8 0 0 0-8 8c0 6 8 14 8 14s8-8 8-14a8 8 0 0 0-8-8z" fill="#e8590c"/><circle cx="16" cy="13" r="3" fill="#fff"/></svg>',
);

/**
 * The offline base layer: land and country borders from Natural Earth
 * (world-atlas, 1:110m), converted once to GeoJSON with 3 decimals (about
 * 100 m, plenty at the scale it is drawn).
 */
let basemap: Buffer | undefined;
function basemapJson(): Buffer {
  if (!basemap) {
    type Topology = { objects: Record<string, unknown> };
    const topojson = require('topojson-client') as {
      feature(topology: Topology, object: unknown): unknown;
      mesh(topology: Topology, object: unknown, filter?: (a: unknown, b: unknown) => boolean): unknown;
    };
    const world = require('world-atlas/countries-110m.json') as Topology;
    const value = {
      land: acrossTheAntimeridian(topojson.feature(world, world.objects.land)),
      borders: acrossTheAntimeridian(topojson.mesh(world, world.objects.countries, (a, b) => a !== b)),
      source: 'Natural Earth 1:110m (public domain), via world-atlas',
    };
    basemap = Buffer.from(JSON.stringify(value, (_key, v: unknown) => (typeof v === 'number' ? Math.round(v * 1000) / 1000 : v)));
  }
  return basemap;
}

export async function startConsoleServer(options: ConsoleOptions): Promise<ConsoleServer> {
  let port = 0;
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const host = request.headers.host ?? '';
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) return send(response, 421, 'text/plain', 'wrong Host');
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'text/plain', 'read-only: GET only');
    handle(url, response, options).catch((error: unknown) => {
      if (!response.headersSent) send(response, 500, 'application/json', JSON.stringify({ error: `${(error as Error).name}: ${(error as Error).message}` }));
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function send(response: ServerResponse, status: number, type: string, body: string | Buffer): void {
  response.writeHead(status, { 'content-type': type, ...SECURITY_HEADERS });
  response.end(body);
}

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  // The optional basemap is the only thing loaded from elsewhere.
  'content-security-policy':
    "default-src 'self'; img-src 'self' data: https://tile.openstreetmap.org; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
};

const json = (response: ServerResponse, value: unknown, status = 200) => send(response, status, 'application/json; charset=utf-8', JSON.stringify(value));

async function handle(url: URL, response: ServerResponse, options: ConsoleOptions): Promise<void> {
  const asset = STATIC[url.pathname];
  if (asset) {
    response.writeHead(200, { 'content-type': asset.type, ...SECURITY_HEADERS });
    createReadStream(asset.file).on('error', () => response.destroy()).pipe(response);
    return;
  }
  if (url.pathname === '/favicon.ico' || url.pathname === '/favicon.svg') {
    response.writeHead(200, { 'content-type': 'image/svg+xml', ...SECURITY_HEADERS, 'cache-control': 'max-age=86400' });
    response.end(FAVICON);
    return;
  }
  if (url.pathname === '/basemap.json') return send(response, 200, 'application/json; charset=utf-8', basemapJson());
  if (url.pathname === '/api/info') return json(response, { source: options.description, statuses: JOB_STATUSES, results: Boolean(options.s3) });
  if (url.pathname === '/api/jobs') {
    const status = url.searchParams.get('status');
    const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 200) || 200, 1), 1000);
    const rows =
      status && (JOB_STATUSES as readonly string[]).includes(status)
        ? await options.ledger.listByStatus(status as LedgerRow['status'], { limit })
        : await options.ledger.listRecent({ limit });
    const route = url.searchParams.get('route');
    return json(response, { jobs: rows.filter((row) => !route || row.routeName === route).map(summary) });
  }
  const match = /^\/api\/jobs\/([^/]+)(?:\/(aoi|results|quicklook))?$/.exec(url.pathname);
  if (!match || !JOB_ID.test(match[1] as string)) return send(response, 404, 'text/plain', 'not found');
  const row = await options.ledger.get(match[1] as string);
  if (!row) return json(response, { error: 'no such job' }, 404);
  switch (match[2]) {
    case undefined:
      return json(response, { ...row, quicklooks: quicklookKeys(row), cost: jobCost(row) });
    case 'aoi':
      return json(response, await aoiOf(row, options));
    case 'results':
      return json(response, await resultsOf(row, options));
    case 'quicklook': {
      const index = Number(url.searchParams.get('index') ?? 0);
      const key = quicklookKeys(row)[index];
      if (!key || !options.s3) return send(response, 404, 'text/plain', 'no quicklook');
      try {
        const { stream } = await openObjectStream(options.s3, { bucket: row.input.bucket, key });
        // SVG from S3 is shown as an image (CSP forbids its scripts anyway).
        response.writeHead(200, { 'content-type': 'image/svg+xml', ...SECURITY_HEADERS, 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'" });
        stream.on('error', () => response.destroy()).pipe(response);
      } catch {
        send(response, 404, 'text/plain', 'no quicklook');
      }
      return;
    }
    default:
  }
}

/** What the table shows of a job. */
function summary(row: LedgerRow) {
  const end = row.finishedAt ? Date.parse(row.finishedAt) : Date.now();
  return {
    jobId: row.jobId,
    file: row.input.key,
    kind: row.kind,
    status: row.status,
    route: row.routeName,
    // Charged credits whenever known (a cancelled or failed job keeps what its parts cost); the estimate only before.
    cost: jobCost(row)?.credits,
    costIsEstimate: jobCost(row)?.kind === 'estimate',
    // The job's percent (every planned part, those not started at 0 %), and for a split job how many parts are done.
    percentCompleted: row.status === 'SUCCEEDED' ? 100 : row.percentCompleted,
    ...(partsDone(row).planned > 1 && { parts: partsDone(row) }),
    durationSeconds: Math.max(0, Math.round((end - Date.parse(row.createdAt)) / 1000)),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    error: row.error,
    retryOf: row.retryOf,
    attempt: row.attempt,
    retriedBy: row.retriedBy,
  };
}

function quicklookKeys(row: LedgerRow): string[] {
  const keys = (row.parts ?? []).filter((p) => p.resultKey).map((p) => quicklookKeyBeside(p.resultKey as string));
  if (row.reportKey) keys.push(quicklookKeyBeside(row.reportKey));
  return keys;
}

/** The AOI of every part (the geometries the bridge sent to Mapflow, or a GeoTIFF's footprint), else the GeoJSON input. */
async function aoiOf(row: LedgerRow, options: ConsoleOptions): Promise<unknown> {
  const features: unknown[] = [];
  if (options.s3) {
    const count = Math.min(Math.max(row.parts?.length ?? 1, 1), MAX_AOI_PARTS);
    for (let index = 0; index < count; index++) {
      const geometry = await readAoi(options.s3, row.input.bucket, `${options.workPrefix ?? 'work/'}${row.jobId}/part-${index}.geometry.json`);
      if (geometry) features.push(asFeature(geometry, { part: index }));
    }
    if (features.length === 0 && row.kind === 'geojson') {
      const input = await readAoi(options.s3, row.input.bucket, row.input.key);
      if (input) features.push(asFeature(input, {}));
    }
    // A GeoTIFF that ended before its parts were planned (REJECTED for its pixel size, say): its footprint is still known.
    if (features.length === 0 && row.kind === 'geotiff') {
      const footprint = await footprintOf(row, options.s3);
      if (footprint) features.push(asFeature(footprint, { footprint: true }));
    }
  }
  return { type: 'FeatureCollection', features };
}

/**
 * Rings and lines that cross the antimeridian (Chukotka, Fiji) come with
 * longitudes on both sides of ±180, which a flat map draws as a sliver across
 * the whole world: their points west of -150 are moved east (+ 360). Antarctica,
 * which wraps the whole globe on purpose, is left alone.
 */
function acrossTheAntimeridian(geojson: unknown): unknown {
  const fix = (ring: number[][]): number[][] => {
    const lons = ring.map((p) => p[0] as number);
    const crosses = Math.min(...lons) < -150 && Math.max(...lons) > 150 && Math.min(...ring.map((p) => p[1] as number)) > -60;
    // Only the points just west of the antimeridian move (Eurasia's ring also holds Portugal, at -9).
    return crosses ? ring.map(([lon, lat]) => [(lon as number) < -150 ? (lon as number) + 360 : (lon as number), lat as number]) : ring;
  };
  const walk = (value: unknown, depth: number): unknown =>
    depth === 0 ? fix(value as number[][]) : (value as unknown[]).map((inner) => walk(inner, depth - 1));
  const geometry = (g: { type: string; coordinates: unknown }) => {
    const depth = g.type === 'MultiPolygon' ? 2 : g.type === 'Polygon' || g.type === 'MultiLineString' ? 1 : g.type === 'LineString' ? 0 : -1;
    return depth < 0 ? g : { ...g, coordinates: walk(g.coordinates, depth) };
  };
  const value = geojson as { type: string; features?: { geometry: { type: string; coordinates: unknown } }[]; coordinates?: unknown };
  if (value.type === 'FeatureCollection') return { ...value, features: value.features?.map((f) => ({ ...f, geometry: geometry(f.geometry) })) };
  return geometry(value as { type: string; coordinates: unknown });
}

/** Footprints read from GeoTIFF headers (ranged reads), by bucket, key and ETag. */
const footprints = new Map<string, Promise<unknown>>();
function footprintOf(row: LedgerRow, s3: S3Client): Promise<unknown> {
  const key = `${row.input.bucket}\u0000${row.input.key}\u0000${row.input.etag}`;
  if (!footprints.has(key)) {
    const source = s3RangeSource(s3, { bucket: row.input.bucket, key: row.input.key, ...(row.input.versionId ? { versionId: row.input.versionId } : {}), size: row.input.size });
    // A file that is not a readable GeoTIFF has no footprint: the map says so by staying empty.
    footprints.set(key, inspectGeoTiff(source).then((info) => info.footprint4326, () => undefined));
  }
  return footprints.get(key) as Promise<unknown>;
}

function asFeature(geojson: unknown, properties: Record<string, unknown>): unknown {
  const g = geojson as { type?: string };
  if (g?.type === 'Feature' || g?.type === 'FeatureCollection') return geojson;
  return { type: 'Feature', properties, geometry: geojson };
}

/**
 * The result features of every part, read as a stream: at most
 * MAX_MAP_FEATURES go to the browser, and the rest are still counted (not
 * kept), so the page says how many the results hold. Stopping at the cap
 * counted only the features of the chunk in hand ("5000 of 5061" for 7,395).
 * Past MAX_MAP_RESULT_BYTES of a part the count stops: `featuresCounted` is
 * then false and `featuresRead` a lower bound.
 */
async function resultsOf(row: LedgerRow, options: ConsoleOptions): Promise<unknown> {
  const features: unknown[] = [];
  let total = 0;
  let counted = true;
  for (const part of row.parts ?? []) {
    if (!part.resultKey || !options.s3) continue;
    const scanner = new FeatureScanner({ onFeature: (f) => void (features.length < MAX_MAP_FEATURES && features.push(f)) });
    try {
      const { stream } = await openObjectStream(options.s3, { bucket: row.input.bucket, key: part.resultKey });
      const decoder = new StringDecoder('utf8');
      let bytes = 0;
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        scanner.push(decoder.write(chunk));
        if (bytes > MAX_MAP_RESULT_BYTES) {
          counted = false;
          stream.destroy();
          break;
        }
      }
    } catch {
      // A missing result shows as no features; the job page still shows the job.
    }
    total += scanner.count;
  }
  return { type: 'FeatureCollection', features, properties: { featuresShown: features.length, featuresRead: total, featuresCounted: counted } };
}
