import { Duration } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { MapflowBridge } from '../../lib/mapflow-bridge.ts';
import { actionsOf, logicalIdOf, resourcesOf, statementsOfFunction, statementsWith, synthBridge } from './support.ts';

describe('bring your own resources', () => {
  it('uses an existing bucket, secret, bus and ledger table without creating them', () => {
    // Prepare / Act
    const synth = synthBridge((stack) => ({
      bucket: s3.Bucket.fromBucketName(stack, 'MyBucket', 'my-drop-bucket'),
      secret: secretsmanager.Secret.fromSecretNameV2(stack, 'MySecret', 'mapflow/credentials'),
      eventBus: events.EventBus.fromEventBusName(stack, 'MyBus', 'my-bus'),
      ledgerTable: dynamodb.Table.fromTableName(stack, 'MyTable', 'my-ledger'),
    }));
    const t = synth.template;

    // Assess: nothing of the four was created
    t.resourceCountIs('AWS::S3::Bucket', 0);
    t.resourceCountIs('AWS::SecretsManager::Secret', 0);
    t.resourceCountIs('AWS::Events::EventBus', 0);
    t.resourceCountIs('AWS::DynamoDB::Table', 0);
    expect(synth.bridge.accessLogsBucket).toBeUndefined();

    // Assess: the functions point at them
    const [fn] = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { Environment: { Variables: { BRIDGE_FUNCTION: 'plan-processing' } } } }));
    expect(fn.Properties.Environment.Variables).toMatchObject({ LEDGER_TABLE: 'my-ledger', MAPFLOW_SECRET_ARN: 'mapflow/credentials' });
    expect(JSON.stringify(fn.Properties.Environment.Variables.EVENT_BUS_NAME)).toContain(':event-bus/my-bus');

    // Assess: the trigger rule filters on that bucket, the grants target it
    t.hasResourceProperties('AWS::Events::Rule', { EventPattern: { detail: { bucket: { name: ['my-drop-bucket'] } } } });
    const reads = statementsWith(statementsOfFunction(synth, 'plan-processing'), 's3:GetObject');
    expect(JSON.stringify(reads.flatMap(resourcesOf))).toContain(':s3:::my-drop-bucket/inbox/*');
    const secretReads = statementsWith(statementsOfFunction(synth, 'plan-processing'), 'secretsmanager:GetSecretValue');
    expect(JSON.stringify(secretReads.flatMap(resourcesOf))).toContain(':secret:mapflow/credentials-??????');
  }, 240_000);

  it('passes cdk-nag with imported resources too', () => {
    const { app } = synthBridge((stack) => ({
      bucket: s3.Bucket.fromBucketName(stack, 'MyBucket', 'my-drop-bucket'),
      ledgerTable: dynamodb.Table.fromTableName(stack, 'MyTable', 'my-ledger'),
    }));
    app.synth();
    const report = new AwsSolutionsChecks(app).validateScope(app);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  }, 240_000);

  it('grants kms actions on the key of a KMS-encrypted bucket you bring', () => {
    // Prepare
    const synth = synthBridge((stack) => {
      const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
      return { bucket: new s3.Bucket(stack, 'Own', { encryptionKey: key, enforceSSL: true }) };
    });

    // Act
    const statements = statementsOfFunction(synth, 'store-results');
    const kmsStatements = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('kms:')));

    // Assess
    expect([...new Set(kmsStatements.flatMap(actionsOf))].sort()).toEqual(['kms:Decrypt', 'kms:GenerateDataKey']);
  }, 240_000);

  it('writes access logs to a log bucket you give', () => {
    const synth = synthBridge((stack) => ({ serverAccessLogsBucket: new s3.Bucket(stack, 'Logs', { enforceSSL: true }) }));
    const logsId = logicalIdOf(synth.stack, synth.stack.node.findChild('Logs'));
    synth.template.hasResourceProperties('AWS::S3::Bucket', { LoggingConfiguration: { DestinationBucketName: { Ref: logsId } } });
    expect(synth.bridge.accessLogsBucket).toBeUndefined();
  }, 240_000);
});

describe('grant helpers', () => {
  it('grantReadResults reads results/ and failed/ only; grantReadLedger reads the table and its GSIs', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Test');
    const bridge = new MapflowBridge(stack, 'Bridge', { dashboard: false });
    const reader = new iam.Role(stack, 'Reader', { assumedBy: new iam.AccountRootPrincipal() });

    // Act
    bridge.grantReadResults(reader);
    bridge.grantReadLedger(reader);
    const policy = Object.values(
      Template.fromStack(stack).findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: logicalIdOf(stack, reader) }] } }),
    )[0];
    const statements = policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown; Condition?: unknown }[];
    const text = JSON.stringify(statements);

    // Assess
    expect(text).toContain('/results/*');
    expect(text).toContain('/failed/*');
    expect(text).not.toContain('/inbox/*');
    expect(text).not.toContain('/work/*');
    expect(text).toContain('"s3:prefix":["results/*","failed/*"]');
    expect(text).toContain('/index/*');
    for (const s of statements) for (const a of Array.isArray(s.Action) ? s.Action : [s.Action]) expect(a).not.toContain('*');
    expect(text).not.toMatch(/dynamodb:(PutItem|UpdateItem|DeleteItem)/);
  }, 240_000);

  it('grantWriteInbox lets a producer put objects under the inbox only', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Test');
    const bridge = new MapflowBridge(stack, 'Bridge', { dashboard: false, workExpiration: Duration.days(3) });
    const producer = new iam.User(stack, 'Producer');
    bridge.grantWriteInbox(producer);
    const text = JSON.stringify(Template.fromStack(stack).findResources('AWS::IAM::Policy', { Properties: { Users: [{ Ref: logicalIdOf(stack, producer) }] } }));
    expect(text).toContain('s3:PutObject');
    expect(text).toContain('/inbox/*');
    expect(text).not.toContain('/results/*');
  }, 240_000);
});

