/**
 * The package's main entry (`import { MapflowBridge } from 'mapflow-bridge'`):
 * the construct, its props and the ready-to-deploy stack. The event types and
 * schemas are at `mapflow-bridge/events`, the Mapflow client at
 * `mapflow-bridge/client`.
 */
export { MapflowBridge, type MapflowBridgeProps } from './mapflow-bridge.ts';
export { MapflowBridgeStack, type MapflowBridgeStackProps } from './mapflow-bridge-stack.ts';
export { BridgeEventSchemas, type BridgeEventSchemasProps } from './event-schemas.ts';
export { MapflowBridgeConfigError } from './errors.ts';
export type { AuthScheme, BridgeSettings, BridgeSettingsInput, PollPolicy, Prefixes } from './settings.ts';
export type { BridgeFunctionName } from '../functions/core/catalog.ts';
export type { Route } from '../functions/routing/index.ts';
