/**
 * What the repository's own packages (the local runtime, the simulator's
 * construct, the benches) need of the construct beyond its public API: the
 * construct's root folder, the prebuilt-bundles context key, the Lambda
 * defaults and the bundling options. Exported as `mapflow-bridge/internal`
 * (TypeScript source, for tools that run TypeScript); not part of the public
 * API and may change in any release.
 */
export { MapflowBridge } from './mapflow-bridge.ts';
export { MapflowBridgeStack } from './mapflow-bridge-stack.ts';
export { HANDLER_BUNDLES_CONTEXT, PROJECT_ROOT as CONSTRUCT_ROOT } from './private/bridge-function.ts';
export { ESM_REQUIRE_BANNER, LAMBDA_ARCHITECTURE, LAMBDA_RUNTIME, type PollPolicy } from './private/defaults.ts';
export { lambdaEsbuildOptions } from './private/bundling.ts';
