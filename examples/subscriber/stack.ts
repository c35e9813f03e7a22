/**
 * Example subscriber stack: a bridge and, on its event bus, a rule on
 * "Job Succeeded" that runs a Lambda function reading the results from S3.
 *
 *   npx cdk synth --app "npx tsx examples/subscriber/app.ts"
 *
 * In your own project, import the construct from the package instead:
 * `import { MapflowBridge } from 'mapflow-bridge';`.
 */
import { Stack, type StackProps } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { MapflowBridge } from '../../lib/mapflow-bridge.ts';

export class SubscriberStack extends Stack {
  public readonly bridge: MapflowBridge;
  public readonly rule: events.Rule;
  public readonly subscriber: nodejs.NodejsFunction;

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    this.bridge = new MapflowBridge(this, 'Bridge', { eventSchemaRegistry: true });

    this.subscriber = new nodejs.NodejsFunction(this, 'OnJobSucceeded', {
      entry: fileURLToPath(new URL('./handler.ts', import.meta.url)),
      handler: 'handler',
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      logGroup: new logs.LogGroup(this, 'OnJobSucceededLogs', { retention: logs.RetentionDays.ONE_MONTH }),
      bundling: { format: nodejs.OutputFormat.ESM, forceDockerBundling: false },
    });
    // Read access to results/ and failed/ only.
    this.bridge.grantReadResults(this.subscriber);

    this.rule = new events.Rule(this, 'JobSucceeded', {
      eventBus: this.bridge.eventBus,
      eventPattern: { source: [this.bridge.settings.eventSource], detailType: ['Job Succeeded'] },
      targets: [new targets.LambdaFunction(this.subscriber, { retryAttempts: 4 })],
    });
  }
}
