import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../functions/core/catalog.ts';
import { ledgerTableSchema } from '../../functions/ledger/schema.ts';
import { FUNCTION_CAPABILITIES } from '../../lib/private/permissions.ts';
import { DEFAULT_POLL_POLICY, type BridgeFunctionName } from '../../lib/private/defaults.ts';
import {
  actionsOf,
  logicalIdOf,
  objectArnSuffix,
  resourcesOf,
  statementsOfFunction,
  statementsWith,
  synthBridge,
  type PolicyStatement,
  type SynthesizedBridge,
} from './support.ts';

/** What Step Functions needs to deliver its logs to CloudWatch Logs (these actions take no resource ARN). */
const STEP_FUNCTIONS_LOG_DELIVERY = [
  'logs:CreateLogDelivery',
  'logs:GetLogDelivery',
  'logs:UpdateLogDelivery',
  'logs:DeleteLogDelivery',
  'logs:ListLogDeliveries',
  'logs:PutResourcePolicy',
  'logs:DescribeResourcePolicies',
  'logs:DescribeLogGroups',
];

// Prepare (shared): one default bridge, bundling skipped.
let synth: SynthesizedBridge;
beforeAll(() => {
  synth = synthBridge();
});

describe('data bucket', () => {
  it('is encrypted, versioned, private, SSL-only, logs access and sends events to EventBridge', () => {
    // Act
    const bucketId = logicalIdOf(synth.stack, synth.bridge.bucket);
    const logBucketId = logicalIdOf(synth.stack, synth.bridge.accessLogsBucket!);
    const bucket = synth.template.findResources('AWS::S3::Bucket')[bucketId];

    // Assess
    expect(bucket.Properties).toMatchObject({
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      VersioningConfiguration: { Status: 'Enabled' },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      NotificationConfiguration: { EventBridgeConfiguration: { EventBridgeEnabled: true } },
      LoggingConfiguration: { DestinationBucketName: { Ref: logBucketId } },
    });
    expect(bucket.DeletionPolicy).toBe('Retain');
    synth.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('needs no custom-resource Lambda: the only functions are the handlers', () => {
    // Assess
    expect(Object.keys(synth.template.findResources('AWS::Lambda::Function'))).toHaveLength(HANDLER_NAMES.length);
    expect(HANDLER_NAMES.length).toBeGreaterThanOrEqual(15);
  });
});

describe('trigger', () => {
  it('routes "Object Created" under the inbox to an encrypted queue with a DLQ', () => {
    // Act
    const rules = synth.template.findResources('AWS::Events::Rule', { Properties: { EventPattern: { source: ['aws.s3'] } } });
    const [rule] = Object.values(rules);
    const queueId = logicalIdOf(synth.stack, synth.bridge.queue);
    const dlqId = logicalIdOf(synth.stack, synth.bridge.deadLetterQueue);

    // Assess
    expect(Object.keys(rules)).toHaveLength(1);
    expect(rule.Properties.EventPattern).toMatchObject({
      'detail-type': ['Object Created'],
      detail: { bucket: { name: [{ Ref: logicalIdOf(synth.stack, synth.bridge.bucket) }] } },
    });
    expect(rule.Properties.Targets).toEqual([
      expect.objectContaining({ Arn: { 'Fn::GetAtt': [queueId, 'Arn'] }, DeadLetterConfig: { Arn: { 'Fn::GetAtt': [dlqId, 'Arn'] } } }),
    ]);
    synth.template.hasResourceProperties('AWS::SQS::Queue', {
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] }, maxReceiveCount: 5 },
      VisibilityTimeout: 180,
    });
    for (const id of [queueId, dlqId]) {
      synth.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: id }],
        PolicyDocument: {
          Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
        },
      });
    }
  });

  it('matches every object under the inbox (dispatch accepts or rejects it) and nothing the bridge writes', () => {
    // Prepare
    const [rule] = Object.values(
      synth.template.findResources('AWS::Events::Rule', { Properties: { EventPattern: { source: ['aws.s3'] } } }),
    );
    const filters = rule.Properties.EventPattern.detail.object.key as { prefix: string }[];
    // EventBridge prefix matching: the values of one field are OR-ed.
    const matches = (key: string) => filters.some((f) => key.startsWith(f.prefix));

    // Act / Assess
    expect(filters.every((f) => Object.keys(f).join() === 'prefix')).toBe(true);
    for (const key of ['inbox/a.geojson', 'inbox/a.json', 'inbox/buildings/b.TIF', 'inbox/x/y/z.tiff', 'inbox/A.GeoJSON', 'inbox/readme.txt']) {
      expect(matches(key), key).toBe(true);
    }
    for (const key of [
      'results/a/part/result.geojson',
      'results/a/part/job.json',
      'failed/a/report.json',
      'work/job-1/geometry.json',
      'other/inbox/a.tif',
      'Inbox/a.tif',
      'a.tif',
    ]) {
      expect(matches(key), key).toBe(false);
    }
  });

  it('dispatches from the queue with partial batch failures', () => {
    synth.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalIdOf(synth.stack, synth.bridge.queue), 'Arn'] },
      FunctionName: { Ref: logicalIdOf(synth.stack, synth.bridge.dispatchFunction) },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });
});

describe('functions', () => {
  it.each(HANDLER_NAMES)('%s runs on nodejs24.x arm64 with tracing and the runtime environment', (name) => {
    // Act
    const id = logicalIdOf(synth.stack, synth.bridge.functions[name]);
    const fn = synth.template.findResources('AWS::Lambda::Function')[id];

    // Assess
    expect(fn.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      TracingConfig: { Mode: 'Active' },
      LoggingConfig: { LogGroup: expect.anything() },
    });
    const env = fn.Properties.Environment.Variables as Record<string, unknown>;
    expect(env).toMatchObject({
      LEDGER_TABLE: { Ref: logicalIdOf(synth.stack, synth.bridge.ledgerTable) },
      EVENT_SOURCE: 'mapflow.bridge',
      MAPFLOW_BASE_URL: 'https://api.mapflow.ai/rest',
      MAPFLOW_AUTH_SCHEME: 'auto',
      MAPFLOW_SECRET_ARN: { Ref: logicalIdOf(synth.stack, synth.bridge.secret) },
      INBOX_PREFIX: 'inbox/',
      RESULTS_PREFIX: 'results/',
      FAILED_PREFIX: 'failed/',
      WORK_PREFIX: 'work/',
      MAX_CONCURRENT_PROCESSINGS: '5',
      POWERTOOLS_SERVICE_NAME: 'mapflow-bridge',
      BRIDGE_FUNCTION: name,
    });
    expect(JSON.parse(env.POLL_POLICY as string)).toEqual(DEFAULT_POLL_POLICY);
    // Built-in routes: ROUTES is left unset so the runtime's defaults apply.
    expect(env.ROUTES).toBeUndefined();
    expect(env.STATE_MACHINE_ARN !== undefined).toBe(name === 'dispatch' || name === 'reconcile');
    // Local-mode settings never reach AWS.
    expect(Object.keys(env).filter((k) => k.startsWith('BRIDGE_') && k !== 'BRIDGE_FUNCTION')).toEqual([]);
    expect(env.MAPFLOW_TOKEN).toBeUndefined();
  });

  it('log groups have a retention', () => {
    const groups = Object.values(synth.template.findResources('AWS::Logs::LogGroup'));
    expect(groups.length).toBe(HANDLER_NAMES.length + 1);
    for (const group of groups) expect(group.Properties.RetentionInDays).toBe(90);
  });
});

describe('least privilege', () => {
  it('no policy statement uses a wildcard action; Resource "*" only for X-Ray and Step Functions log delivery', () => {
    // Prepare
    const stateMachineRoleId = logicalIdOf(synth.stack, synth.bridge.stateMachine.role);

    // Act
    const policies = Object.values(synth.template.findResources('AWS::IAM::Policy'));

    // Assess
    expect(policies.length).toBeGreaterThan(15);
    for (const policy of policies) {
      const ofStateMachine = (policy.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === stateMachineRoleId);
      for (const statement of policy.Properties.PolicyDocument.Statement as PolicyStatement[]) {
        const actions = actionsOf(statement);
        for (const action of actions) expect(action, JSON.stringify(statement)).not.toContain('*');
        if (!resourcesOf(statement).includes('*')) continue;
        const allowed = (a: string) => a.startsWith('xray:') || (ofStateMachine && a.startsWith('logs:') && STEP_FUNCTIONS_LOG_DELIVERY.includes(a));
        expect(actions.every(allowed), JSON.stringify(statement)).toBe(true);
      }
    }
  });

  it('S3 object actions target exactly the prefixes of each function capability', () => {
    const expectedPrefixes = (name: BridgeFunctionName, kinds: string[]) =>
      kinds.filter((k) => FUNCTION_CAPABILITIES[name].some((c) => c === `${k}:write`)).map((k) => `/${k}/*`);
    for (const name of HANDLER_NAMES) {
      // Act
      const statements = statementsOfFunction(synth, name);
      const suffixes = (action: string) =>
        [...new Set(statementsWith(statements, action).flatMap((s) => resourcesOf(s).map(objectArnSuffix)))].sort();

      // Assess
      expect(suffixes('s3:PutObject'), name).toEqual(expectedPrefixes(name, ['results', 'failed', 'work']).sort());
      expect(suffixes('s3:PutObjectTagging'), name).toEqual(FUNCTION_CAPABILITIES[name].includes('inbox:tag') ? ['/inbox/*'] : []);
      expect(suffixes('s3:GetObject'), name).toEqual(
        [
          ...(FUNCTION_CAPABILITIES[name].includes('inbox:read') ? ['/inbox/*'] : []),
          ...(FUNCTION_CAPABILITIES[name].includes('work:read') ? ['/work/*'] : []),
          ...(FUNCTION_CAPABILITIES[name].includes('results:read') ? ['/results/*'] : []),
        ].sort(),
      );
      // s3:ListBucket is on the bucket itself, narrowed by an s3:prefix condition (test/cdk/dispatch-permissions.test.ts).
      for (const s of statements.filter((st) => actionsOf(st).some((a) => a.startsWith('s3:')) && !actionsOf(st).includes('s3:ListBucket'))) {
        for (const r of resourcesOf(s)) expect(objectArnSuffix(r), `${name} ${JSON.stringify(r)}`).toMatch(/^\/(inbox|results|failed|work)\/\*$/);
      }
    }
  });

  it('each function gets the secret, the bus, the ledger and the state machine only when its capabilities say so', () => {
    const secretId = logicalIdOf(synth.stack, synth.bridge.secret);
    const busId = logicalIdOf(synth.stack, synth.bridge.eventBus);
    const tableId = logicalIdOf(synth.stack, synth.bridge.ledgerTable);
    const stateMachineId = logicalIdOf(synth.stack, synth.bridge.stateMachine);
    for (const name of HANDLER_NAMES) {
      // Act
      const statements = statementsOfFunction(synth, name);
      const capabilities = FUNCTION_CAPABILITIES[name];

      // Assess
      const secretReads = statementsWith(statements, 'secretsmanager:GetSecretValue');
      expect(secretReads.length > 0, `${name} secret`).toBe(capabilities.includes('mapflow:token'));
      for (const s of secretReads) expect(resourcesOf(s)).toEqual([{ Ref: secretId }]);

      const puts = statementsWith(statements, 'events:PutEvents');
      expect(puts.length > 0, `${name} events`).toBe(capabilities.includes('events:put'));
      for (const s of puts) expect(resourcesOf(s)).toEqual([{ 'Fn::GetAtt': [busId, 'Arn'] }]);

      const writes = statementsWith(statements, 'dynamodb:UpdateItem');
      expect(writes.length > 0, `${name} ledger`).toBe(capabilities.includes('ledger:write'));
      for (const s of writes) {
        expect(resourcesOf(s)).toEqual(
          expect.arrayContaining([{ 'Fn::GetAtt': [tableId, 'Arn'] }]),
        );
      }

      const starts = statementsWith(statements, 'states:StartExecution');
      // The reconciler's inbox sweep starts what a lost notification did not.
      expect(starts.length > 0, `${name} start`).toBe(name === 'dispatch' || name === 'reconcile');
      for (const s of starts) expect(resourcesOf(s)).toEqual([{ Ref: stateMachineId }]);
      expect(statementsWith(statements, 'states:DescribeExecution').length > 0, `${name} describe`).toBe(name === 'reconcile');
    }
  });

  it('dispatch can start executions, read inbox objects (HeadObject) and nothing else of the data', () => {
    const actions = statementsOfFunction(synth, 'dispatch').flatMap(actionsOf).sort();
    expect(actions).toEqual([
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      's3:GetObject',
      's3:GetObjectVersion',
      // on the bucket, limited to inbox/ keys (test/cdk/dispatch-permissions.test.ts): HeadObject of a missing key is then 404, not 403
      's3:ListBucket',
      // the SQS event source (on the trigger queue only)
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
      'states:StartExecution',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
    const queueArn = { 'Fn::GetAtt': [logicalIdOf(synth.stack, synth.bridge.queue), 'Arn'] };
    for (const s of statementsOfFunction(synth, 'dispatch').filter((st) => actionsOf(st)[0].startsWith('sqs:'))) {
      expect(resourcesOf(s)).toEqual([queueArn]);
    }
  });
});

describe('state machine', () => {
  it('is Standard, JSONPath, logs ALL without execution data, traces with X-Ray and has a timeout', () => {
    // Act
    const [machine] = Object.values(synth.template.findResources('AWS::StepFunctions::StateMachine'));
    const definition = JSON.stringify(machine.Properties.DefinitionString);

    // Assess
    expect(machine.Properties).toMatchObject({
      StateMachineType: 'STANDARD',
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: { Level: 'ALL', IncludeExecutionData: false },
    });
    expect(definition).not.toContain('QueryLanguage');
    expect(definition).not.toContain('JSONata');
    expect(definition).toContain('\\"TimeoutSeconds\\":712800');
  });

  it('runs every Task state on its own function', () => {
    const tasks = synth.bridge.stateMachine;
    expect(tasks).toBeDefined();
    const definition = JSON.stringify(
      Object.values(synth.template.findResources('AWS::StepFunctions::StateMachine'))[0].Properties.DefinitionString,
    );
    const taskFunctions = HANDLER_NAMES.filter((n) => n !== 'dispatch' && n !== 'reconcile');
    for (const name of taskFunctions) {
      expect(definition, name).toContain(logicalIdOf(synth.stack, synth.bridge.functions[name]));
    }
    // As many Task states as Task functions, each function named: one function per Task.
    expect(definition.match(/\\"Type\\":\\"Task\\"/g)).toHaveLength(taskFunctions.length);
    for (const name of ['dispatch', 'reconcile'] as const) {
      expect(definition, name).not.toContain(logicalIdOf(synth.stack, synth.bridge.functions[name]));
    }
  });
});

describe('ledger', () => {
  it('mirrors ledgerTableSchema(): key, GSIs, on demand, PITR, encryption', () => {
    // Prepare
    const schema = ledgerTableSchema('ignored');

    // Act
    const table = synth.template.findResources('AWS::DynamoDB::Table')[logicalIdOf(synth.stack, synth.bridge.ledgerTable)];

    // Assess
    expect(table.Properties.KeySchema).toEqual(schema.KeySchema);
    expect(new Set(table.Properties.AttributeDefinitions)).toEqual(new Set(schema.AttributeDefinitions));
    expect(table.Properties.GlobalSecondaryIndexes).toEqual(schema.GlobalSecondaryIndexes);
    expect(table.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
    expect(table.DeletionPolicy).toBe('Retain');
  });
});

describe('operations', () => {
  it('runs the reconciler every 15 minutes', () => {
    synth.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(15 minutes)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalIdOf(synth.stack, synth.bridge.reconcileFunction), 'Arn'] } })],
    });
  });

  it('has a dashboard with executions, Lambda errors, the DLQ depth job outcomes, credits and ledger query help', () => {
    const [dashboard] = Object.values(synth.template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const text of ['ExecutionsStarted', 'ExecutionsSucceeded', 'ExecutionsFailed', 'Errors', 'ApproximateNumberOfMessagesVisible', 'byStatus', 'byProcessingId', 'JobsSucceeded', 'JobsFailed', 'JobsRejected', 'CreditsSpent', 'MapflowBridge']) {
      expect(body, text).toContain(text);
    }
  });

  it('creates a secret for {token, email} without any token in the template', () => {
    synth.template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: { SecretStringTemplate: '{"email":""}', GenerateStringKey: 'token' },
    });
    const secrets = Object.values(synth.template.findResources('AWS::SecretsManager::Secret'));
    expect(secrets).toHaveLength(1);
    expect(secrets[0].Properties.SecretString).toBeUndefined();
  });
});
