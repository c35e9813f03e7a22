/**
 * The package's main entry (`import { MapflowBridge } from 'mapflow-bridge'`):
 * the construct, its props and the ready-to-deploy stack. The event types and
 * schemas are at `mapflow-bridge/events`, the Mapflow client at
 * `mapflow-bridge/client`.
 *
 * Every type a public signature names is exported here, so users can name it
 * (api/mapflow-bridge.api.md is the report; `npm run api:check` fails on a forgotten export).
 */
export { MapflowBridge, type MapflowBridgeProps } from './mapflow-bridge.ts';
export { MapflowBridgeStack, type MapflowBridgeStackProps } from './mapflow-bridge-stack.ts';
export type { ExistingResources } from './app-context.ts';
export { BridgeAlarms, type BridgeAlarmsOptions, type BridgeAlarmsProps } from './alarms.ts';
export { BridgeDashboard, type BridgeDashboardProps } from './dashboard.ts';
export type { IBridgeMetrics, InputKind, JobKind } from './metrics.ts';
export { BridgeEventSchemas, type BridgeEventSchemasProps } from './event-schemas.ts';
export { EVENT_DETAIL_TYPES, type EventDetailType } from '../functions/core/model.ts';
export { MapflowBridgeConfigError } from './errors.ts';
export type { AuthScheme, BridgeSettings, BridgeSettingsInput, PollPolicy, Prefixes } from './settings.ts';
export { AUTH_SCHEMES } from '../functions/mapflow/auth.ts';
export type { BridgeFunctionName, HandlerName, ServiceHandlerName } from '../functions/core/catalog.ts';
export type { Route, Routes, RouteSource } from '../functions/routing/index.ts';
