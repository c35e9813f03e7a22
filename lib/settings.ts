/**
 * The bridge's runtime settings: the props that shape them
 * (`BridgeSettingsInput`, which MapflowBridgeProps extends) and what the
 * construct makes of them, validated and with the defaults applied
 * (`BridgeSettings`, the construct's `settings`). The functions read them from
 * their environment (docs/architecture.md).
 */
import type { AuthScheme } from '../functions/mapflow/index.ts';
import type { PollPolicy } from '../functions/polling/poll-policy.ts';
import type { Route, Routes } from '../functions/routing/index.ts';

export type { AuthScheme, PollPolicy };

/** The S3 prefixes of the bridge's areas. */
export interface Prefixes {
  /** Where files are dropped. */
  readonly inbox: string;
  /** Where results are written. */
  readonly results: string;
  /** Where failure and rejection reports are written. */
  readonly failed: string;
  /** Intermediate files of running jobs. */
  readonly work: string;
}

/** The props of MapflowBridge that shape the runtime settings (validated at synth). */
export interface BridgeSettingsInput {
  /**
   * Routes: which model and settings apply to a file, by its folder under the inbox
   * (validated here with the runtime's own parser).
   * @default the built-in routes (DEFAULT_ROUTES in functions/routing)
   */
  readonly routes?: Route[];
  /** Prefix where files are dropped (every object under it becomes a job). @default 'inbox/' */
  readonly inboxPrefix?: string;
  /** Prefix where results are written. @default 'results/' */
  readonly resultsPrefix?: string;
  /** Prefix where failure and rejection reports are written. @default 'failed/' */
  readonly failedPrefix?: string;
  /** Prefix of the intermediate files of running jobs. @default 'work/' */
  readonly workPrefix?: string;
  /** Base URL of the Mapflow API. @default 'https://api.mapflow.ai/rest' */
  readonly mapflowBaseUrl?: string;
  /** How the token is sent: HTTP basic with the email, bearer, or auto (try one, then the other). @default 'auto' */
  readonly authScheme?: AuthScheme;
  /** Mapflow processings running at once for this bridge (concurrency slots); also the Map's maxConcurrency. @default 5 */
  readonly maxConcurrentProcessings?: number;
  /**
   * Wait between polls and when to give up. Fields not given keep their default.
   * @default `{ initialSeconds: 15, maxSeconds: 60, factor: 1.5, maxJobSeconds: 86400 }` (the poll count follows from maxJobSeconds; maxPolls, optional, caps it)
   */
  readonly pollPolicy?: Partial<PollPolicy>;
  /** Source of the published events. @default 'mapflow.bridge' */
  readonly eventSource?: string;
  /**
   * Days a finished job's ledger row is kept: the final status write sets
   * `expiresAt` and DynamoDB's TTL deletes the row (typically within a few days
   * after). With a table you bring, the rows get `expiresAt` too: turn on TTL on that attribute yourself.
   * @default undefined: rows are kept forever
   */
  readonly ledgerRetentionDays?: number;
}

/** The runtime settings, validated and with the defaults applied. */
export interface BridgeSettings {
  /** Undefined when the built-in routes apply (ROUTES is then not set). */
  readonly routes?: Routes;
  /** The S3 prefixes. */
  readonly prefixes: Prefixes;
  /** Base URL of the Mapflow API. */
  readonly mapflowBaseUrl: string;
  /** How the token is sent. */
  readonly authScheme: AuthScheme;
  /** Mapflow processings running at once. */
  readonly maxConcurrentProcessings: number;
  /** Wait between polls and when to give up, every field resolved. */
  readonly pollPolicy: PollPolicy;
  /** Source of the published events. */
  readonly eventSource: string;
  /** Days a finished job's ledger row is kept (TTL); undefined: forever. */
  readonly ledgerRetentionDays?: number;
}
