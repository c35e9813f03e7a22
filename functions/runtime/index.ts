/** The runtime the Lambdas share: configuration, AWS clients, secrets, logging, the handler context. */
export * from './config.ts';
export * from './aws.ts';
export * from './logger.ts';
export * from './mapflow.ts';
export * from './context.ts';
