/**
 * Which publisher a configuration gets: wiring, so it lives in the runtime
 * (functions/events knows how to publish, not where the configuration comes from).
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { EventBridgePublisher, FileEventPublisher, type EventPublisher } from '../events/publisher.ts';
import { eventBridgeClient } from './aws.ts';
import type { BridgeConfig } from './config.ts';

/**
 * The publisher for a configuration: the events file when BRIDGE_EVENTS_FILE
 * is set, EventBridge otherwise (the runtime's cached client unless one is given).
 */
export function createPublisher(config: BridgeConfig, eventBridge?: EventBridgeClient): EventPublisher {
  if (config.local.eventsFile) return new FileEventPublisher(config.local.eventsFile, config.eventSource);
  return new EventBridgePublisher(eventBridge ?? eventBridgeClient(config), config.eventSource, config.eventBusName);
}
