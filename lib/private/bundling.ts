/**
 * How every Lambda handler is bundled, in one place: the construct's
 * bundling from source (lib/private/bridge-function.ts, through lib/private/bundle-handler.ts),
 * the package's prebuilt handlers (scripts/build-handlers.ts) and the bundle
 * benchmark (packages/bench/bundles.ts) all take their esbuild options from here, so
 * the bench measures what ships.
 * No aws-cdk-lib import: the bench and the build script load this file alone.
 *
 * The choices, measured with `npx tsx packages/bench/bundles.ts` (docs/architecture.md,
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
 *   runtime's SDK v3 instead: smaller bundles, a version you do not choose;
 * - four source rewrites that let esbuild tree-shake the SDK
 *   (awsSdkTreeShaking below), 55-80 KiB off every bundle. esbuild takes plugins only through
 *   its JavaScript API, so the construct bundles through lib/private/bundle-handler.ts
 *   rather than NodejsFunction's esbuild command line.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * ESM bundles need `require` for the few CommonJS dependencies that call it
 * (esbuild leaves dynamic requires in place).
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __bridgeCreateRequire } from 'node:module'; const require = __bridgeCreateRequire(import.meta.url);";

/** The project root (lib/private/../..). */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

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

/**
 * The part of esbuild's plugin interface the bundling uses, declared here so
 * this file loads without esbuild (a devDependency); an esbuild `Plugin`.
 */
export interface EsbuildPlugin {
  name: string;
  setup(build: {
    onResolve(options: { filter: RegExp }, callback: (args: { path: string; namespace: string; kind: string }) => { path: string; namespace: string } | undefined): void;
    onLoad(
      options: { filter: RegExp; namespace?: string },
      callback: (args: { path: string }) => Promise<{ contents: string; loader: 'js' | 'json' } | undefined>,
    ): void;
  }): void;
}

/** Generated schema files of the SDK clients (smithy's schema serde, SDK >= 3.930). */
const SDK_SCHEMA_FILE = /[\\/]@aws-sdk[\\/]client-[^\\/]+[\\/]dist-es[\\/]schemas[\\/]schemas_\d+\.js$/;
/** The protocol base class that loads the event-stream serde with a dynamic import. */
const SMITHY_HTTP_PROTOCOL_FILE = /[\\/]@smithy[\\/]core[\\/]dist-es[\\/]submodules[\\/]protocols[\\/]HttpProtocol\.js$/;
const EVENT_STREAMS_DYNAMIC_IMPORT = 'await import("@smithy/core/event-streams")';
/** A client's package.json, which its runtimeConfig imports whole for the version in the User-Agent. */
const SDK_CLIENT_PACKAGE_JSON = /[\\/]@aws-sdk[\\/]client-[^\\/]+[\\/]package\.json$/;

/**
 * Rewrites the schema files' computed trait keys (`{ [_hE]: 400 }`, where
 * `const _hE = "httpError"`) as the literal keys they stand for
 * (`{ "httpError": 400 }`): the same object. esbuild must assume a computed
 * key may run code, so it kept every schema of the client (all ~100 S3
 * operations for the 10 the bridge calls); with literal keys it drops the
 * unused ones. The SDK's own fix is smithy-lang/smithy-typescript#1889 for
 * aws/aws-sdk-js-v3#7607; once it ships, this finds nothing to rewrite.
 * Only `[_name]:` after `{` or `,` whose `_name` is a string constant of the
 * same file is touched.
 */
export function literalSchemaKeys(source: string): string {
  const constants = new Map<string, string>();
  for (const match of source.matchAll(/^const (_\w+) = ("(?:[^"\\\n]|\\.)*");$/gm)) constants.set(match[1] as string, match[2] as string);
  if (constants.size === 0) return source;
  return source.replace(/([{,]\s*)\[(_\w+)\]:/g, (whole, before: string, name: string) => {
    const literal = constants.get(name);
    return literal === undefined ? whole : `${before}${literal}:`;
  });
}

/** What a bundled handler says if it ever calls an event-stream operation. */
export const NO_EVENT_STREAMS_MESSAGE =
  "mapflow-bridge's Lambda bundles leave out the AWS SDK's event-stream support: no handler calls an event-stream operation (such as S3 SelectObjectContent). See lib/private/bundling.ts.";

/**
 * Drops the one dynamic import of `@smithy/core/event-streams` (about 10 KiB
 * bundled): a dynamically imported module makes esbuild wrap it, and everything
 * it imports, in a lazy initialiser that is never tree-shaken (here about 180
 * shared @smithy/core modules), and the bridge calls no event-stream operation
 * (the only one among its clients is S3 SelectObjectContent;
 * test/perf/bundles.test.ts checks both). Should one ever be called, it fails
 * with NO_EVENT_STREAMS_MESSAGE instead of running without its code.
 */
export function withoutEventStreams(source: string): string {
  if (!source.includes(EVENT_STREAMS_DYNAMIC_IMPORT)) return source;
  return source.replace(EVENT_STREAMS_DYNAMIC_IMPORT, `await Promise.reject(new Error(${JSON.stringify(NO_EVENT_STREAMS_MESSAGE)}))`);
}

/**
 * A client's package.json cut to its name and version: the client reads only
 * `version` (for the User-Agent), but a default JSON import bundles the whole
 * file, about 2 KiB of dependency lists per client.
 */
export function clientPackageIdentity(source: string): string {
  const { name, version } = JSON.parse(source) as { name?: unknown; version?: unknown };
  return JSON.stringify({ name, version });
}

/** The SDK's endpoint cache (DynamoDB's endpoint discovery), which imports mnemonist's LRU cache. */
const SDK_ENDPOINT_CACHE_FILE = /[\\/]@aws-sdk[\\/]endpoint-cache[\\/]dist-es[\\/]EndpointCache\.js$/;
const MNEMONIST_LRU_IMPORT = 'import LRUCache from "mnemonist/lru-cache";';

/**
 * The LRU cache the SDK's EndpointCache uses, on a Map (insertion order is
 * recency): the five methods it calls, with mnemonist's meaning (get and set
 * make a key the most recent, peek does not, the least recent goes beyond the
 * capacity). Every DynamoDB client builds one for endpoint discovery, which
 * DynamoDB does not need and the bridge leaves off; mnemonist and obliterator
 * are about 7 KiB of each bundle with DynamoDB.
 */
export const MAP_LRU_CACHE = `class LRUCache {
  constructor(capacity) { this.capacity = capacity; this.items = new Map(); }
  has(key) { return this.items.has(key); }
  peek(key) { return this.items.get(key); }
  get(key) {
    if (!this.items.has(key)) return undefined;
    const value = this.items.get(key);
    this.items.delete(key);
    this.items.set(key, value);
    return value;
  }
  set(key, value) {
    this.items.delete(key);
    this.items.set(key, value);
    if (this.items.size > this.capacity) this.items.delete(this.items.keys().next().value);
    return this;
  }
  clear() { this.items.clear(); }
}`;

/** Puts MAP_LRU_CACHE in place of the EndpointCache's import of mnemonist. */
export function withMapLruCache(source: string): string {
  if (!source.includes(MNEMONIST_LRU_IMPORT)) return source;
  return source.replace(MNEMONIST_LRU_IMPORT, MAP_LRU_CACHE);
}

/** The esbuild plugin applying these rewrites to the SDK's files as esbuild loads them. */
export function awsSdkTreeShaking(): EsbuildPlugin {
  const rewrite = (transform: (source: string) => string, loader: 'js' | 'json' = 'js') => async (args: { path: string }) => {
    const source = await readFile(args.path, 'utf8');
    const contents = transform(source);
    return contents === source ? undefined : { contents, loader };
  };
  return {
    name: 'mapflow-bridge-aws-sdk-tree-shaking',
    setup(build) {
      build.onLoad({ filter: SDK_SCHEMA_FILE }, rewrite(literalSchemaKeys));
      build.onLoad({ filter: SMITHY_HTTP_PROTOCOL_FILE }, rewrite(withoutEventStreams));
      build.onLoad({ filter: SDK_CLIENT_PACKAGE_JSON }, rewrite(clientPackageIdentity, 'json'));
      build.onLoad({ filter: SDK_ENDPOINT_CACHE_FILE }, rewrite(withMapLruCache));
    },
  };
}

/** Imports of node:http, however written. */
const NODE_HTTP_IMPORT = /^(node:)?http$/;
const REQUIRED_BUILTIN_NAMESPACE = 'mapflow-bridge-required-builtin';

/**
 * Loads node:http with `require` (the banner's) where a module imports it
 * statically. Node's ES module view of a builtin reads every export when it
 * is made, and node:http's `WebSocket`, `CloseEvent` and `MessageEvent` are
 * getters that load undici, fetch's engine, which no handler uses: 25-60 ms
 * of CPU in a cold start (a fresh worker: `import('node:http')` 26-47 ms,
 * `require` 2-3 ms, undici left unloaded; test/perf/bundles.test.ts). The
 * Mapflow client imports it so, and every handler that calls Mapflow paid it
 * on AWS. The SDK's own `await import("node:http")` is left as it is: it runs
 * only for an http:// endpoint (local mode), never on AWS, and a lazy module
 * would add about 1 KiB to every bundle.
 */
export function nodeHttpThroughRequire(): EsbuildPlugin {
  return {
    name: 'mapflow-bridge-node-http-through-require',
    setup(build) {
      // The require below is left to Node (a builtin is external); every other import of node:http comes here.
      build.onResolve({ filter: NODE_HTTP_IMPORT }, (args) =>
        args.kind === 'import-statement' && args.namespace !== REQUIRED_BUILTIN_NAMESPACE ? { path: 'node:http', namespace: REQUIRED_BUILTIN_NAMESPACE } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: REQUIRED_BUILTIN_NAMESPACE }, async () => ({ contents: nodeHttpModule(), loader: 'js' }));
    },
  };
}

/**
 * node:http as an ES module over `require`: its default export and each of its
 * plain values by name (an import of a name it lacks fails the build), the
 * lazy getters left out. esbuild keeps only the names a bundle uses.
 */
function nodeHttpModule(): string {
  const http = createRequire(import.meta.url)('node:http') as object;
  const names = Object.getOwnPropertyNames(http).filter((name) => /^[A-Za-z_$][\w$]*$/.test(name) && 'value' in Object.getOwnPropertyDescriptor(http, name)!);
  return `const http = require("node:http");\nexport default http;\n${names.map((name) => `export const ${name} = /* @__PURE__ */ (() => http.${name})();`).join('\n')}\n`;
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
  plugins: EsbuildPlugin[];
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
    // With the runtime's SDK there is nothing of it to shake.
    plugins: external ? [nodeHttpThroughRequire()] : [awsSdkTreeShaking(), nodeHttpThroughRequire()],
  };
}
