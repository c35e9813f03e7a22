/**
 * The cloud assembly the local bridge runs: the README's stack
 * (MapflowBridgeStack, env-agnostic, cdk.json's feature flags) synthesized
 * with the local bridge's settings into a `cdk.out`-style folder, with
 * assets staged as `cdk deploy` would upload them.
 *
 * The handler bundles come from `bundlesDir` when given (`<dir>/<name>/index.mjs`,
 * built by scripts/build-handlers.ts with the construct's esbuild options,
 * lib/private/bundling.ts, as the npm package's prebuilt bundles are), so that a
 * synthesis per settings costs the template, not 18 esbuild runs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { App } from 'aws-cdk-lib';
import type { Route } from 'mapflow-bridge/functions/routing/index.ts';
import { HANDLER_BUNDLES_CONTEXT, MapflowBridgeStack, type PollPolicy } from 'mapflow-bridge/internal';

export const LOCAL_STACK_NAME = 'MapflowBridgeLocal';

export interface LocalAssemblySettings {
  pollPolicy?: Partial<PollPolicy>;
  maxConcurrentProcessings?: number;
  routes?: Route[];
}

/** Synthesizes into `outdir`; returns the template file's name in it. */
export function synthLocalAssembly(settings: LocalAssemblySettings, outdir: string, bundlesDir?: string): string {
  const app = new App({
    outdir,
    // CDK's CloudFormation validation of the template (about 6 s of CPU on the first synth of a
    // process) is for `cdk synth` before a deploy; nothing is deployed here.
    builtinCloudFormationValidation: false,
    context: {
      ...cdkJsonContext(),
      // As the CDK CLI synthesizes: each function's metadata names its asset folder.
      'aws:cdk:enable-asset-metadata': true,
      ...(bundlesDir ? { [HANDLER_BUNDLES_CONTEXT]: bundlesDir } : {}),
    },
  });
  new MapflowBridgeStack(app, LOCAL_STACK_NAME, {
    bridge: {
      ...(settings.pollPolicy ? { pollPolicy: settings.pollPolicy } : {}),
      ...(settings.maxConcurrentProcessings !== undefined ? { maxConcurrentProcessings: settings.maxConcurrentProcessings } : {}),
      ...(settings.routes ? { routes: settings.routes } : {}),
      // No CloudWatch dashboard: nothing runs it locally, and it is the largest resource to synthesize.
      dashboard: false,
    },
  });
  app.synth();
  return `${LOCAL_STACK_NAME}.template.json`;
}

/** The feature flags of the project's cdk.json (the README's app runs with them). */
function cdkJsonContext(): Record<string, unknown> {
  try {
    const file = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'cdk.json');
    return (JSON.parse(readFileSync(file, 'utf8')) as { context?: Record<string, unknown> }).context ?? {};
  } catch {
    return {};
  }
}
