/**
 * One Lambda function of the bridge: functions/handlers/<name>.ts bundled by
 * the local esbuild (never Docker, lib/private/bundle-handler.ts with the options of
 * lib/private/bundling.ts) into an ESM bundle for Node.js 24 on arm64,
 * with its own log group, its own role (no managed policies), X-Ray tracing and
 * the Powertools settings.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';
import { AssetHashType, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { bundleHandlerSync } from './bundle-handler.ts';
import {
  FUNCTION_SETTINGS,
  LAMBDA_ARCHITECTURE,
  LAMBDA_RUNTIME,
  POWERTOOLS_METRICS_NAMESPACE,
  POWERTOOLS_SERVICE_NAME,
  type BridgeFunctionName,
} from './defaults.ts';

/** The project root (lib/private/../..), where package-lock.json and functions/ live. */
export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Prebuilt handler bundles (scripts/build-handlers.ts), shipped in the npm
 * package beside the compiled construct (dist/assets/handlers/<name>/index.mjs),
 * so a consumer's synth needs no esbuild. Absent in the repository, where the
 * handlers are bundled from source.
 */
export const PREBUILT_HANDLERS_DIR = fileURLToPath(new URL('../../assets/handlers/', import.meta.url));

/**
 * Context key: a folder of prebuilt bundles `<dir>/<name>/index.mjs` to use
 * instead of bundling (the local bridge's assembly cache, packages/local/src/assembly/local-assembly.ts).
 */
export const HANDLER_BUNDLES_CONTEXT = 'mapflow-bridge:handler-bundles';

/** The folder of a handler's prebuilt bundle, when there is one. */
export function prebuiltHandlerDir(name: BridgeFunctionName): string | undefined {
  const dir = path.join(PREBUILT_HANDLERS_DIR, name);
  return existsSync(path.join(dir, 'index.mjs')) ? dir : undefined;
}

/** Entry file of a handler. */
export function handlerEntry(name: BridgeFunctionName): string {
  return path.join(PROJECT_ROOT, 'functions', 'handlers', `${name}.ts`);
}

export interface BridgeFunctionProps {
  readonly name: BridgeFunctionName;
  /** Environment of docs/architecture.md (the Powertools settings are added here). */
  readonly environment: Record<string, string>;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  /** Ship source maps and run with --enable-source-maps. @default false */
  readonly sourceMaps?: boolean;
  /**
   * Leave `@aws-sdk/*` out of the bundle and use the SDK v3 that the
   * nodejs24.x runtime ships: bundles of a fifth to a third of the size, but the
   * SDK version is the runtime's, not the one the bridge was tested with, and
   * a cold start resolves the SDK's files one by one (see lib/private/bundling.ts and
   * docs/architecture.md, "Lean handlers"). Ignored for prebuilt bundles.
   * @default false
   */
  readonly externalAwsSdk?: boolean;
}

export class BridgeFunction extends Construct {
  /** The function: bundled from source at synth, or on the package's prebuilt bundle. */
  public readonly function: lambda.Function;
  public readonly role: iam.Role;
  public readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: BridgeFunctionProps) {
    super(scope, id);
    const bundles = this.node.tryGetContext(HANDLER_BUNDLES_CONTEXT) as unknown;
    const prebuilt = typeof bundles === 'string' ? path.join(bundles, props.name) : prebuiltHandlerDir(props.name);
    const entry = handlerEntry(props.name);
    if (!prebuilt && !existsSync(entry)) {
      throw new Error(`MapflowBridge: the handler file of '${props.name}' is missing (${entry}); it must export 'handler'`);
    }
    const settings = FUNCTION_SETTINGS[props.name];
    const externalAwsSdk = props.externalAwsSdk ?? false;
    const sourceMaps = props.sourceMaps ?? false;

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    // An own role instead of AWSLambdaBasicExecutionRole: writes to this log group only.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `mapflow-bridge ${props.name}`,
    });
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );

    const common = {
      description: `mapflow-bridge: ${props.name}`,
      runtime: LAMBDA_RUNTIME,
      architecture: LAMBDA_ARCHITECTURE,
      memorySize: settings.memorySize,
      timeout: settings.timeout,
      role: this.role,
      logGroup: this.logGroup,
      tracing: lambda.Tracing.ACTIVE,
      environment: {
        ...props.environment,
        POWERTOOLS_SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE,
        POWERTOOLS_LOG_LEVEL: 'INFO',
        // Secrets are cached by Powertools parameters for this many seconds.
        POWERTOOLS_PARAMETERS_MAX_AGE: '300',
        BRIDGE_FUNCTION: props.name,
        // Source maps cost cold-start time and slow every error path: only when asked for.
        ...(props.sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
      },
    } satisfies Partial<lambda.FunctionProps>;
    this.function = new lambda.Function(this, 'Function', {
      ...common,
      code: prebuilt ? lambda.Code.fromAsset(prebuilt) : handlerCode(entry, { externalAwsSdk, sourceMaps }),
      handler: 'index.handler',
    });
  }
}

/**
 * A handler bundled from source at synth time, as NodejsFunction would, but
 * through esbuild's JavaScript API (lib/private/bundle-handler.ts), which takes the
 * SDK tree-shaking plugin of lib/private/bundling.ts that the esbuild command line
 * cannot. The asset is hashed by its output, like NodejsFunction's.
 */
function handlerCode(entry: string, options: { externalAwsSdk: boolean; sourceMaps: boolean }): lambda.Code {
  return lambda.Code.fromAsset(path.dirname(entry), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never used: the local bundling below always bundles or throws.
      image: LAMBDA_RUNTIME.bundlingImage,
      // CDK caches staged assets by source folder and the bundling options as
      // JSON; the tryBundle closure does not serialize, so without these every
      // handler of functions/handlers/ would share the first one's bundle. The
      // entry (relative, so the key does not depend on the checkout's place)
      // and the options make each handler's cache key its own.
      environment: {
        BRIDGE_HANDLER_ENTRY: path.relative(PROJECT_ROOT, entry).split(path.sep).join('/'),
        BRIDGE_BUNDLE_OPTIONS: JSON.stringify(options),
      },
      local: {
        tryBundle(outputDir: string): boolean {
          bundleHandlerSync(entry, outputDir, options);
          return true;
        },
      },
    },
  });
}
