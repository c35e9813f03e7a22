/**
 * What the steps need from the outside world, in one object, so that the
 * handlers stay one line and tests can hand the steps real local services
 * (the Mapflow simulator, DynamoDB Local, s3rver) without environment tricks.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { EventPublisher } from '../events/publisher.ts';
import type { ConcurrencySlots } from '../ledger/slots.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { MapflowClient } from '../mapflow/index.ts';
import type { Routes, KeyPrefixes } from '../routing/index.ts';
import type { PollPolicy } from '../polling/poll-policy.ts';
import { NameRegistry } from './name-registry.ts';

export interface StepLogger {
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

export interface StepConfig {
  routes: Routes;
  prefixes: KeyPrefixes;
  pollPolicy: PollPolicy;
  maxConcurrentProcessings: number;
}

export interface StepContext {
  config: StepConfig;
  s3: S3Client;
  ledger: Ledger;
  slots: ConcurrencySlots;
  events: EventPublisher;
  /** Mosaic ids by name (the API cannot list mosaics). */
  mosaics: NameRegistry;
  /** Project ids by name, so parallel jobs create a named project once. */
  projects: NameRegistry;
  mapflow(): Promise<MapflowClient>;
  logger: StepLogger;
  /** Clock and randomness, injected so tests can pin them. */
  now(): Date;
  random(): number;
}

/** The parts a StepContext is built from (what functions/runtime's bridgeContext provides). */
export interface StepContextSources {
  config: StepConfig & { ledgerTable: string };
  s3: S3Client;
  ledger: Ledger;
  slots: ConcurrencySlots;
  events: EventPublisher;
  doc: DynamoDBDocumentClient;
  mapflow(): Promise<MapflowClient>;
  logger?: StepLogger;
}

export function makeStepContext(sources: StepContextSources): StepContext {
  return {
    config: sources.config,
    // A getter: the S3 client is created on first use (lean handlers have none).
    get s3() {
      return sources.s3;
    },
    ledger: sources.ledger,
    slots: sources.slots,
    events: sources.events,
    mosaics: new NameRegistry(sources.doc, sources.config.ledgerTable, 'mosaic'),
    projects: new NameRegistry(sources.doc, sources.config.ledgerTable, 'project'),
    mapflow: sources.mapflow,
    logger: sources.logger ?? consoleLogger,
    now: () => new Date(),
    random: Math.random,
  };
}

/** JSON lines on stdout/stderr (what CloudWatch and the local engine read). */
export const consoleLogger: StepLogger = {
  info: (message, extra) => console.log(JSON.stringify({ level: 'INFO', message, ...extra })),
  warn: (message, extra) => console.warn(JSON.stringify({ level: 'WARN', message, ...extra })),
  error: (message, extra) => console.error(JSON.stringify({ level: 'ERROR', message, ...extra })),
};
