/**
 * How every Lambda handler is bundled, in one place: the construct's
 * NodejsFunction (lib/bridge-function.ts), the package's prebuilt handlers
 * (scripts/build-handlers.ts) and the bundle benchmark (bench/bundles.ts) all
 * take their esbuild options from here, so the bench measures what ships.
 * No aws-cdk-lib import: the bench and the build script load this file alone.
 *
 * The choices, measured with `npx tsx bench/bundles.ts` (docs/architecture.md,
 * "Lean handlers"):
 * - ESM for Node.js 24, minified, `module` before `main` (the SDK's and
 *   Powertools' ES builds tree-shake; their CommonJS builds do not);
 * - no legal comments (licences stay in node_modules and the package);
 * - `@aws-sdk/credential-provider-node` replaced by
 *   functions/runtime/lambda-credentials.ts (the execution role's keys from
 *   the environment): the full chain is about 110 KiB per bundle that a
 *   Lambda never runs;
 * - the AWS SDK bundled by default (a bundled SDK imports faster than the
 *   runtime's, whose files Node resolves one by one, and is the version the
 *   code was tested with). `externalAwsSdk` leaves `@aws-sdk/*` to the
 *   runtime's SDK v3 instead: smaller bundles, a version you do not choose.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * ESM bundles need `require` for the few CommonJS dependencies that call it
 * (esbuild leaves dynamic requires in place).
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __bridgeCreateRequire } from 'node:module'; const require = __bridgeCreateRequire(import.meta.url);";

/** The project root (lib/..). */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Stands in for `@aws-sdk/credential-provider-node` in the bundles. */
export const LAMBDA_CREDENTIALS_MODULE = path.join(ROOT, 'functions', 'runtime', 'lambda-credentials.ts');

/** The package it replaces. */
export const CREDENTIAL_CHAIN_PACKAGE = '@aws-sdk/credential-provider-node';

export interface LambdaBundleOptions {
  /**
   * Leave `@aws-sdk/*` out of the bundle and use the SDK v3 of the nodejs24.x
   * runtime. @default false
   */
  readonly externalAwsSdk?: boolean;
}

/** esbuild build options (JavaScript API names) of one Lambda bundle, entry and output aside. */
export interface LambdaEsbuildOptions {
  bundle: true;
  platform: 'node';
  format: 'esm';
  target: 'node24';
  mainFields: string[];
  banner: { js: string };
  minify: true;
  legalComments: 'none';
  alias: Record<string, string>;
  external: string[];
}

export function lambdaEsbuildOptions(options: LambdaBundleOptions = {}): LambdaEsbuildOptions {
  const external = options.externalAwsSdk === true;
  return {
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    mainFields: ['module', 'main'],
    banner: { js: ESM_REQUIRE_BANNER },
    minify: true,
    legalComments: 'none',
    // With the runtime's SDK, its own credential chain comes with it.
    alias: external ? {} : { [CREDENTIAL_CHAIN_PACKAGE]: LAMBDA_CREDENTIALS_MODULE },
    external: external ? ['@aws-sdk/*'] : [],
  };
}

/**
 * The same options as esbuild command-line arguments for NodejsFunction's
 * `bundling.esbuildArgs` (the options it has no prop for).
 */
export function lambdaEsbuildArgs(options: LambdaBundleOptions = {}): Record<string, string | boolean | string[]> {
  const esbuild = lambdaEsbuildOptions(options);
  const args: Record<string, string | boolean | string[]> = { '--legal-comments': esbuild.legalComments };
  const aliases = Object.entries(esbuild.alias).map(([from, to]) => `${from}=${to}`);
  if (aliases.length > 0) args['--alias'] = aliases;
  return args;
}
