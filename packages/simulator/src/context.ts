/**
 * What every handler works with: the state store, the account and its limits,
 * the options that shape answers, and the route/reply types of the router.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { Account } from './auth.ts';
import type { Limits } from './catalogue.ts';
import type { Decoder } from './decoder.ts';
import type { ErrorFamily } from './http.ts';
import type { ImageLookup } from './sources.ts';
import type { StateStore } from './store.ts';

export interface SimContext {
  readonly store: StateStore;
  readonly account: Account;
  readonly limits: Limits;
  readonly seed: number;
  readonly realShapes: boolean;
  /** Percent rises unevenly (progress.ts) rather than evenly. */
  readonly unevenProgress: boolean;
  readonly processingMs: number;
  /** Delay before the first byte of a result download (both modes). */
  readonly resultDelayMs: number;
  /** What the live service does beyond the spec (set by --real-shapes and its options). */
  readonly live: LiveBehaviour;
  /** Base URL of the API, e.g. http://127.0.0.1:PORT/rest. */
  baseUrl(): string;
  now(): number;
  images: ImageLookup;
  /** Where uploads and AOIs are decoded: a process of its own by default (decoder.ts). */
  readonly decoder: Decoder;
}

/**
 * The live service's behaviours the simulator reproduces in `realShapes`
 * mode (docs/simulator.md, docs/integration-notes.md). Durations in ms.
 */
export interface LiveBehaviour {
  /** AREA or CREDITS: which counter bills the account; the other is reported as 0 and not enforced. NONE: neither. */
  billingType: 'AREA' | 'CREDITS' | 'NONE';
  /** An uploaded image is PENDING, then IN_PROGRESS, for this long before it is COMPLETED. */
  preprocessingMs: number;
  /** A new processing reports status null, then UNPROCESSED, for this long. */
  queuedMs: number;
  /** Then AWAITING (waiting for its imagery provider) for this long. */
  awaitingMs: number;
  /** AWAITING this long instead for a processing on a catalog Scene, which is ordered by request. */
  orderAwaitingMs: number;
  /** Most polygons in one processing (server default 10). */
  maxAoisPerProcessing: number;
  /** `searchAreaLimit` of /user/status (m², 0: none): the largest AOI of an immediate catalog search. */
  searchAreaLimitSqM: number;
  /** The account is suspended: the server's `canRunProcessing` answers 403 FORBIDDEN. */
  suspended: boolean;
  /** Images of another account (ids): the status endpoint answers 404, the image endpoints 403 AccessDenied. */
  foreignImageIds: ReadonlySet<string>;
  /** Least processing area (km²) of catalog providers, by lower-case name (searchDataProviders, search results' minAreaSqkm). */
  catalogMinAreasSqKm: Readonly<Record<string, number>>;
}

/** What a handler answers; the router writes it (or drops it, see dropAfterCommit). */
export type Reply =
  | { kind: 'json'; status?: number; body: unknown }
  | { kind: 'text'; status?: number; body: string }
  | { kind: 'empty'; status?: number }
  | { kind: 'binary'; contentType: string; body: Buffer }
  | { kind: 'stream'; contentType: string; body: Readable };

export const json = (body: unknown, status = 200): Reply => ({ kind: 'json', status, body });
export const empty = (): Reply => ({ kind: 'empty' });

export interface RouteRequest {
  req: IncomingMessage;
  url: URL;
  /** Path parameters in pattern order. */
  params: string[];
}

export interface Route {
  method: string;
  pattern: RegExp;
  family: ErrorFamily;
  /** A create whose response dropAfterCommit may lose. */
  create?: boolean;
  /** Counted in stats().processingsCreated. */
  createsProcessing?: boolean;
  /** Only in realShapes mode (the live service's endpoints beyond the reference). */
  live?: boolean;
  handle(ctx: SimContext, request: RouteRequest): Promise<Reply>;
}

export const isoTime = (ms: number) => new Date(ms).toISOString();
