/** Job events: EventBridge, or a JSON-lines file in local mode. */
export * from './publisher.ts';
export * from './types.ts';
