/**
 * What makes a first `cdk deploy`, a `cdk destroy` and a redeploy work on real
 * AWS (issue 10 points 1, 3, 4 and the hygiene list), checked on the template:
 * no `wildcard` in any rule pattern, buckets that can be deleted when the
 * removal policy says so, no retained resource with a name that a redeploy
 * would meet again, lifecycle rules that free noncurrent versions, explicit
 * queue retention, the ledger TTL and deletion protection, no source maps
 * unless asked for.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../functions/core/catalog.ts';
import { logicalIdOf, synthBridge, type SynthesizedBridge } from './support.ts';

// Synthesis is slow on a loaded machine: generous per-test timeouts.
const SYNTH_TIMEOUT = 240_000;

type Resource = { Type: string; Properties?: Record<string, unknown>; DeletionPolicy?: string };

/** The property that names a resource of each type the bridge can create. */
const NAME_PROPERTY: Record<string, string> = {
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::S3::Bucket': 'BucketName',
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::StepFunctions::StateMachine': 'StateMachineName',
  'AWS::IAM::Role': 'RoleName',
  'AWS::Events::EventBus': 'Name',
  'AWS::Events::Rule': 'Name',
  'AWS::SecretsManager::Secret': 'Name',
  'AWS::CloudWatch::Dashboard': 'DashboardName',
  'AWS::CloudWatch::Alarm': 'AlarmName',
};
const KEPT_BY_CLOUDFORMATION = new Set(['Retain', 'RetainExceptOnCreate', 'Snapshot']);

function resourcesOf(synth: SynthesizedBridge): Record<string, Resource> {
  return synth.template.toJSON().Resources as Record<string, Resource>;
}

/** Every object key anywhere in a value (to find operators in event patterns). */
function keysDeep(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) keysDeep(v, found);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      found.push(k);
      keysDeep(v, found);
    }
  }
  return found;
}

/** True when a (CloudFormation) value refers to the stack's id, which is new for every stack creation. */
function mentionsStackId(value: unknown): boolean {
  return JSON.stringify(value).includes('{"Ref":"AWS::StackId"}');
}

let retained: SynthesizedBridge;
let destroyed: SynthesizedBridge;
beforeAll(() => {
  // Prepare (shared): the default (RETAIN) bridge and one with DESTROY.
  retained = synthBridge();
  destroyed = synthBridge({ removalPolicy: RemovalPolicy.DESTROY });
}, 2 * SYNTH_TIMEOUT);

describe('trigger rule (point 1)', () => {
  it('no pattern of any rule uses a wildcard; the key filter is a plain prefix on the inbox', () => {
    // Act
    const rules = retained.template.findResources('AWS::Events::Rule');
    const patterns = Object.values(rules)
      .map((r) => r.Properties.EventPattern)
      .filter((p) => p !== undefined);
    const trigger = patterns.find((p) => JSON.stringify(p.source) === '["aws.s3"]');

    // Assess
    expect(trigger).toBeDefined();
    for (const pattern of patterns) expect(keysDeep(pattern)).not.toContain('wildcard');
    expect(trigger.detail.object.key).toEqual([{ prefix: 'inbox/' }]);
  });

  it('follows a custom inbox prefix', () => {
    // Act
    const synth = synthBridge({ inboxPrefix: 'drop/here/' });
    const [rule] = Object.values(
      synth.template.findResources('AWS::Events::Rule', { Properties: { EventPattern: { source: ['aws.s3'] } } }),
    );

    // Assess
    expect(rule.Properties.EventPattern.detail.object.key).toEqual([{ prefix: 'drop/here/' }]);
  }, SYNTH_TIMEOUT);
});

describe('removal policy (point 3)', () => {
  it('DESTROY: both buckets are deleted and emptied first, every version included', () => {
    // Act
    const resources = resourcesOf(destroyed);
    const autoDeletes = Object.values(resources).filter((r) => r.Type === 'Custom::S3AutoDeleteObjects');
    const bucketIds = [destroyed.bridge.bucket, destroyed.bridge.accessLogsBucket!].map((b) => logicalIdOf(destroyed.stack, b));

    // Assess
    for (const id of bucketIds) {
      expect(resources[id].DeletionPolicy, id).toBe('Delete');
      expect(
        autoDeletes.some((r) => JSON.stringify(r.Properties?.BucketName) === JSON.stringify({ Ref: id })),
        `auto-delete of ${id}`,
      ).toBe(true);
    }
    // The handler's role may list and delete object versions (DeleteObject* covers DeleteObjectVersion).
    const policies = Object.values(destroyed.template.findResources('AWS::S3::BucketPolicy'));
    for (const id of bucketIds) {
      const policy = policies.find((p) => JSON.stringify(p.Properties.Bucket) === JSON.stringify({ Ref: id }));
      const actions = (policy?.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[] }[])
        .filter((st) => st.Effect === 'Allow')
        .flatMap((st) => st.Action);
      expect(actions, id).toEqual(expect.arrayContaining(['s3:DeleteObject*', 's3:List*']));
    }
  });

  it('DESTROY: the ledger, secret and log groups go with the stack; no deletion protection', () => {
    // Act
    const resources = Object.values(resourcesOf(destroyed));
    const kept = resources.filter((r) => r.DeletionPolicy && KEPT_BY_CLOUDFORMATION.has(r.DeletionPolicy));
    const [table] = resources.filter((r) => r.Type === 'AWS::DynamoDB::Table');

    // Assess
    expect(kept.map((r) => r.Type)).toEqual([]);
    expect(table.Properties?.DeletionProtectionEnabled).toBe(false);
  });

  it('RETAIN (default): nothing is emptied, data is kept and the ledger has deletion protection', () => {
    // Act
    const resources = Object.values(resourcesOf(retained));
    const [table] = resources.filter((r) => r.Type === 'AWS::DynamoDB::Table');

    // Assess
    expect(resources.filter((r) => r.Type === 'Custom::S3AutoDeleteObjects')).toEqual([]);
    for (const type of ['AWS::S3::Bucket', 'AWS::DynamoDB::Table', 'AWS::SecretsManager::Secret', 'AWS::Logs::LogGroup']) {
      const ofType = resources.filter((r) => r.Type === type);
      expect(ofType.length, type).toBeGreaterThan(0);
      for (const r of ofType) expect(r.DeletionPolicy, type).toBe('Retain');
    }
    expect(table.Properties?.DeletionProtectionEnabled).toBe(true);
  });
});

describe('names that survive a stack (point 4)', () => {
  for (const [label, synthOf] of [
    ['RETAIN', () => retained],
    ['DESTROY', () => destroyed],
  ] as const) {
    it(`${label}: every named resource that CloudFormation keeps carries the stack id in its name`, () => {
      // Act
      const resources = Object.entries(resourcesOf(synthOf()));
      const keptTypes = new Set(resources.filter(([, r]) => KEPT_BY_CLOUDFORMATION.has(r.DeletionPolicy ?? '')).map(([, r]) => r.Type));
      const collisions = resources.filter(([, r]) => {
        const nameProperty = NAME_PROPERTY[r.Type];
        const name = nameProperty ? r.Properties?.[nameProperty] : undefined;
        return name !== undefined && KEPT_BY_CLOUDFORMATION.has(r.DeletionPolicy ?? '') && !mentionsStackId(name);
      });

      // Assess: a kept type this test does not know could hide a fixed name.
      for (const type of keptTypes) expect(Object.keys(NAME_PROPERTY), type).toContain(type);
      expect(collisions.map(([id]) => id)).toEqual([]);
    });
  }

  it('the state machine log group keeps the /aws/vendedlogs/states/ prefix and ends with the stack UUID', () => {
    // Act
    const name = retained.stack.resolve(
      (retained.bridge.stateMachineLogGroup.node.defaultChild as { logGroupName?: unknown }).logGroupName,
    ) as { 'Fn::Join': [string, unknown[]] };

    // Assess
    expect(name['Fn::Join'][1][0]).toMatch(/^\/aws\/vendedlogs\/states\//);
    expect(name['Fn::Join'][1][1]).toEqual({ 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] });
  });
});

describe('hygiene', () => {
  it('every lifecycle rule of a versioned bucket also expires noncurrent versions', () => {
    for (const synth of [retained, destroyed]) {
      // Act
      const buckets = Object.values(synth.template.findResources('AWS::S3::Bucket')).filter(
        (b) => b.Properties.VersioningConfiguration?.Status === 'Enabled',
      );
      const rules = buckets.flatMap((b) => (b.Properties.LifecycleConfiguration?.Rules ?? []) as Record<string, unknown>[]);

      // Assess
      expect(buckets).toHaveLength(2);
      expect(rules.length).toBeGreaterThanOrEqual(3);
      for (const rule of rules) {
        expect(rule.NoncurrentVersionExpiration, String(rule.Id)).toMatchObject({ NoncurrentDays: expect.any(Number) });
      }
    }
  });

  it('states the message retention of both queues (trigger shorter than its dead-letter queue)', () => {
    // Act
    const resources = resourcesOf(retained);
    const trigger = resources[logicalIdOf(retained.stack, retained.bridge.queue)];
    const dlq = resources[logicalIdOf(retained.stack, retained.bridge.deadLetterQueue)];

    // Assess
    expect(trigger.Properties?.MessageRetentionPeriod).toBe(4 * 86_400);
    expect(dlq.Properties?.MessageRetentionPeriod).toBe(14 * 86_400);
  });

  it('ledger TTL is off by default; ledgerRetentionDays turns it on and tells the functions', () => {
    // Prepare
    const withTtl = synthBridge({ ledgerRetentionDays: 30 });

    // Act
    const [plain] = Object.values(retained.template.findResources('AWS::DynamoDB::Table'));
    const [expiring] = Object.values(withTtl.template.findResources('AWS::DynamoDB::Table'));
    const envOf = (s: SynthesizedBridge) =>
      Object.values(s.template.findResources('AWS::Lambda::Function')).map((f) => f.Properties.Environment.Variables as Record<string, string>);

    // Assess
    expect(plain.Properties.TimeToLiveSpecification).toBeUndefined();
    expect(expiring.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    for (const env of envOf(retained)) expect(env.LEDGER_RETENTION_DAYS).toBeUndefined();
    for (const env of envOf(withTtl)) expect(env.LEDGER_RETENTION_DAYS).toBe('30');
  }, SYNTH_TIMEOUT);

  it('rejects a ledgerRetentionDays that is not a whole number of days', () => {
    expect(() => synthBridge({ ledgerRetentionDays: 0 })).toThrow(/ledgerRetentionDays must be an integer from 1/);
    expect(() => synthBridge({ ledgerRetentionDays: 1.5 })).toThrow(/ledgerRetentionDays/);
  }, SYNTH_TIMEOUT);

  it('no --enable-source-maps unless sourceMaps is asked for', () => {
    // Prepare
    const withMaps = synthBridge({ sourceMaps: true });

    // Act
    const optionsOf = (s: SynthesizedBridge) =>
      Object.values(s.template.findResources('AWS::Lambda::Function')).map(
        (f) => (f.Properties.Environment.Variables as Record<string, string>).NODE_OPTIONS,
      );

    // Assess
    expect(optionsOf(retained).every((o) => o === undefined)).toBe(true);
    expect(optionsOf(withMaps).every((o) => o === '--enable-source-maps')).toBe(true);
    expect(optionsOf(withMaps)).toHaveLength(HANDLER_NAMES.length);
  }, SYNTH_TIMEOUT);
});
