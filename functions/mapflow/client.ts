/**
 * Typed client of the whole Mapflow API (processing, data and catalog
 * interfaces), shared by every Lambda.
 *
 * One method per endpoint of the spec. Answers are read tolerantly (see
 * normalise.ts); failures are typed (see errors.ts); retries and timeouts
 * follow the rule in http/transport.ts.
 */
import type { Dispatcher } from 'undici';
import type { Readable } from 'node:stream';
import { resolveAuth, type AuthScheme } from './auth.ts';
import { MapflowBadResponse, Redactor } from './errors.ts';
import { Transport, type MapflowLogger, type RequestSpec, type ResponseData } from './http/transport.ts';
import { resolveRetry, type RetryOptions } from './http/retry.ts';
import { multipartFileBody } from './multipart.ts';
import {
  ShapeError,
  normaliseAois,
  normaliseCatalog,
  normaliseImage,
  normaliseImages,
  normaliseLinkResult,
  normaliseMosaic,
  normaliseProcessing,
  normaliseProcessingList,
  normaliseProject,
  normaliseProjects,
  normaliseStats,
  normaliseStorageUsage,
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
  Mosaic,
  Processing,
  ProcessingAoi,
  ProcessingStats,
  ProcessingStatsQuery,
  Project,
  StorageUsage,
  UploadSource,
  UserStatus,
} from './types.ts';

export const DEFAULT_BASE_URL = 'https://api.mapflow.ai/rest';
export const DEFAULT_CLIENT_NAME = 'mapflow-bridge';
export const DEFAULT_CLIENT_VERSION = '0.1.0';

export interface MapflowClientOptions {
  /** e.g. https://api.mapflow.ai/rest or the simulator's url. */
  baseUrl: string;
  token: string;
  email?: string;
  /** auto (default): Basic when the token already decodes to "x:y" or an email is given, else Bearer. */
  authScheme?: AuthScheme;
  /** Per request, until the answer is read. Default 30 000. */
  timeoutMs?: number;
  /**
   * Uploads: longest time without progress, including the wait for the answer
   * once the file is sent (the service checks the file first). Default 300 000.
   */
  uploadTimeoutMs?: number;
  retry?: RetryOptions;
  /** For tests (MockAgent) and keep-alive pools. */
  dispatcher?: Dispatcher;
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
  readonly #uploadTimeoutMs: number;

  constructor(options: MapflowClientOptions) {
    const auth = resolveAuth(options);
    this.#clientName = options.clientName ?? DEFAULT_CLIENT_NAME;
    this.#clientVersion = options.clientVersion ?? DEFAULT_CLIENT_VERSION;
    this.#uploadTimeoutMs = options.uploadTimeoutMs ?? 300_000;
    this.#transport = new Transport({
      baseUrl: options.baseUrl || DEFAULT_BASE_URL,
      authorization: auth.header,
      identityHeaders: {
        'x-client-name': this.#clientName,
        'x-client-version': this.#clientVersion,
        'user-agent': `${this.#clientName}/${this.#clientVersion}`,
      },
      redactor: new Redactor(auth.secrets),
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: resolveRetry(options.retry),
      dispatcher: options.dispatcher,
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

  // -------------------------------------------------------------------------
  // Projects

  async createProject(body: { name: string; description?: string }): Promise<Project> {
    return this.#json({ method: 'POST', path: 'projects', json: body, kind: 'create' }, normaliseProject);
  }

  async listProjects(): Promise<Project[]> {
    return this.#json({ method: 'GET', path: 'projects', kind: 'idempotent' }, normaliseProjects);
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

  async getProcessing(id: string): Promise<Processing> {
    return this.#json({ method: 'GET', path: `processings/${seg(id)}/v2`, kind: 'idempotent' }, normaliseProcessing);
  }

  async listProcessings(): Promise<Processing[]> {
    return this.#json({ method: 'GET', path: 'processings/v2', kind: 'idempotent' }, normaliseProcessingList);
  }

  async listProjectProcessings(projectId: string): Promise<Processing[]> {
    return this.#json(
      { method: 'GET', path: `projects/${seg(projectId)}/processings/v2`, kind: 'idempotent' },
      normaliseProcessingList,
    );
  }

  /** Credits the processing would cost. Changes nothing, so it is retried like a GET. */
  async estimateCost(body: CostRequestV2): Promise<number> {
    return this.#cost({ method: 'POST', path: 'processing/cost/v2', json: body, kind: 'idempotent', accept: 'application/json, text/plain' });
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

  /** PUT /processings/{id}: name, description, projectId (moves it). */
  async updateProcessing(id: string, body: { name?: string; description?: string; projectId?: string }): Promise<void> {
    await this.#transport.send({ method: 'PUT', path: `processings/${seg(id)}`, json: body, kind: 'idempotent' }, discard);
  }

  async moveProcessing(id: string, projectId: string): Promise<void> {
    await this.updateProcessing(id, { projectId });
  }

  /**
   * Restarts the failed partitions. Retried like a GET: a second restart of a
   * processing with no failed partitions restarts nothing.
   */
  async restartProcessing(id: string): Promise<void> {
    await this.#transport.send({ method: 'POST', path: `processings/${seg(id)}/restart`, kind: 'idempotent' }, discard);
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

  /** Streams the file as multipart part `file`; memory use does not grow with the file. */
  async uploadImage(mosaicId: string, file: UploadSource): Promise<ImageRecord> {
    return this.#json(
      {
        method: 'POST',
        path: `rasters/mosaic/${seg(mosaicId)}/image`,
        stream: multipartFileBody(file),
        kind: 'create',
        timeoutMs: this.#uploadTimeoutMs,
      },
      normaliseImage,
    );
  }

  /** Creates a mosaic and uploads the image into it in one request. */
  async createMosaicWithImage(query: { name: string; tags?: string[] }, file: UploadSource): Promise<ImageRecord> {
    return this.#json(
      {
        method: 'POST',
        path: 'rasters/mosaic/image',
        query: { name: query.name, tags: query.tags },
        stream: multipartFileBody(file),
        kind: 'create',
        timeoutMs: this.#uploadTimeoutMs,
      },
      normaliseImage,
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
