/**
 * The Mapflow simulator: an HTTP server on 127.0.0.1 that serves every
 * endpoint of the Mapflow API spec (docs/simulator.md) for one account, so the
 * bridge and its tests run without the live service.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_LIMITS, type Limits } from './catalogue.ts';
import type { SimContext } from './context.ts';
import { FaultInjector } from './faults.ts';
import { BASE_PATH, createSimServer, type Counters } from './server.ts';
import type { ImageLookup } from './sources.ts';
import { StateStore, type SimState } from './store.ts';
import { createDecoder, type DecoderStats } from './decoder.ts';

export interface SimulatorOptions {
  host?: string;
  port?: number;
  token: string;
  email: string;
  processingSeconds?: number;
  faultRate?: number;
  dropAfterCommit?: number;
  seed?: number;
  latencyMs?: number;
  realShapes?: boolean;
  /** Percent rises unevenly (stalls, bursts; packages/simulator/src/progress.ts, seeded per processing) instead of evenly. Default false. */
  unevenProgress?: boolean;
  dataDir?: string;
  /** Storage limit null: no limit (answered as `memoryLimit: null`). */
  limits?: { aoiAreaLimitSqM?: number; areaLimitSqM?: number; credits?: number; storageLimitBytes?: number | null; maxUploadFileSize?: number; maxPixelCount?: number };
  /** Seconds before the first byte of a result download (the live service may take minutes). Default 0. */
  resultDelaySeconds?: number;
  /** realShapes: the account's billing counter; NONE: neither is counted (mapflow-qgis schema/billing.py). Default CREDITS. */
  billingType?: 'AREA' | 'CREDITS' | 'NONE';
  /** realShapes: seconds an uploaded image takes to preprocess. Default 2. */
  preprocessingSeconds?: number;
  /** realShapes: seconds a new processing stays null/UNPROCESSED. Default 1. */
  queuedSeconds?: number;
  /** realShapes: seconds a processing then stays AWAITING. Default 2. */
  awaitingSeconds?: number;
  /** realShapes: most polygons per processing (the server's default is 10). */
  maxAoisPerProcessing?: number;
  /** realShapes: `searchAreaLimit` of /user/status, m²; 0: none. Default 1e9 (1,000 km²). */
  searchAreaLimitSqM?: number;
  /** realShapes: the account is suspended (a team policy): processings are refused with 403 FORBIDDEN. */
  suspended?: boolean;
  /**
   * realShapes: ids of images that exist in another account. Their status endpoint answers 404, as for a
   * missing image (mapflow-qgis spec/002_E_zoom_selector_api.md lines 117-118); the image itself 403
   * `AccessDenied` (mapflow-qgis mapflow/errors/data_errors.py; the status 403 is the simulator's reading).
   */
  foreignImageIds?: string[];
  /**
   * realShapes: a project another account owns and shares with this one, whose `user` (the owner) carries the
   * owner's `aoiAreaLimit`, the limit of processings in it (mapflow-qgis functional/service/project_service.py lines 50-56).
   */
  sharedProject?: { name: string; ownerEmail: string; aoiAreaLimitSqM: number };
  /**
   * realShapes: least processing area (km²) of catalog providers, by lower-case name: in /user/status
   * `searchDataProviders[].minAreaSqkm` and each search result's `minAreaSqkm` (mapflow-qgis mapflow/mapflow.py
   * lines 3069-3114, schema/catalog.py line 82); a processing on a smaller area is refused ProviderMinAreaError. Default none.
   */
  catalogMinAreasSqKm?: Record<string, number>;
  /**
   * realShapes: seconds a processing on a catalog Scene stays AWAITING before it runs: a scene is "available for
   * ordering by request" (mapflow-docs-en source/api/api_reference.rst lines 1251-1252), which can take days.
   * Default: awaitingSeconds, as any other source.
   */
  orderAwaitingSeconds?: number;
  /**
   * Where uploads and AOIs are decoded: 'process' (default), a child process of its own with a heap
   * limit, so an embedding process (the local bridge) neither holds a decode's memory nor waits on it;
   * 'inline' in this process (the simulator's Lambda).
   */
  decoder?: 'process' | 'inline';
}

export interface RunningSimulator {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  /** What the decoder did: tasks, the pids that ran them (decoder.ts). */
  decoderStats(): DecoderStats;
  stats(): { requests: number; faults: number; droppedResponses: number; processingsCreated: number };
}

/** Options that cannot work fail here, before anything starts. */
export class SimulatorOptionsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SimulatorOptionsError';
  }
}

function checkFraction(name: string, value: number | undefined): number {
  const v = value ?? 0;
  if (!Number.isFinite(v) || v < 0 || v > 1) throw new SimulatorOptionsError(`${name} must be a number from 0 to 1`);
  return v;
}

function checkOptions(options: SimulatorOptions): void {
  if (!options.token) throw new SimulatorOptionsError('token is required');
  if (!options.email || !options.email.includes('@')) throw new SimulatorOptionsError('email must be an e-mail address');
  const seconds = options.processingSeconds ?? 20;
  if (!Number.isFinite(seconds) || seconds < 0) throw new SimulatorOptionsError('processingSeconds must be a number of seconds, 0 or more');
  const latency = options.latencyMs ?? 0;
  if (!Number.isFinite(latency) || latency < 0) throw new SimulatorOptionsError('latencyMs must be 0 or more');
  if (options.port !== undefined && (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535)) {
    throw new SimulatorOptionsError('port must be an integer from 0 to 65535');
  }
  for (const [name, value] of Object.entries(options.limits ?? {})) {
    if (name === 'storageLimitBytes' && value === null) continue;
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < 0)) throw new SimulatorOptionsError(`limits.${name} must be 0 or more`);
  }
  for (const name of ['resultDelaySeconds', 'preprocessingSeconds', 'queuedSeconds', 'awaitingSeconds', 'orderAwaitingSeconds'] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isFinite(value) || value < 0)) throw new SimulatorOptionsError(`${name} must be a number of seconds, 0 or more`);
  }
  if (options.billingType !== undefined && !['AREA', 'CREDITS', 'NONE'].includes(options.billingType)) {
    throw new SimulatorOptionsError('billingType must be AREA, CREDITS or NONE');
  }
  if (options.maxAoisPerProcessing !== undefined && (!Number.isInteger(options.maxAoisPerProcessing) || options.maxAoisPerProcessing < 1)) {
    throw new SimulatorOptionsError('maxAoisPerProcessing must be a whole number, 1 or more');
  }
}

function initialState(now: string): SimState {
  return {
    version: 1,
    userId: randomUUID(),
    processedAreaSqM: 0,
    creditsUsed: 0,
    projects: [{ id: randomUUID(), name: 'Default', description: 'Default project', isDefault: true, created: now, updated: now }],
    processings: [],
    mosaics: [],
    images: [],
  };
}

export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  checkOptions(options);
  const host = options.host ?? '127.0.0.1';
  const seed = options.seed ?? 1;
  const temporaryDir = options.dataDir ? undefined : mkdtempSync(join(tmpdir(), 'mapflow-sim-'));
  const dataDir = options.dataDir ?? temporaryDir!;
  const store = StateStore.open(dataDir, () => initialState(new Date().toISOString()));
  const shared = options.sharedProject;
  if (shared && !store.state.projects.some((p) => p.owner && p.name === shared.name)) {
    const now = new Date().toISOString();
    store.state.projects.push({ id: randomUUID(), name: shared.name, description: null, isDefault: false, created: now, updated: now, owner: { email: shared.ownerEmail, aoiAreaLimitSqM: shared.aoiAreaLimitSqM } });
  }
  const limits: Limits = { ...DEFAULT_LIMITS, ...Object.fromEntries(Object.entries(options.limits ?? {}).filter(([, v]) => v !== undefined)) };

  let baseUrl = '';
  const images: ImageLookup = {
    image: (id) => store.state.images.find((i) => i.id === id),
    imageByUrl: (url) => store.state.images.find((i) => i.image_url === url || i.cog_link === url),
    imagesOfMosaic: (mosaicId) => store.state.images.filter((i) => i.mosaicId === mosaicId),
    mosaicExists: (mosaicId) => store.state.mosaics.some((m) => m.id === mosaicId),
  };
  const ctx: SimContext = {
    store,
    account: { email: options.email, token: options.token },
    limits,
    seed,
    realShapes: options.realShapes ?? false,
    unevenProgress: options.unevenProgress ?? false,
    processingMs: (options.processingSeconds ?? 20) * 1000,
    resultDelayMs: (options.resultDelaySeconds ?? 0) * 1000,
    live: {
      billingType: options.billingType ?? 'CREDITS',
      preprocessingMs: (options.preprocessingSeconds ?? 2) * 1000,
      queuedMs: (options.queuedSeconds ?? 1) * 1000,
      awaitingMs: (options.awaitingSeconds ?? 2) * 1000,
      orderAwaitingMs: (options.orderAwaitingSeconds ?? options.awaitingSeconds ?? 2) * 1000,
      maxAoisPerProcessing: options.maxAoisPerProcessing ?? 10,
      searchAreaLimitSqM: options.searchAreaLimitSqM ?? 1e9,
      suspended: options.suspended ?? false,
      foreignImageIds: new Set(options.foreignImageIds ?? []),
      catalogMinAreasSqKm: Object.fromEntries(Object.entries(options.catalogMinAreasSqKm ?? {}).map(([name, min]) => [name.toLowerCase(), min])),
    },
    baseUrl: () => baseUrl,
    now: () => Date.now(),
    images,
    decoder: createDecoder(options.decoder ?? 'process'),
  };
  const counters: Counters = { requests: 0, faults: 0, droppedResponses: 0, processingsCreated: 0 };
  const faults = new FaultInjector(seed, checkFraction('faultRate', options.faultRate), checkFraction('dropAfterCommit', options.dropAfterCommit));
  const server = createSimServer(ctx, faults, options.latencyMs ?? 0, counters);
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}${BASE_PATH}`;

  let closing: Promise<void> | undefined;
  return {
    url: baseUrl,
    port,
    stats: () => ({ ...counters }),
    decoderStats: () => ctx.decoder.stats(),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        void ctx.decoder.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(() => {
        if (temporaryDir) rmSync(temporaryDir, { recursive: true, force: true });
      });
      return closing;
    },
  };
}
