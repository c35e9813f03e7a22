/**
 * Everything a handler needs, built once per configuration and reused by
 * every invocation of a warm Lambda (clients keep their connection pools).
 *
 * Lean by construction: this module references neither the S3 client nor the
 * Mapflow client (undici, the Secrets Manager provider), so a handler that
 * does not call them does not bundle them. A handler that does imports
 * `./with-s3.ts` and/or `./with-mapflow.ts`, which provide them here
 * (functions/runtime/context.ts imports both: the full context of the local
 * bridge, the CLI and tests). Every client is created on first use.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SFNClient } from '@aws-sdk/client-sfn';
import type { EventPublisher } from '../events/publisher.ts';
import { createPublisher } from './events.ts';
import { Ledger } from '../ledger/ledger.ts';
import { ConcurrencySlots } from '../ledger/slots.ts';
import type { MapflowClient } from '../mapflow/index.ts';
import { documentClient } from './document-client.ts';
import { loadConfig, type BridgeConfig } from './config.ts';
import { environmentKey, missing, providers } from './providers.ts';
import { createLogger } from './logger.ts';
import type { SlotWaiter, WakeWaiter } from '../ledger/slots.ts';

// The providers live in ./providers.ts (the dispatch function's smaller context uses them without this module).
export { provideMapflowClient, provideS3Client, provideStepFunctions, type MapflowFactory } from './providers.ts';

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
  const sfn = overrides.sfn ?? (() => (providers.sfn ? providers.sfn.client(config) : missing('Step Functions', 'with-sfn.ts')));
  // Waking a waiter (SendTaskSuccess) needs the Step Functions client: only handlers that release or wait have it.
  const wake: WakeWaiter = (waiter: SlotWaiter) => (providers.sfn ? providers.sfn.waker(sfn)(waiter) : Promise.reject(missing('Step Functions', 'with-sfn.ts')));
  let s3 = overrides.s3;
  return {
    config,
    // Created on first use, from the provider the handler imported.
    get s3(): S3Client {
      return (s3 ??= providers.s3 ? providers.s3(config) : missing('S3', 'with-s3.ts'));
    },
    doc,
    ledger: overrides.ledger ?? new Ledger(doc, config.ledgerTable, undefined, { retentionDays: config.ledgerRetentionDays }),
    slots:
      overrides.slots ??
      new ConcurrencySlots(doc, config.ledgerTable, config.maxConcurrentProcessings, () => new Date(), wake),
    events: overrides.events ?? createPublisher(config),
    mapflow:
      overrides.mapflow ??
      ((options) =>
        providers.mapflow ? providers.mapflow(config, { env, refresh: options?.refresh }) : Promise.reject(missing('Mapflow', 'with-mapflow.ts'))),
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
