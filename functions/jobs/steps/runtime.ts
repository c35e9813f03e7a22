/**
 * The StepContext of a Lambda invocation, built once per process from the
 * environment (functions/runtime) and reused across warm invocations.
 */
import { loadConfig } from '../../runtime/config.ts';
import { documentClient, s3Client } from '../../runtime/aws.ts';
import { mapflowClient } from '../../runtime/mapflow.ts';
import { createLogger } from '../../runtime/logger.ts';
import { createPublisher } from '../../events/publisher.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { ConcurrencySlots } from '../../ledger/slots.ts';
import { makeStepContext, type StepContext, type StepLogger } from './context.ts';

let cached: StepContext | undefined;

export function defaultStepContext(): StepContext {
  if (cached) return cached;
  const config = loadConfig();
  const doc = documentClient(config);
  const logger = createLogger();
  const stepLogger: StepLogger = {
    info: (message, extra) => logger.info(message, extra ?? {}),
    warn: (message, extra) => logger.warn(message, extra ?? {}),
    error: (message, extra) => logger.error(message, extra ?? {}),
  };
  cached = makeStepContext({
    config,
    s3: s3Client(config),
    ledger: new Ledger(doc, config.ledgerTable),
    slots: new ConcurrencySlots(doc, config.ledgerTable, config.maxConcurrentProcessings),
    events: createPublisher(config),
    doc,
    mapflow: () => mapflowClient(config),
    logger: stepLogger,
  });
  return cached;
}

/** Forgets the cached context (tests that change the environment). */
export function resetStepContext(): void {
  cached = undefined;
}
