/**
 * Least privilege, declared in one table: which capability each function of
 * the bridge needs, and what each capability grants (explicit actions only, no
 * wildcard actions, resources narrowed to the S3 prefixes the function uses).
 *
 * Reviewing a function's rights means reading one line of FUNCTION_CAPABILITIES.
 */
import { Arn, ArnFormat, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { BridgeFunctionName } from './defaults.ts';

export type Capability =
  /** Read job rows and the concurrency slots row (GetItem, Query on the GSIs). */
  | 'ledger:read'
  /** Conditional writes of job rows and slots. */
  | 'ledger:write'
  /** Read dropped inputs (ranged GETs of GeoTIFFs, GeoJSON text). */
  | 'inbox:read'
  /**
   * s3:ListBucket for keys under the inbox only (an s3:prefix condition): S3
   * answers HeadObject of a missing key with 404 only to a principal that may
   * list it, and with 403 otherwise.
   */
  | 'inbox:list'
  /** Tag dropped inputs with the job id and status (merging existing tags). */
  | 'inbox:tag'
  | 'work:read'
  | 'work:write'
  | 'results:write'
  /** Read back what the job wrote under results/ (Store Results derives result.fgb from result.geojson). */
  | 'results:read'
  | 'failed:write'
  /** events:PutEvents on the bridge's bus. */
  | 'events:put'
  /** secretsmanager:GetSecretValue on the Mapflow credentials. */
  | 'mapflow:token'
  /** states:StartExecution on the bridge's state machine. */
  | 'workflow:start'
  /** states:DescribeExecution (its executions and its Map Runs' children) / ListExecutions on the bridge's state machine. */
  | 'workflow:describe'
  /**
   * states:SendTaskSuccess on the bridge's state machines: hands a freed slot to
   * a waiting task token (admission). Granted by ARN pattern, not by reference:
   * the state machine refers to these functions, so a reference would be a cycle.
   */
  | 'workflow:respond';

const JOB_TASK: readonly Capability[] = ['ledger:read', 'ledger:write', 'events:put'];

/**
 * What each function may do. Change a function's rights here, and only here.
 * Checked against what the steps in functions/jobs/steps/ and the service
 * handlers actually call (S3 reads/writes/tags, Mapflow, ledger, events).
 */
export const FUNCTION_CAPABILITIES: Record<BridgeFunctionName, readonly Capability[]> = {
  'register-job': [...JOB_TASK],
  // work:write: the footprint of an image it refuses, which the failure quicklook draws.
  'inspect-geotiff': [...JOB_TASK, 'inbox:read', 'work:write', 'mapflow:token'],
  'ensure-mosaic': [...JOB_TASK, 'mapflow:token'],
  'upload-image': [...JOB_TASK, 'inbox:read', 'mapflow:token'],
  'plan-processing': [...JOB_TASK, 'inbox:read', 'work:write', 'mapflow:token'],
  'acquire-slot': [...JOB_TASK],
  // Admission (.waitForTaskToken): join the slot queue, wake our own token on a free slot.
  'admit-job': [...JOB_TASK, 'workflow:respond'],
  'wait-for-slot': [...JOB_TASK, 'workflow:respond'],
  'create-processing': [...JOB_TASK, 'work:read', 'mapflow:token'],
  // Releases the slot the moment the processing is done: the next waiter gets it (SendTaskSuccess).
  'poll-processing': [...JOB_TASK, 'mapflow:token', 'workflow:respond'],
  'restart-processing': [...JOB_TASK, 'mapflow:token'],
  // The results under results/; a FAILED processing's partial results under failed/.
  'store-results': [...JOB_TASK, 'work:read', 'results:write', 'results:read', 'failed:write', 'mapflow:token'],
  // Releasing a slot hands it to the oldest waiter (SendTaskSuccess).
  'finish-part': [...JOB_TASK, 'workflow:respond'],
  // job.json under results/, or the failure report under failed/; tags the input; reads the final cost from Mapflow.
  // The failure quicklook (functions/quicklook) draws the AOI: the GeoJSON input, else the first part's geometry
  // (or the footprint of a GeoTIFF Inspect GeoTIFF refused).
  'finish-job': [...JOB_TASK, 'results:write', 'failed:write', 'inbox:tag', 'inbox:read', 'work:read', 'mapflow:token'],
  'fail-job': [...JOB_TASK, 'failed:write', 'inbox:tag', 'inbox:read', 'work:read'],
  // Frees a failed job's slots and hands them to the oldest waiters (SendTaskSuccess); publishes no event.
  'release-job-slots': ['ledger:read', 'ledger:write', 'workflow:respond'],
  // HeadObject fills in etag/size when a notification lacks them, and tells which of two keys exists (404 needs inbox:list).
  dispatch: ['workflow:start', 'inbox:read', 'inbox:list'],
  // Settles lost jobs: ledger, failure report, input tag, event. The inbox sweep lists the inbox (bounded per run),
  // reads the tags of an object without a row (inbox:tag) and starts its execution as dispatch would.
  reconcile: [...JOB_TASK, 'workflow:describe', 'workflow:respond', 'workflow:start', 'failed:write', 'inbox:tag', 'inbox:list'],
};

/** The resources capabilities point at. */
export interface GrantTargets {
  readonly bucket: s3.IBucket;
  readonly prefixes: { readonly inbox: string; readonly results: string; readonly failed: string; readonly work: string };
  readonly ledgerTable: dynamodb.ITable;
  readonly secret: secretsmanager.ISecret;
  readonly eventBus: events.IEventBus;
  /** Only needed for the workflow:* capabilities (the state machine is built after the task functions). */
  readonly stateMachine?: sfn.IStateMachine;
}

export const LEDGER_READ_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DescribeTable',
] as const;
export const LEDGER_WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'] as const;
export const OBJECT_READ_ACTIONS = ['s3:GetObject', 's3:GetObjectVersion'] as const;
export const OBJECT_WRITE_ACTIONS = ['s3:PutObject', 's3:AbortMultipartUpload'] as const;
export const OBJECT_TAG_ACTIONS = [
  's3:GetObjectTagging',
  's3:GetObjectVersionTagging',
  's3:PutObjectTagging',
  's3:PutObjectVersionTagging',
] as const;
const KMS_READ_ACTIONS = ['kms:Decrypt'] as const;
/** What DynamoDB needs of a table's customer-managed key (as aws-dynamodb's own grants). */
const LEDGER_KMS_READ_ACTIONS = ['kms:Decrypt', 'kms:DescribeKey'] as const;
const LEDGER_KMS_WRITE_ACTIONS = ['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:GenerateDataKey'] as const;
const KMS_WRITE_ACTIONS = ['kms:Decrypt', 'kms:GenerateDataKey'] as const;

type ObjectCapability = 'inbox:read' | 'inbox:tag' | 'work:read' | 'work:write' | 'results:write' | 'results:read' | 'failed:write';

/** The object capabilities: the prefix of GrantTargets each is on, its S3 actions and its KMS actions on a customer key. */
const OBJECT_CAPABILITIES: Readonly<Record<ObjectCapability, { prefix: keyof GrantTargets['prefixes']; actions: readonly string[]; kms: readonly string[] }>> = {
  'inbox:read': { prefix: 'inbox', actions: OBJECT_READ_ACTIONS, kms: KMS_READ_ACTIONS },
  'inbox:tag': { prefix: 'inbox', actions: OBJECT_TAG_ACTIONS, kms: [] },
  'work:read': { prefix: 'work', actions: OBJECT_READ_ACTIONS, kms: KMS_READ_ACTIONS },
  'work:write': { prefix: 'work', actions: OBJECT_WRITE_ACTIONS, kms: KMS_WRITE_ACTIONS },
  'results:write': { prefix: 'results', actions: OBJECT_WRITE_ACTIONS, kms: KMS_WRITE_ACTIONS },
  'results:read': { prefix: 'results', actions: OBJECT_READ_ACTIONS, kms: KMS_READ_ACTIONS },
  'failed:write': { prefix: 'failed', actions: OBJECT_WRITE_ACTIONS, kms: KMS_WRITE_ACTIONS },
};

/** Grants one capability. */
export function grantCapability(grantee: iam.IGrantable, capability: Capability, targets: GrantTargets): void {
  const { bucket, prefixes } = targets;
  switch (capability) {
    case 'ledger:read':
      grantLedger(grantee, targets.ledgerTable, LEDGER_READ_ACTIONS);
      return;
    case 'ledger:write':
      grantLedger(grantee, targets.ledgerTable, LEDGER_WRITE_ACTIONS);
      return;
    case 'inbox:read':
    case 'inbox:tag':
    case 'work:read':
    case 'work:write':
    case 'results:write':
    case 'results:read':
    case 'failed:write': {
      const { prefix, actions, kms } = OBJECT_CAPABILITIES[capability];
      grantObjects(grantee, bucket, prefixes[prefix], actions, kms);
      return;
    }
    case 'inbox:list':
      grantListPrefixes(grantee, bucket, [prefixes.inbox]);
      return;
    case 'events:put':
      targets.eventBus.grantPutEventsTo(grantee);
      return;
    case 'mapflow:token':
      // GetSecretValue and DescribeSecret on this secret only (plus kms:Decrypt on its key, if it has one).
      targets.secret.grantRead(grantee);
      return;
    case 'workflow:start':
      requireStateMachine(targets, capability).grantStartExecution(grantee);
      return;
    case 'workflow:describe': {
      const stateMachine = requireStateMachine(targets, capability);
      stateMachine.grantExecution(grantee, 'states:DescribeExecution');
      // ...and on the Distributed Map's child executions, `execution:<machine>/<map run label>:<id>`,
      // which `execution:<machine>:*` does not match: slot rows written by Wait For Slot before it
      // recorded the job's own execution hold a child's ARN. The resource of AWS's policy for
      // Distributed Map (docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html;
      // aws-cdk-lib's StateGraph grants RedriveExecution on `execution:<machine>/<label>` the same way).
      iam.Grant.addToPrincipal({ grantee, actions: ['states:DescribeExecution'], resourceArns: [mapChildExecutionsArn(stateMachine)] });
      iam.Grant.addToPrincipal({ grantee, actions: ['states:ListExecutions'], resourceArns: [stateMachine.stateMachineArn] });
      return;
    }
    case 'workflow:respond': {
      const stack = Stack.of(bucket);
      iam.Grant.addToPrincipal({
        grantee,
        actions: ['states:SendTaskSuccess'],
        resourceArns: [stack.formatArn({ service: 'states', resource: 'stateMachine', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME })],
      });
      return;
    }
  }
}

/** Grants every capability of a function from FUNCTION_CAPABILITIES. */
export function grantFunctionCapabilities(name: BridgeFunctionName, grantee: iam.IGrantable, targets: GrantTargets): void {
  for (const capability of FUNCTION_CAPABILITIES[name]) grantCapability(grantee, capability, targets);
}

/**
 * Ledger actions on the table and its GSIs (`<table>/index/*`), always.
 *
 * `ITable.grant` adds the index ARN only when CDK knows the table has indexes:
 * a table imported by name (`Table.fromTableName`, `-c ledgerTableName=...`)
 * would get no rights on `byStatus`, and the reconciler's Query would be
 * refused. The ledger always has its GSIs (ledgerTableSchema), so grant them
 * explicitly. A customer-managed key of the table gets the matching KMS actions.
 */
export function grantLedger(grantee: iam.IGrantable, table: dynamodb.ITable, actions: readonly string[]): iam.Grant {
  const grant = iam.Grant.addToPrincipal({
    grantee,
    actions: [...actions],
    resourceArns: [table.tableArn, `${table.tableArn}/index/*`],
  });
  if (table.encryptionKey) {
    const writes = actions.some((a) => (LEDGER_WRITE_ACTIONS as readonly string[]).includes(a));
    table.encryptionKey.grant(grantee, ...(writes ? LEDGER_KMS_WRITE_ACTIONS : LEDGER_KMS_READ_ACTIONS));
  }
  return grant;
}

/**
 * Object-level actions on `<bucket>/<prefix>*` only. When the bucket is
 * encrypted with a customer key, the matching KMS actions on that key.
 */
export function grantObjects(
  grantee: iam.IGrantable,
  bucket: s3.IBucket,
  prefix: string,
  actions: readonly string[],
  kmsActions: readonly string[],
): iam.Grant {
  const grant = iam.Grant.addToPrincipal({ grantee, actions: [...actions], resourceArns: [bucket.arnForObjects(`${prefix}*`)] });
  if (bucket.encryptionKey && kmsActions.length > 0) bucket.encryptionKey.grant(grantee, ...kmsActions);
  return grant;
}

/** s3:ListBucket limited to keys under one of the prefixes. */
export function grantListPrefixes(grantee: iam.IGrantable, bucket: s3.IBucket, prefixes: readonly string[]): iam.Grant {
  return iam.Grant.addToPrincipal({
    grantee,
    actions: ['s3:ListBucket'],
    resourceArns: [bucket.bucketArn],
    conditions: { StringLike: { 's3:prefix': prefixes.map((p) => `${p}*`) } },
  });
}

function requireStateMachine(targets: GrantTargets, capability: Capability): sfn.IStateMachine {
  if (!targets.stateMachine) throw new Error(`Capability ${capability} needs the state machine, which is not built yet`);
  return targets.stateMachine;
}

/**
 * `arn:<partition>:states:<region>:<account>:execution:<machine>/*`: every child
 * execution of the machine's Distributed Map Runs (their ARNs are
 * `execution:<machine>/<map run label>:<child id>`; the label is the Map's Label
 * or one Step Functions generates, so it is left open).
 */
export function mapChildExecutionsArn(stateMachine: sfn.IStateMachine): string {
  const machineName = Arn.split(stateMachine.stateMachineArn, ArnFormat.COLON_RESOURCE_NAME).resourceName;
  return Stack.of(stateMachine).formatArn({ service: 'states', resource: 'execution', resourceName: `${machineName}/*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
}
