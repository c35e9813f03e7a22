/**
 * The ready-to-deploy stack: one MapflowBridge, configured from CDK context
 * (see lib/app-context.ts) or from props. Environment-agnostic, so
 * `cdk synth` needs neither AWS credentials nor Docker.
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import type { ExistingResources } from './app-context.ts';
import { MapflowBridge, type MapflowBridgeProps } from './mapflow-bridge.ts';

/** Props of MapflowBridgeStack: the stack's own, and the bridge's. */
export interface MapflowBridgeStackProps extends StackProps {
  /**
   * Props of the bridge.
   * @default the bridge's defaults
   */
  readonly bridge?: MapflowBridgeProps;
  /**
   * Resources to import by name instead of creating them; they win over the same resources in `bridge`.
   * @default none: the bridge creates (or takes from `bridge`) every resource
   */
  readonly existing?: ExistingResources;
}

/** A stack with one MapflowBridge and outputs for the operators' CLI (`mapflow-bridge doctor --stack`). */
export class MapflowBridgeStack extends Stack {
  /** The stack's bridge. */
  public readonly bridge: MapflowBridge;

  constructor(scope: Construct, id: string, props: MapflowBridgeStackProps = {}) {
    super(scope, id, props);
    const existing = props.existing ?? {};
    this.bridge = new MapflowBridge(this, 'Bridge', {
      ...props.bridge,
      ...(existing.bucketName
        ? {
            // With its KMS key, if any: writes to an SSE-KMS bucket need kms:GenerateDataKey, reads kms:Decrypt.
            bucket: s3.Bucket.fromBucketAttributes(this, 'ExistingBucket', {
              bucketName: existing.bucketName,
              ...(existing.bucketKmsKeyArn ? { encryptionKey: kms.Key.fromKeyArn(this, 'ExistingBucketKey', existing.bucketKmsKeyArn) } : {}),
            }),
          }
        : {}),
      ...(existing.secretName ? { secret: secretsmanager.Secret.fromSecretNameV2(this, 'ExistingSecret', existing.secretName) } : {}),
      ...(existing.eventBusName ? { eventBus: events.EventBus.fromEventBusName(this, 'ExistingEventBus', existing.eventBusName) } : {}),
      ...(existing.ledgerTableName
        ? { ledgerTable: dynamodb.Table.fromTableName(this, 'ExistingLedger', existing.ledgerTableName) }
        : {}),
    });

    const b = this.bridge;
    new CfnOutput(this, 'BucketName', { value: b.bucket.bucketName, description: `Drop files under s3://<bucket>/${b.settings.prefixes.inbox}` });
    new CfnOutput(this, 'InboxUri', { value: `s3://${b.bucket.bucketName}/${b.settings.prefixes.inbox}` });
    new CfnOutput(this, 'SecretArn', {
      value: b.secret.secretArn,
      description: 'Put {"token": "...", "email": "..."} here: aws secretsmanager put-secret-value --secret-id <arn> --secret-string ...',
    });
    new CfnOutput(this, 'LedgerTableName', { value: b.ledgerTable.tableName });
    new CfnOutput(this, 'EventBusName', { value: b.eventBus.eventBusName });
    new CfnOutput(this, 'StateMachineArn', { value: b.stateMachine.stateMachineArn });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: b.deadLetterQueue.queueUrl });
    // Read by `mapflow-bridge doctor --stack <name>` (packages/cli/src/doctor.ts).
    new CfnOutput(this, 'TriggerQueueUrl', { value: b.queue.queueUrl });
    new CfnOutput(this, 'TriggerRuleName', { value: b.triggerRule.ruleName });
    new CfnOutput(this, 'MapflowBaseUrl', { value: b.settings.mapflowBaseUrl });
    new CfnOutput(this, 'MapflowAuthScheme', { value: b.settings.authScheme });
    // Routes are validated to at most 3,000 bytes of JSON; "default" means the built-in routes.
    new CfnOutput(this, 'Routes', { value: b.settings.routes ? JSON.stringify(b.settings.routes.routes) : 'default' });
  }
}
