/**
 * Everything a handler needs, built once per configuration and reused by
 * every invocation of a warm Lambda (clients keep their connection pools).
 *
 * Construction is cheap and does no I/O: the Mapflow credentials are only read
 * when `mapflow()` is first called, so handlers that never talk to Mapflow
 * (dispatch, reconcile) need no secret.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SFNClient } from '@aws-sdk/client-sfn';
import { createPublisher, type EventPublisher } from '../events/publisher.ts';
import { Ledger } from '../ledger/ledger.ts';
import { ConcurrencySlots } from '../ledger/slots.ts';
import type { MapflowClient } from '../mapflow/index.ts';
import { documentClient, s3Client, sfnClient } from './aws.ts';
import { CONFIG_VARIABLES, loadConfig, type BridgeConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { mapflowClient } from './mapflow.ts';
import { taskTokenWaker } from './task-tokens.ts';

export interface BridgeContext {
  config: BridgeConfig;
  s3: S3Client;
  doc: DynamoDBDocumentClient;
  ledger: Ledger;
  slots: ConcurrencySlots;
  events: EventPublisher;
  /** The Mapflow client with the current token; `refresh` re-reads the secret (after an auth error). */
  mapflow(options?: { refresh?: boolean }): Promise<MapflowClient>;
  /** Step Functions client (dispatch starts executions, the reconciler describes them). */
  sfn(): SFNClient;
  logger: Logger;
}

export interface BridgeContextParts {
  config: BridgeConfig;
  /** Where MAPFLOW_TOKEN / MAPFLOW_EMAIL are read in local mode. */
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** Replace any client or service (tests, the local engine). */
  overrides?: Partial<Omit<BridgeContext, 'config' | 'logger'>>;
}

/** Builds a context from a configuration (the local engine and tests use this directly). */
export function createBridgeContext(parts: BridgeContextParts): BridgeContext {
  const { config, overrides = {} } = parts;
  const env = parts.env ?? process.env;
  const doc = overrides.doc ?? documentClient(config);
  const sfn = overrides.sfn ?? (() => sfnClient(config));
  return {
    config,
    s3: overrides.s3 ?? s3Client(config),
    doc,
    ledger: overrides.ledger ?? new Ledger(doc, config.ledgerTable, undefined, { retentionDays: config.ledgerRetentionDays }),
    slots:
      overrides.slots ??
      new ConcurrencySlots(doc, config.ledgerTable, config.maxConcurrentProcessings, () => new Date(), taskTokenWaker(sfn)),
    events: overrides.events ?? createPublisher(config),
    mapflow: overrides.mapflow ?? ((options) => mapflowClient(config, { env, refresh: options?.refresh })),
    sfn,
    logger: parts.logger ?? createLogger(),
  };
}

const contexts = new Map<string, BridgeContext>();

/**
 * The context for an environment (default: process.env), cached per set of
 * configuration values so a warm Lambda builds it once. Throws
 * ConfigurationError when the environment is invalid.
 */
export function bridgeContext(env: NodeJS.ProcessEnv = process.env): BridgeContext {
  const key = environmentKey(env);
  let context = contexts.get(key);
  if (!context) {
    context = createBridgeContext({ config: loadConfig(env), env });
    contexts.set(key, context);
  }
  return context;
}

/** Forgets cached contexts (tests that change the environment). */
export function resetBridgeContexts(): void {
  contexts.clear();
}

/** A digest of the variables that shape a context; the token is hashed, never kept in clear. */
function environmentKey(env: NodeJS.ProcessEnv): string {
  const hash = createHash('sha256');
  for (const name of [...CONFIG_VARIABLES, 'MAPFLOW_TOKEN', 'MAPFLOW_EMAIL']) hash.update(`${name}=${env[name] ?? ''}\n`);
  return hash.digest('hex');
}
