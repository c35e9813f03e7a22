/**
 * MapflowSimulator: the local Mapflow simulator (this package's src/) as a Lambda
 * function behind a function URL, for integration tests in a real account
 * that must not spend Mapflow credits. Point a MapflowBridge at it with
 * `mapflowBaseUrl: simulator.baseUrl` and `secret: simulator.secret`.
 *
 * Not for production: the URL is public (the simulator checks its own
 * generated token on every request), the state lives in one function instance
 * (reserved concurrency 1) and is lost when that instance is recycled.
 */
import * as path from 'node:path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { CONSTRUCT_ROOT, ESM_REQUIRE_BANNER, LAMBDA_ARCHITECTURE, LAMBDA_RUNTIME } from 'mapflow-bridge/internal';

/** This package's folder: the simulator's Lambda adapter is src/lambda.ts there. */
const SIMULATOR_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The folder that holds package-lock.json: the workspace root in this repository. */
const PROJECT_ROOT = CONSTRUCT_ROOT;

export interface MapflowSimulatorProps {
  /** Seconds a simulated processing takes. @default 20 */
  readonly processingSeconds?: number;
}

export class MapflowSimulator extends Construct {
  public readonly function: nodejs.NodejsFunction;
  public readonly functionUrl: lambda.FunctionUrl;
  /** `{"token", "email"}` for the simulator and for the bridge under test. */
  public readonly secret: secretsmanager.Secret;
  /** The Mapflow API base URL of the simulator (`https://<id>.lambda-url.<region>.on.aws/rest`). */
  public readonly baseUrl: string;

  constructor(scope: Construct, id: string, props: MapflowSimulatorProps = {}) {
    super(scope, id);
    const processingSeconds = props.processingSeconds ?? 20;
    if (!Number.isInteger(processingSeconds) || processingSeconds < 1 || processingSeconds > 600) {
      throw new Error(`MapflowSimulator: processingSeconds must be an integer from 1 to 600 (got ${processingSeconds})`);
    }
    this.secret = new secretsmanager.Secret(this, 'Token', {
      description: 'mapflow-bridge integration test: token of the Mapflow simulator',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ email: 'integ@mapflow-bridge.invalid' }),
        generateStringKey: 'token',
        excludePunctuation: true,
      },
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: path.join(SIMULATOR_ROOT, 'src', 'lambda.ts'),
      handler: 'handler',
      description: 'mapflow-bridge integration test: Mapflow simulator',
      runtime: LAMBDA_RUNTIME,
      architecture: LAMBDA_ARCHITECTURE,
      memorySize: 1024,
      timeout: Duration.seconds(60),
      // One instance holds the simulator's state: every request must reach it.
      reservedConcurrentExecutions: 1,
      environment: { SIM_SECRET_ARN: this.secret.secretArn, SIM_PROCESSING_SECONDS: String(processingSeconds) },
      logGroup: new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_WEEK, removalPolicy: RemovalPolicy.DESTROY }),
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      bundling: {
        format: nodejs.OutputFormat.ESM,
        target: 'node24',
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_BANNER,
        minify: true,
        bundleAwsSDK: true,
        forceDockerBundling: false,
      },
    });
    this.secret.grantRead(this.function);
    this.functionUrl = this.function.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE });
    // The URL ends with '/'; the simulator serves everything under /rest.
    this.baseUrl = `${this.functionUrl.url}rest`;
  }
}
