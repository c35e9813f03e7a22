/**
 * The StepContext of a Lambda invocation: the runtime's BridgeContext
 * (configuration from the environment, AWS clients, ledger, slots, events,
 * Mapflow client), built once per configuration and reused across warm
 * invocations.
 */
import { tokenRotatingClient } from '../runtime/rotating-client.ts';
// The lean context: a handler imports functions/runtime/with-s3.ts / with-mapflow.ts for what it calls.
import { bridgeContext, type BridgeContext } from '../runtime/lean-context.ts';
import { makeStepContext, type StepContext, type StepLogger } from './context.ts';

const contexts = new WeakMap<BridgeContext, StepContext>();

export function defaultStepContext(env: NodeJS.ProcessEnv = process.env): StepContext {
  const bridge = bridgeContext(env);
  let context = contexts.get(bridge);
  if (!context) {
    context = stepContextFrom(bridge);
    contexts.set(bridge, context);
  }
  return context;
}

export function stepContextFrom(bridge: BridgeContext): StepContext {
  const { logger } = bridge;
  const stepLogger: StepLogger = {
    info: (message, extra) => logger.info(message, extra ?? {}),
    warn: (message, extra) => logger.warn(message, extra ?? {}),
    error: (message, extra) => logger.error(message, extra ?? {}),
  };
  return makeStepContext({
    config: bridge.config,
    // Read on first use: handlers without S3 never create (or bundle) the client.
    get s3() {
      return bridge.s3;
    },
    ledger: bridge.ledger,
    slots: bridge.slots,
    events: bridge.events,
    doc: bridge.doc,
    // A rotated token is picked up on the first 401 instead of failing the job.
    mapflow: async () => tokenRotatingClient(await bridge.mapflow(), (options) => bridge.mapflow(options)),
    logger: stepLogger,
  });
}
