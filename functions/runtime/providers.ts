/**
 * The clients a handler may use beyond DynamoDB, registered by the provider
 * modules it imports (`./with-s3.ts`, `./with-mapflow.ts`, `./with-sfn.ts`),
 * and the smallest context: configuration, logger, S3 and Step Functions,
 * without the ledger, the slots or the event publisher. The dispatch function
 * needs no more (it heads objects and starts executions), so it does not
 * bundle the DynamoDB and EventBridge clients. Everything else builds on
 * `./lean-context.ts`, which adds those.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SFNClient } from '@aws-sdk/client-sfn';
import { ConfigurationError } from '../core/errors.ts';
import type { WakeWaiter } from '../ledger/slots.ts';
import type { MapflowClient } from '../mapflow/index.ts';
import { CONFIG_VARIABLES, loadConfig, type BridgeConfig } from './config.ts';
import { createLogger } from './logger.ts';

/** Creates the Mapflow client of a configuration (functions/runtime/mapflow.ts mapflowClient). */
export type MapflowFactory = (config: BridgeConfig, options: { env?: NodeJS.ProcessEnv; refresh?: boolean }) => Promise<MapflowClient>;

export const providers: {
  s3?: (config: BridgeConfig) => S3Client;
  mapflow?: MapflowFactory;
  sfn?: { client: (config: BridgeConfig) => SFNClient; waker: (client: () => SFNClient) => WakeWaiter };
} = {};

/** Called by ./with-sfn.ts: this process may call Step Functions (StartExecution, SendTaskSuccess). */
export function provideStepFunctions(client: (config: BridgeConfig) => SFNClient, waker: (client: () => SFNClient) => WakeWaiter): void {
  providers.sfn = { client, waker };
}

/** Called by ./with-s3.ts: this process may create S3 clients. */
export function provideS3Client(factory: (config: BridgeConfig) => S3Client): void {
  providers.s3 = factory;
}

/** Called by ./with-mapflow.ts: this process may create Mapflow clients. */
export function provideMapflowClient(factory: MapflowFactory): void {
  providers.mapflow = factory;
}

export function missing(what: string, module: string): never {
  throw new ConfigurationError(`This function has no ${what} client: its handler must import functions/runtime/${module}.`);
}

/** Configuration, logger, and the S3 and Step Functions clients (created on first use). */
export interface ServiceContext {
  config: BridgeConfig;
  s3: S3Client;
  sfn(): SFNClient;
  logger: Logger;
}

export function createServiceContext(config: BridgeConfig, logger: Logger = createLogger()): ServiceContext {
  let s3: S3Client | undefined;
  let sfn: SFNClient | undefined;
  return {
    config,
    get s3(): S3Client {
      return (s3 ??= providers.s3 ? providers.s3(config) : missing('S3', 'with-s3.ts'));
    },
    sfn: () => (sfn ??= providers.sfn ? providers.sfn.client(config) : missing('Step Functions', 'with-sfn.ts')),
    logger,
  };
}

const serviceContexts = new Map<string, ServiceContext>();

/** The service context for an environment, cached per set of configuration values (a warm Lambda builds it once). */
export function serviceContext(env: NodeJS.ProcessEnv = process.env): ServiceContext {
  const key = environmentKey(env);
  let context = serviceContexts.get(key);
  if (!context) {
    context = createServiceContext(loadConfig(env));
    serviceContexts.set(key, context);
  }
  return context;
}

/** A digest of the variables that shape a context; the token is hashed, never kept in clear. */
export function environmentKey(env: NodeJS.ProcessEnv): string {
  const hash = createHash('sha256');
  for (const name of [...CONFIG_VARIABLES, 'MAPFLOW_TOKEN', 'MAPFLOW_EMAIL']) hash.update(`${name}=${env[name] ?? ''}\n`);
  return hash.digest('hex');
}
