/**
 * Typed client of the whole Mapflow API (processing, data and catalog
 * interfaces), shared by every Lambda.
 *
 * One method per endpoint of the spec. Answers are read tolerantly (see
 * normalise.ts); failures are typed (see errors.ts); retries and timeouts
 * follow the rule in http/transport.ts.
 */
import type { Readable } from 'node:stream';
import { resolveAuth, type AuthScheme } from './auth.ts';
import { MapflowBadResponse, Redactor, isRouteNotFound } from './errors.ts';
import { Transport, type MapflowLogger, type RequestSpec, type ResponseData } from './http/transport.ts';
import { resolveRetry, type RetryOptions } from './http/retry.ts';
import type { HttpRequester } from './http/exchange.ts';
import { nodeHttpRequester } from './http/node-http.ts';
import { multipartFileBody } from './multipart.ts';
import {
  ShapeError,
  normaliseAois,
  normaliseCatalog,
  normaliseImage,
  normaliseImages,
  normaliseImageStatus,
  normaliseLinkResult,
  normaliseMosaic,
  normaliseMosaics,
  normaliseMosaicStatus,
  normalisePage,
  normaliseProcessing,
  normaliseProcessingList,
  normaliseProject,
  normaliseProjects,
  normaliseStats,
  normaliseStorageUsage,
  normaliseUploadAnswer,
  normaliseUserStatus,
  parseCost,
  parseJsonText,
} from './normalise.ts';
import type {
  CatalogResult,
  CatalogSearch,
  CostRequestV1,
  CostRequestV2,
  CreateProcessingV1,
  CreateProcessingV2,
  ImageRecord,
  ImageStatus,
  Mosaic,
  Processing,
  ProcessingAoi,
  ProcessingStats,
  ProcessingStatsQuery,
  Project,
  StorageUsage,
  UploadAnswer,
  UploadSource,
  UserStatus,
} from './types.ts';

export const DEFAULT_BASE_URL = 'https://api.mapflow.ai/rest';
export const DEFAULT_CLIENT_NAME = 'mapflow-bridge';
export const DEFAULT_CLIENT_VERSION = '0.1.0';

/**
 * Per-call timeouts, milliseconds. Each is the longest wait without progress:
 * for the answer's first byte, then between chunks.
 * - `requestMs`: every call not named below (JSON reads and writes).
 * - `statusMs`: status reads polled over and over (processing, image
 *   preprocessing); short, since the next poll comes anyway.
 * - `resultMs`: result downloads. The live service may take minutes before
 *   the first byte of a large result; the official plugin gives 300 s
 *   (mapflow-qgis mapflow.py result download).
 * - `uploadMs`: uploads, including the wait for the answer once the file is
 *   sent (the service checks the file first); the plugin gives an hour
 *   (mapflow-qgis functional/api/data_catalog_api.py `timeout=3600`).
 */
export interface MapflowTimeouts {
  requestMs: number;
  statusMs: number;
  resultMs: number;
  uploadMs: number;
}

export const DEFAULT_TIMEOUTS: MapflowTimeouts = {
  requestMs: 30_000,
  statusMs: 20_000,
  resultMs: 300_000,
  uploadMs: 3_600_000,
};

/** Environment variables that set the timeouts, seconds (local mode and Lambda alike). */
export const TIMEOUT_VARIABLES = {
  requestMs: 'MAPFLOW_REQUEST_TIMEOUT_SECONDS',
  statusMs: 'MAPFLOW_STATUS_TIMEOUT_SECONDS',
  resultMs: 'MAPFLOW_RESULT_TIMEOUT_SECONDS',
  uploadMs: 'MAPFLOW_UPLOAD_TIMEOUT_SECONDS',
} as const satisfies Record<keyof MapflowTimeouts, string>;

/** The timeouts the environment sets (TIMEOUT_VARIABLES); a value that is not a positive number is an error. */
export function timeoutsFromEnv(env: Record<string, string | undefined>): Partial<MapflowTimeouts> {
  const out: Partial<MapflowTimeouts> = {};
  for (const [key, variable] of Object.entries(TIMEOUT_VARIABLES) as [keyof MapflowTimeouts, string][]) {
    const raw = env[variable]?.trim();
    if (!raw) continue;
    const seconds = Number(raw);
    if (!Number.isFinite(seconds) || seconds <= 0) throw new RangeError(`${variable} must be a positive number of seconds (got '${raw}')`);
    out[key] = Math.round(seconds * 1000);
  }
  return out;
}

/** Items asked for per page of a paged list. */
const PAGE_LIMIT = 100;
/** Pages read at most from one list (a server that ignores `offset` must not loop forever). */
const MAX_PAGES = 1_000;

export interface MapflowClientOptions {
  /** e.g. https://api.mapflow.ai/rest or the simulator's url. */
  baseUrl: string;
  token: string;
  email?: string;
  /** auto (default): Basic when the token already decodes to "x:y" or an email is given, else Bearer. */
  authScheme?: AuthScheme;
  /** Per request, until the answer is read: the default of `timeouts.requestMs`. Default 30 000. */
  timeoutMs?: number;
  /** Uploads (same as `timeouts.uploadMs`, kept for existing callers). */
  uploadTimeoutMs?: number;
  /** Per-call timeouts (see MapflowTimeouts); unset ones keep DEFAULT_TIMEOUTS. */
  timeouts?: Partial<MapflowTimeouts>;
  retry?: RetryOptions;
  /**
   * Sends one HTTP exchange. Default node:http (`nodeHttpRequester`); the
   * tests pass `undiciRequester(mockAgent)` from functions/mapflow/http/undici.ts.
   */
  http?: HttpRequester;
  /** Client identity header + processing meta `source-app`. Default mapflow-bridge. */
  clientName?: string;
  /** Client identity header + processing meta `version`. Default the package version. */
  clientVersion?: string;
  /** Receives a line per retry. Never given the token. */
  logger?: MapflowLogger;
  /** Sleep between retries (tests inject an instant or recording one). */
  sleep?: (ms: number) => Promise<void>;
  /** Jitter source in [0, 1) (tests make backoff deterministic). */
  random?: () => number;
  /** Clock for Retry-After dates. */
  now?: () => number;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Encodes one path segment (ids are UUIDs, but never trust a caller's string in a URL). */
const seg = (value: string) => encodeURIComponent(value);

async function readText(res: ResponseData): Promise<string> {
  return res.body.text();
}

async function readBuffer(res: ResponseData): Promise<Buffer> {
  return Buffer.from(await res.body.arrayBuffer());
}

async function discard(res: ResponseData): Promise<void> {
  await res.body.dump();
}

async function passStream(res: ResponseData): Promise<Readable> {
  return res.body;
}

export class MapflowClient {
  readonly #transport: Transport;
  readonly #clientName: string;
  readonly #clientVersion: string;
  readonly #timeouts: MapflowTimeouts;
  /**
   * Calls whose newer path the server has no route for (isRouteNotFound): the
   * older form is used from then on, by this client only (memory, never stored).
   */
  readonly #legacy = new Set<string>();

  constructor(options: MapflowClientOptions) {
    const auth = resolveAuth(options);
    this.#clientName = options.clientName ?? DEFAULT_CLIENT_NAME;
    this.#clientVersion = options.clientVersion ?? DEFAULT_CLIENT_VERSION;
    const requestMs = options.timeouts?.requestMs ?? options.timeoutMs ?? DEFAULT_TIMEOUTS.requestMs;
    this.#timeouts = {
      requestMs,
      statusMs: options.timeouts?.statusMs ?? (options.timeoutMs !== undefined ? Math.min(options.timeoutMs, DEFAULT_TIMEOUTS.statusMs) : DEFAULT_TIMEOUTS.statusMs),
      resultMs: options.timeouts?.resultMs ?? DEFAULT_TIMEOUTS.resultMs,
      uploadMs: options.timeouts?.uploadMs ?? options.uploadTimeoutMs ?? DEFAULT_TIMEOUTS.uploadMs,
    };
    for (const [name, ms] of Object.entries(this.#timeouts)) {
      if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`Mapflow client timeout ${name} must be a positive number of milliseconds (got ${ms})`);
    }
    this.#transport = new Transport({
      baseUrl: options.baseUrl || DEFAULT_BASE_URL,
      authorization: auth.header,
      identityHeaders: {
        'x-client-name': this.#clientName,
        'x-client-version': this.#clientVersion,
        'user-agent': `${this.#clientName}/${this.#clientVersion}`,
      },
      redactor: new Redactor(auth.secrets),
      timeoutMs: requestMs,
      retry: resolveRetry(options.retry),
      http: options.http ?? nodeHttpRequester(),
      sleep: options.sleep ?? defaultSleep,
      random: options.random ?? Math.random,
      now: options.now ?? Date.now,
      logger: options.logger,
    });
  }

  /** Keeps the credential out of console.log / util.inspect of the client. */
  toString(): string {
    return `MapflowClient(${this.#clientName}/${this.#clientVersion})`;
  }

  toJSON(): Record<string, string> {
    return { client: this.toString() };
  }

  /** The timeouts in force (for docs, doctor output and tests). */
  get timeouts(): Readonly<MapflowTimeouts> {
    return { ...this.#timeouts };
  }

  // -------------------------------------------------------------------------
  // Projects

  async createProject(body: { name: string; description?: string }): Promise<Project> {
    return this.#json({ method: 'POST', path: 'projects', json: body, kind: 'create' }, normaliseProject);
  }

  /**
   * Every project: the paged `POST projects/page` (mapflow-qgis
   * functional/api/project_api.py, since 2026-03) read to its last page, or
   * `GET projects` where the server does not have it (404/405).
   */
  async listProjects(): Promise<Project[]> {
    return this.#fallback(
      'projects/page',
      () => this.#allPages('projects/page', normaliseProject, 'projects'),
      () => this.#json({ method: 'GET', path: 'projects', kind: 'idempotent' }, normaliseProjects),
    );
  }

  async getProject(id: string): Promise<Project> {
    return this.#json({ method: 'GET', path: `projects/${seg(id)}`, kind: 'idempotent' }, normaliseProject);
  }

  async getDefaultProject(): Promise<Project> {
    return this.#json({ method: 'GET', path: 'projects/default', kind: 'idempotent' }, normaliseProject);
  }

  async updateProject(id: string, body: { name?: string; description?: string }): Promise<void> {
    await this.#transport.send({ method: 'PUT', path: `projects/${seg(id)}`, json: body, kind: 'idempotent' }, discard);
  }

  async deleteProject(id: string): Promise<void> {
    await this.#transport.send({ method: 'DELETE', path: `projects/${seg(id)}`, kind: 'idempotent' }, discard);
  }

  // -------------------------------------------------------------------------
  // Processings v2

  async createProcessing(body: CreateProcessingV2): Promise<Processing> {
    return this.#json(
      { method: 'POST', path: 'processings/v2', json: { ...body, meta: this.#meta(body.meta) }, kind: 'create' },
      normaliseProcessing,
    );
  }

  /** Polled: uses the short status timeout. */
  async getProcessing(id: string): Promise<Processing> {
    return this.#json(
      { method: 'GET', path: `processings/${seg(id)}/v2`, kind: 'idempotent', timeoutMs: this.#timeouts.statusMs },
      normaliseProcessing,
    );
  }

  async listProcessings(): Promise<Processing[]> {
    return this.#json({ method: 'GET', path: 'processings/v2', kind: 'idempotent' }, normaliseProcessingList);
  }

  /**
   * Every processing of a project: the paged `POST projects/{id}/processings/v2/page`
   * (mapflow-qgis functional/api/processing_api.py `get_processings`) read to
   * its last page, so an earlier processing on page 2 is not missed; or
   * `GET projects/{id}/processings/v2` where the server does not have it (404/405).
   */
  async listProjectProcessings(projectId: string): Promise<Processing[]> {
    const paged = `projects/${seg(projectId)}/processings/v2/page`;
    return this.#fallback(
      'projects/{id}/processings/v2/page',
      () => this.#allPages(paged, normaliseProcessing, 'processings'),
      () => this.#json({ method: 'GET', path: `projects/${seg(projectId)}/processings/v2`, kind: 'idempotent' }, normaliseProcessingList),
    );
  }

  /** Credits the processing would cost. Changes nothing, so it is retried like a GET. */
  async estimateCost(body: CostRequestV2): Promise<number> {
    // A create body priced as it will be created: its meta as the create sends it.
    const json = body.meta === undefined ? body : { ...body, meta: this.#meta(body.meta) };
    return this.#cost({ method: 'POST', path: 'processing/cost/v2', json, kind: 'idempotent', accept: 'application/json, text/plain' });
  }

  // -------------------------------------------------------------------------
  // Processings v1

  async listProcessingsV1(): Promise<Processing[]> {
    return this.#json({ method: 'GET', path: 'processings', kind: 'idempotent' }, normaliseProcessingList);
  }

  async listProjectProcessingsV1(projectId: string): Promise<Processing[]> {
    return this.#json(
      { method: 'GET', path: `projects/${seg(projectId)}/processings`, kind: 'idempotent' },
      normaliseProcessingList,
    );
  }

  async getProcessingV1(id: string): Promise<Processing> {
    return this.#json({ method: 'GET', path: `processings/${seg(id)}`, kind: 'idempotent' }, normaliseProcessing);
  }

  async estimateCostV1(body: CostRequestV1): Promise<number> {
    return this.#cost({ method: 'POST', path: 'processing/cost', json: body, kind: 'idempotent', accept: 'application/json, text/plain' });
  }

  async createProcessingV1(body: CreateProcessingV1): Promise<Processing> {
    return this.#json(
      { method: 'POST', path: 'processings', json: { ...body, meta: this.#meta(body.meta) }, kind: 'create' },
      normaliseProcessing,
    );
  }

  /** PUT /processing/{id}: name and description. */
  async renameProcessing(id: string, body: { name?: string; description?: string }): Promise<void> {
    await this.#transport.send({ method: 'PUT', path: `processing/${seg(id)}`, json: body, kind: 'idempotent' }, discard);
  }

  /**
   * PUT /processings/{id}/v2 (mapflow-qgis processing_api.py `update_processing`),
   * else PUT /processings/{id} on 404/405: name, description, projectId (moves it).
   */
  async updateProcessing(id: string, body: { name?: string; description?: string; projectId?: string }): Promise<void> {
    await this.#fallback(
      'processings/{id}/v2 PUT',
      () => this.#transport.send({ method: 'PUT', path: `processings/${seg(id)}/v2`, json: body, kind: 'idempotent' }, discard),
      () => this.#transport.send({ method: 'PUT', path: `processings/${seg(id)}`, json: body, kind: 'idempotent' }, discard),
    );
  }

  async moveProcessing(id: string, projectId: string): Promise<void> {
    await this.updateProcessing(id, { projectId });
  }

  /**
   * Restarts the failed partitions. Retried like a GET: a second restart of a
   * processing with no failed partitions restarts nothing.
   */
  async restartProcessing(id: string): Promise<void> {
    // POST processings/{id}/restart/v2 since 2026-03 (mapflow-qgis processing_api.py), the older path on 404/405.
    await this.#fallback(
      'processings/{id}/restart/v2',
      () => this.#transport.send({ method: 'POST', path: `processings/${seg(id)}/restart/v2`, kind: 'idempotent' }, discard),
      () => this.#transport.send({ method: 'POST', path: `processings/${seg(id)}/restart`, kind: 'idempotent' }, discard),
    );
  }

  async deleteProcessing(id: string): Promise<void> {
    await this.#transport.send({ method: 'DELETE', path: `processings/${seg(id)}`, kind: 'idempotent' }, discard);
  }

  async getProcessingAois(id: string): Promise<ProcessingAoi[]> {
    return this.#json({ method: 'GET', path: `processings/${seg(id)}/aois`, kind: 'idempotent' }, normaliseAois);
  }

  // -------------------------------------------------------------------------
  // Results

  /**
   * The GeoJSON result bytes as a stream, never buffered. The caller must
   * consume or destroy it. Failures before the answer starts are retried;
   * an idle stream errors after `timeoutMs` without data.
   */
  async downloadResults(id: string, options: { aoiId?: string } = {}): Promise<Readable> {
    return this.#transport.send(
      {
        method: 'GET',
        path: `processings/${seg(id)}/result`,
        query: { aoiId: options.aoiId },
        kind: 'idempotent',
        accept: 'application/geo+json, application/json, application/octet-stream',
        timeoutMs: this.#timeouts.resultMs,
      },
      passStream,
      { stream: true },
    );
  }

  // -------------------------------------------------------------------------
  // Account

  /** User status normalised over both shapes; areas in square metres. */
  async getUserStatus(): Promise<UserStatus> {
    return this.#json({ method: 'GET', path: 'user/status', kind: 'idempotent' }, normaliseUserStatus);
  }

  /** Processing history. JSON (default) gives the parsed envelope; CSV gives the text. */
  async getProcessingStats(query: ProcessingStatsQuery, format: 'JSON' | 'CSV' = 'JSON'): Promise<ProcessingStats | string> {
    const spec: RequestSpec = {
      method: 'POST',
      path: 'processings/stats',
      query: { type: format },
      json: query,
      kind: 'idempotent',
      accept: format === 'CSV' ? 'text/csv, text/plain, */*' : 'application/json',
    };
    if (format === 'CSV') return this.#transport.send(spec, readText);
    return this.#json(spec, normaliseStats);
  }

  // -------------------------------------------------------------------------
  // Mosaics and images

  /** Every mosaic of the account (`GET /rasters/mosaic`: mapflow-qgis data_catalog_api.py `get_mosaics`). */
  async listMosaics(): Promise<Mosaic[]> {
    return this.#json({ method: 'GET', path: 'rasters/mosaic', kind: 'idempotent' }, normaliseMosaics);
  }

  async createMosaic(body: { name: string; tags?: string[] }): Promise<Mosaic> {
    return this.#json({ method: 'POST', path: 'rasters/mosaic', json: body, kind: 'create' }, normaliseMosaic);
  }

  async getMosaic(id: string): Promise<Mosaic> {
    return this.#json({ method: 'GET', path: `rasters/mosaic/${seg(id)}`, kind: 'idempotent' }, normaliseMosaic);
  }

  /** `tags` replaces the whole list. */
  async updateMosaic(id: string, body: { name?: string; tags?: string[] }): Promise<void> {
    await this.#transport.send({ method: 'PUT', path: `rasters/mosaic/${seg(id)}`, json: body, kind: 'idempotent' }, discard);
  }

  /**
   * Streams the file as multipart part `file`; memory use does not grow with
   * the file. The answer may carry no image (`{message, mosaic_id}`: see
   * UploadAnswer); find the image in the mosaic then (by checksum, size and time).
   */
  async uploadImage(mosaicId: string, file: UploadSource): Promise<UploadAnswer> {
    return this.#json(
      {
        method: 'POST',
        path: `rasters/mosaic/${seg(mosaicId)}/image`,
        stream: multipartFileBody(file),
        kind: 'create',
        timeoutMs: this.#timeouts.uploadMs,
      },
      normaliseUploadAnswer,
    );
  }

  /** Creates a mosaic and uploads the image into it in one request (same answer as uploadImage). */
  async createMosaicWithImage(query: { name: string; tags?: string[] }, file: UploadSource): Promise<UploadAnswer> {
    return this.#json(
      {
        method: 'POST',
        path: 'rasters/mosaic/image',
        query: { name: query.name, tags: query.tags },
        stream: multipartFileBody(file),
        kind: 'create',
        timeoutMs: this.#timeouts.uploadMs,
      },
      normaliseUploadAnswer,
    );
  }

  /** Preprocessing state of an uploaded image (`GET /rasters/image/{id}/status`). Polled: short timeout. */
  async getImageStatus(id: string): Promise<ImageStatus> {
    return this.#json(
      { method: 'GET', path: `rasters/image/${seg(id)}/status`, kind: 'idempotent', timeoutMs: this.#timeouts.statusMs },
      normaliseImageStatus,
    );
  }

  /** Preprocessing state of every image of a mosaic, ready or not (`GET /rasters/mosaic/{id}/status`). */
  async getMosaicStatus(id: string): Promise<ImageStatus[]> {
    return this.#json(
      { method: 'GET', path: `rasters/mosaic/${seg(id)}/status`, kind: 'idempotent', timeoutMs: this.#timeouts.statusMs },
      normaliseMosaicStatus,
    );
  }

  /** Links an image already in storage (`s3://...`) into the mosaic. */
  async linkImage(mosaicId: string, url: string): Promise<{ message: string; mosaicId: string }> {
    return this.#json(
      { method: 'POST', path: `rasters/mosaic/${seg(mosaicId)}/link-image`, json: { url }, kind: 'create' },
      normaliseLinkResult,
    );
  }

  async listMosaicImages(mosaicId: string): Promise<ImageRecord[]> {
    return this.#json({ method: 'GET', path: `rasters/mosaic/${seg(mosaicId)}/image`, kind: 'idempotent' }, normaliseImages);
  }

  async deleteMosaic(id: string): Promise<void> {
    await this.#transport.send({ method: 'DELETE', path: `rasters/mosaic/${seg(id)}`, kind: 'idempotent' }, discard);
  }

  async getImage(id: string): Promise<ImageRecord> {
    return this.#json({ method: 'GET', path: `rasters/image/${seg(id)}`, kind: 'idempotent' }, normaliseImage);
  }

  async renameImage(id: string, name: string): Promise<void> {
    await this.#transport.send({ method: 'PUT', path: `rasters/image/${seg(id)}`, query: { name }, kind: 'idempotent' }, discard);
  }

  async deleteImage(id: string): Promise<void> {
    await this.#transport.send({ method: 'DELETE', path: `rasters/image/${seg(id)}`, kind: 'idempotent' }, discard);
  }

  /** JPEG preview: `s` 256x256, `l` 1024x1024 (small enough to hold in memory). */
  async getImagePreview(id: string, size: 's' | 'l'): Promise<Buffer> {
    return this.#transport.send(
      { method: 'GET', path: `rasters/image/${seg(id)}/preview/${seg(size)}`, kind: 'idempotent', accept: 'image/jpeg, image/*' },
      readBuffer,
    );
  }

  /** Storage usage normalised over both shapes, in bytes. */
  async getStorageUsage(): Promise<StorageUsage> {
    return this.#json({ method: 'GET', path: 'rasters/memory', kind: 'idempotent' }, normaliseStorageUsage);
  }

  // -------------------------------------------------------------------------
  // Catalog

  /** Catalog search (bare array or `{images, total, limit, offset}` answers). Changes nothing: retried like a GET. */
  async searchCatalog(body: CatalogSearch): Promise<CatalogResult> {
    return this.#json({ method: 'POST', path: 'catalog/meta', json: body, kind: 'idempotent' }, normaliseCatalog);
  }

  // -------------------------------------------------------------------------

  /**
   * The newer form of a call, or the older one when the server has no route
   * for the newer path (405, or a 404 without an error code: it predates it).
   * A 404 NOT_FOUND is the server saying the project or processing does not
   * exist: it is thrown, and changes nothing for other calls. Remembered per
   * call and per client, in memory only.
   */
  async #fallback<T>(key: string, newer: () => Promise<T>, older: () => Promise<T>): Promise<T> {
    if (this.#legacy.has(key)) return older();
    try {
      return await newer();
    } catch (error) {
      if (!isRouteNotFound(error)) throw error;
      this.#legacy.add(key);
      return older();
    }
  }

  /** Every item of a paged list (`{limit, offset}` -> `{results, total, count}`), page after page. */
  async #allPages<T extends { id: string }>(path: string, item: (entry: unknown) => T, what: string): Promise<T[]> {
    const all: T[] = [];
    const seen = new Set<string>();
    for (let page = 0, offset = 0; page < MAX_PAGES; page++) {
      const { results, total } = await this.#json(
        { method: 'POST', path, json: { limit: PAGE_LIMIT, offset }, kind: 'idempotent' },
        (value) => normalisePage(value, item, what),
      );
      const fresh = results.filter((r) => !seen.has(r.id));
      for (const r of fresh) seen.add(r.id);
      all.push(...fresh);
      offset += results.length;
      // Done: an empty or short page, everything the total announced, or a page with nothing new (offset ignored).
      if (results.length === 0 || fresh.length === 0) break;
      if (total !== undefined ? all.length >= total : results.length < PAGE_LIMIT) break;
    }
    return all;
  }

  /** Caller's meta over the client identity: caller keys win. */
  #meta(meta: Record<string, string> | undefined): Record<string, string> {
    return { 'source-app': this.#clientName, version: this.#clientVersion, ...(meta ?? {}) };
  }

  async #json<T>(spec: RequestSpec, normalise: (value: unknown) => T): Promise<T> {
    const text = await this.#transport.send(spec, readText);
    return this.#shape(spec, () => normalise(parseJsonText(text)));
  }

  async #cost(spec: RequestSpec): Promise<number> {
    const text = await this.#transport.send(spec, readText);
    return this.#shape(spec, () => parseCost(text));
  }

  /** Runs a normaliser; a shape problem becomes MapflowBadResponse naming the call. */
  #shape<T>(spec: RequestSpec, fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (!(error instanceof ShapeError)) throw error;
      throw new MapflowBadResponse(`Mapflow ${spec.method} /${spec.path} answered in an unexpected shape: ${error.message}`, {
        method: spec.method,
        path: `/${spec.path}`,
        cause: error,
      });
    }
  }
}
