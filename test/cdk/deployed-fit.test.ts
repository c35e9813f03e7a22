/**
 * Would the deployed stack work, not only synthesize? The template is
 * "deployed" on paper (tests/cdk/deployed-values.ts turns every Ref/GetAtt
 * into the name or ARN the service would return) and checked against what
 * the code does at run time:
 * - each function's environment is accepted by the runtime's own loadConfig
 *   and points at the right resources;
 * - each function's role allows every AWS call its step makes, on the
 *   concrete ARNs it makes it on (a table of calls per function, read off
 *   functions/jobs/steps, functions/handlers, functions/storage, functions/ledger);
 * - the execution ARN the slots and the ledger record is the one the
 *   reconciler may describe; the Distributed Map may start its children;
 * - the template has no dependency cycle (CloudFormation refuses one; synth does not).
 */
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES, TASKS } from '../../functions/core/catalog.ts';
import { executionArnFor } from '../../functions/handlers/reconcile.ts';
import { waitForSlot } from '../../functions/jobs/steps/wait-for-slot.ts';
import { InputRejected, LedgerContention } from '../../functions/core/errors.ts';
import { MapflowOutcomeUnknown, MapflowRateLimited, MapflowUnavailable } from '../../functions/mapflow/errors.ts';
import { GSI_BY_PROCESSING_ID, GSI_BY_SLOT_QUEUE, GSI_BY_STATUS } from '../../functions/ledger/schema.ts';
import { isLocal, loadConfig, type BridgeConfig } from '../../functions/runtime/config.ts';
import { settingsFromContext } from '../../lib/app-context.ts';
import type { BridgeFunctionName } from '../../lib/private/defaults.ts';
import { MapflowBridgeStack } from '../../lib/mapflow-bridge-stack.ts';
import { ACCOUNT, DeployedValues, isAllowed, REGION, type TemplateJson } from './deployed-values.ts';
import { logicalIdOf, statementsOfFunction, synthBridge, type PolicyStatement, type SynthesizedBridge } from './support.ts';

// Prepare (shared): one default bridge, bundling skipped, "deployed" on paper.
let synth: SynthesizedBridge;
let template: TemplateJson;
let deployed: DeployedValues;
let arns: ReturnType<typeof deployedArns>;
beforeAll(() => {
  synth = synthBridge();
  template = synth.template.toJSON() as TemplateJson;
  deployed = new DeployedValues(template);
  arns = deployedArns(synth, deployed);
});

const JOB_ID = 'area-geojson-0123456789abcdef';

/** The names and ARNs the code will call, as deployed. */
function deployedArns(s: SynthesizedBridge, d: DeployedValues) {
  const id = (construct: Parameters<typeof logicalIdOf>[1]) => logicalIdOf(s.stack, construct);
  const bucketArn = d.getAtt(id(s.bridge.bucket), 'Arn');
  const table = d.getAtt(id(s.bridge.ledgerTable), 'Arn');
  const stateMachine = d.ref(id(s.bridge.stateMachine));
  const stateMachineName = stateMachine.split(':')[6]!;
  return {
    bucketName: d.ref(id(s.bridge.bucket)),
    tableName: d.ref(id(s.bridge.ledgerTable)),
    object: {
      inbox: `${bucketArn}/inbox/roads/area.geojson`,
      work: `${bucketArn}/work/${JOB_ID}/part-0.request.json`,
      results: `${bucketArn}/results/roads/area.geojson/area/result.geojson`,
      failed: `${bucketArn}/failed/roads/area.geojson/report.json`,
    },
    table,
    index: {
      byStatus: `${table}/index/${GSI_BY_STATUS}`,
      byProcessingId: `${table}/index/${GSI_BY_PROCESSING_ID}`,
      bySlotQueue: `${table}/index/${GSI_BY_SLOT_QUEUE}`,
    },
    bus: d.getAtt(id(s.bridge.eventBus), 'Arn'),
    secret: d.ref(id(s.bridge.secret)),
    stateMachine,
    stateMachineName,
    /** The top-level execution: dispatch names it after the job; its ARN is what Register Job records. */
    execution: `arn:aws:states:${REGION}:${ACCOUNT}:execution:${stateMachineName}:${JOB_ID}`,
    /** A child execution of the Distributed Map (execution:<state machine>/<map run label>:<child>). */
    mapChild: `arn:aws:states:${REGION}:${ACCOUNT}:execution:${stateMachineName}/Process-Parts-abc:0f1e2d3c-aaaa-bbbb-cccc-000000000000`,
  };
}

type Arns = ReturnType<typeof deployedArns>;
type Call = readonly [action: string, resource: (a: Arns) => string, why: string];

const s3Read = (area: keyof Arns['object'], why: string): Call[] => [
  ['s3:GetObject', (a) => a.object[area], why],
  // Every read passes the event's VersionId (the bucket is versioned): GetObjectVersion is what S3 checks then.
  ['s3:GetObjectVersion', (a) => a.object[area], `${why} (with VersionId)`],
];
/** writeJson is a PutObject; writeStream is lib-storage's Upload: Create/UploadPart/Complete (s3:PutObject) and Abort on error. */
const s3Write = (area: keyof Arns['object'], why: string): Call[] => [
  ['s3:PutObject', (a) => a.object[area], why],
  ['s3:AbortMultipartUpload', (a) => a.object[area], `${why} (Upload abort, leavePartsOnError: false)`],
];
/** tagObject: GetObjectTagging + PutObjectTagging, with VersionId on a versioned input. */
const tagInbox: Call[] = [
  ['s3:GetObjectTagging', (a) => a.object.inbox, 'tagObject reads the tags'],
  ['s3:PutObjectTagging', (a) => a.object.inbox, 'tagObject writes the tags'],
  ['s3:GetObjectVersionTagging', (a) => a.object.inbox, 'tagObject with VersionId'],
  ['s3:PutObjectVersionTagging', (a) => a.object.inbox, 'tagObject with VersionId'],
];
const jobRow: Call[] = [
  ['dynamodb:GetItem', (a) => a.table, 'Ledger.get (consistent read)'],
  ['dynamodb:PutItem', (a) => a.table, 'Ledger.register (conditional put)'],
  ['dynamodb:UpdateItem', (a) => a.table, 'Ledger.transition / update / upsertPart'],
];
/** The `#slots` row: ConcurrencySlots get/put/update. */
const slotsRow: Call[] = [
  ['dynamodb:GetItem', (a) => a.table, 'ConcurrencySlots reads #slots'],
  ['dynamodb:PutItem', (a) => a.table, 'ConcurrencySlots creates #slots'],
  ['dynamodb:UpdateItem', (a) => a.table, 'ConcurrencySlots conditional update of #slots'],
];
/**
 * Admission: a place row `#wait#<holder>` is written, queued and deleted in transactions
 * (TransactWriteItems is authorised item by item: UpdateItem/DeleteItem); a freed slot
 * walks the GSI bySlotQueue and wakes the oldest waiter.
 */
const slotQueue: Call[] = [
  ['dynamodb:Query', (a) => a.index.bySlotQueue, 'ConcurrencySlots.pump walks the queue in order of arrival'],
  ['dynamodb:DeleteItem', (a) => a.table, 'ConcurrencySlots deletes a woken waiter token row'],
  ['states:SendTaskSuccess', (a) => a.stateMachine, 'ConcurrencySlots.pump hands a slot to a waiting task token'],
];
/** `mosaic#<name>` / `project#<name>` rows: NameRegistry get/put. */
const nameRegistry: Call[] = [
  ['dynamodb:GetItem', (a) => a.table, 'NameRegistry.get'],
  ['dynamodb:PutItem', (a) => a.table, 'NameRegistry.claim (conditional put)'],
];
const putEvents: Call = ['events:PutEvents', (a) => a.bus, 'EventPublisher.publish'];
const mapflowSecret: Call = ['secretsmanager:GetSecretValue', (a) => a.secret, 'Powertools SecretsProvider reads the Mapflow token'];

/** Every AWS call each function makes, from the code of its step. */
const CALLS: Record<BridgeFunctionName, readonly Call[]> = {
  // A GeoJSON job takes its place in the slot queue at registration (ConcurrencySlots.reserve).
  'register-job': [...jobRow, ...slotsRow, putEvents],
  'inspect-geotiff': [
    ...s3Read('inbox', 's3RangeSource: ranged GetObject of the header'),
    ['s3:PutObject', (a) => a.object.work, 'writeJson of the footprint of an image it refuses'],
    mapflowSecret,
  ],
  'ensure-mosaic': [...jobRow, ...nameRegistry, putEvents, mapflowSecret],
  'upload-image': [...s3Read('inbox', 'openObjectStream streams the image'), ...jobRow, putEvents, mapflowSecret],
  'plan-processing': [
    ...s3Read('inbox', 'readObjectText of the GeoJSON'),
    ['s3:PutObject', (a) => a.object.work, 'writeJson of the part geometry and request'],
    ...nameRegistry,
    ...jobRow,
    mapflowSecret,
  ],
  'acquire-slot': [...slotsRow, ...jobRow, putEvents],
  'admit-job': [...slotsRow, ...slotQueue, ...jobRow, putEvents],
  'wait-for-slot': [...slotsRow, ...slotQueue, ...jobRow, putEvents],
  'create-processing': [...s3Read('work', 'readWorkJson of the request and geometry'), ...jobRow, putEvents, mapflowSecret],
  // Releases the slot the moment the processing is OK, handing it to the next waiter.
  'poll-processing': [...jobRow, ...slotsRow, ...slotQueue, putEvents, mapflowSecret],
  'restart-processing': [...jobRow, putEvents, mapflowSecret],
  'store-results': [
    ...s3Write('results', 'writeStream of result.geojson, writeJson of job.json'),
    ...s3Write('failed', 'writeStream of partial-result.geojson of a FAILED processing'),
    ...s3Read('work', 'readWorkJson of the request'),
    ...jobRow,
    mapflowSecret,
  ],
  'finish-part': [...jobRow, ...slotsRow, ...slotQueue, putEvents],
  'finish-job': [
    ['s3:PutObject', (a) => a.object.results, 'job.json of the job'],
    ['s3:PutObject', (a) => a.object.failed, 'report.json of a failed job'],
    ...tagInbox,
    ...jobRow,
    putEvents,
    mapflowSecret,
  ],
  'fail-job': [['s3:PutObject', (a) => a.object.failed, 'report.json'], ...tagInbox, ...jobRow, putEvents],
  // ConcurrencySlots.releaseJob: the job's places leave the queue, its holders go, the pump hands the slots on.
  'release-job-slots': [...slotsRow, ...slotQueue],
  dispatch: [
    ['s3:GetObject', (a) => a.object.inbox, 'HeadObject when the event lacks etag/size'],
    ['s3:GetObjectVersion', (a) => a.object.inbox, 'HeadObject with VersionId'],
    ['states:StartExecution', (a) => a.stateMachine, 'StartExecution(name = jobId)'],
  ],
  reconcile: [
    ['dynamodb:Query', (a) => a.index.byStatus, 'Ledger.listByStatus on the byStatus GSI'],
    ...jobRow,
    ...slotsRow,
    ...slotQueue,
    ['s3:PutObject', (a) => a.object.failed, 'report.json of a lost job'],
    ...tagInbox,
    putEvents,
    ['states:ListExecutions', (a) => a.stateMachine, 'the running executions, 1,000 a page (stepFunctionsLiveness.listRunning)'],
    ['states:DescribeExecution', (a) => a.execution, 'liveness of the execution recorded by Register Job / Acquire Slot'],
    // The inbox sweep (functions/jobs/inbox-sweep.ts): ListObjectsV2 is s3:ListBucket under an s3:prefix condition
    // (test/cdk/dispatch-permissions.test.ts); its calls on objects and on the ledger:
    ['dynamodb:GetItem', (a) => a.table, 'which inbox objects have a job row'],
    ['dynamodb:PutItem', (a) => a.table, 'the #inbox-sweep row: where a bounded run stopped'],
    ['states:StartExecution', (a) => a.stateMachine, 'StartExecution(name = jobId) of an object whose notification never came'],
  ],
};

/** A function's statements with every intrinsic resolved to its deployed value. */
function deployedStatements(name: BridgeFunctionName): PolicyStatement[] {
  return deployed.resolve(statementsOfFunction(synth, name)) as PolicyStatement[];
}

/** The synthesized Environment.Variables of a function, resolved. */
function deployedEnvironment(name: BridgeFunctionName): Record<string, string> {
  const id = logicalIdOf(synth.stack, synth.bridge.functions[name]);
  const fn = template.Resources[id]!;
  const variables = (fn.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
  return deployed.resolve(variables) as Record<string, string>;
}

describe('IAM: every call of every step is allowed on the resource it is made on', () => {
  it('the table lists every function', () => {
    expect(Object.keys(CALLS).sort()).toEqual([...HANDLER_NAMES].sort());
  });

  it.each(HANDLER_NAMES)('%s', (name) => {
    // Act
    const statements = deployedStatements(name);
    const denied = CALLS[name].filter(([action, resource]) => !isAllowed(statements, action, resource(arns)));

    // Assess
    expect(denied.map(([action, resource, why]) => `${action} on ${resource(arns)} (${why})`)).toEqual([]);
  });

  it('the evaluator refuses what no statement allows (the checks above can fail)', () => {
    // Act
    const storeResults = deployedStatements('store-results');
    const dispatch = deployedStatements('dispatch');

    // Assess
    expect(isAllowed(storeResults, 's3:PutObject', arns.object.results)).toBe(true);
    expect(isAllowed(storeResults, 's3:PutObject', arns.object.inbox)).toBe(false);
    expect(isAllowed(storeResults, 's3:GetObject', arns.object.inbox)).toBe(false);
    expect(isAllowed(dispatch, 'dynamodb:PutItem', arns.table)).toBe(false);
    expect(isAllowed(dispatch, 'states:StartExecution', arns.stateMachine.replace(/[^:]+$/, 'Other'))).toBe(false);
  });
});

describe('environment: the runtime accepts what the stack passes', () => {
  it.each(HANDLER_NAMES)('%s: loadConfig accepts the deployed environment and it names the deployed resources', (name) => {
    // Prepare: Lambda adds AWS_REGION itself.
    const env = { ...deployedEnvironment(name), AWS_REGION: REGION };

    // Act
    let config: BridgeConfig | undefined;
    expect(() => (config = loadConfig(env))).not.toThrow();

    // Assess
    expect(isLocal(config!)).toBe(false);
    expect(config!.ledgerTable).toBe(arns.tableName);
    expect(config!.eventBusName).toBe(arns.bus);
    expect(config!.mapflow.secretArn).toBe(arns.secret);
    expect(config!.prefixes).toEqual({ inbox: 'inbox/', results: 'results/', failed: 'failed/', work: 'work/' });
    if (name === 'dispatch' || name === 'reconcile') expect(config!.stateMachineArn).toBe(arns.stateMachine);
    else expect(config!.stateMachineArn).toBeUndefined();
  });

  it.each(HANDLER_NAMES)('%s: sets no variable Lambda reserves and no local-mode setting', (name) => {
    // Act
    const keys = Object.keys(deployedEnvironment(name));

    // Assess: CloudFormation refuses reserved keys (AWS_REGION, _HANDLER...); local settings would redirect the clients.
    const reserved = keys.filter((k) => /^(AWS_|_HANDLER$|_X_AMZN_TRACE_ID$|LAMBDA_|TZ$)/.test(k));
    const local = keys.filter((k) => ['BRIDGE_S3_ENDPOINT', 'BRIDGE_DYNAMODB_ENDPOINT', 'BRIDGE_EVENTS_FILE', 'MAPFLOW_TOKEN', 'MAPFLOW_EMAIL'].includes(k));
    expect([...reserved, ...local]).toEqual([]);
    // Lambda caps the environment at 4 KB.
    expect(Buffer.byteLength(JSON.stringify(deployedEnvironment(name)))).toBeLessThan(4096);
  });

  it('loadConfig refuses a wrong value (the check above can fail)', () => {
    const env = { ...deployedEnvironment('dispatch'), STATE_MACHINE_ARN: arns.stateMachineName, AWS_REGION: REGION };
    expect(() => loadConfig(env)).toThrow(/STATE_MACHINE_ARN/);
  });
});

describe('executions: what is recorded is what the reconciler may describe', () => {
  /** The deployed definition, parsed. */
  function definition(): { States: Record<string, Record<string, any>> } {
    const id = logicalIdOf(synth.stack, synth.bridge.stateMachine);
    return JSON.parse(deployed.resolve(template.Resources[id]!.Properties!.DefinitionString) as string);
  }

  it('Register Job is a top-level state and records the parent execution ($$.Execution.Id), which the Map passes to every part', () => {
    // Act
    const states = definition().States;
    const processParts = states['Process Parts']!;

    // Assess: the recorded ARN is the top-level one (execution:<machine>:<jobId>), never a child's.
    expect(states['Register Job']!.Parameters['executionArn.$']).toBe('$$.Execution.Id');
    expect(Object.keys(processParts.ItemProcessor.States)).not.toContain('Register Job');
    expect(processParts.ItemProcessor.ProcessorConfig.Mode).toBe('DISTRIBUTED');
    // Acquire Slot records job.executionArn: the Register Job result, passed whole to each item.
    expect(processParts.ItemSelector['job.$']).toBe('$.job');
    expect(processParts.ItemSelector['part.$']).toBe('$$.Map.Item.Value');
  });

  it('the reconciler may describe the recorded execution, and the one it derives from STATE_MACHINE_ARN for a row without one', () => {
    // Prepare
    const statements = deployedStatements('reconcile');
    const config = loadConfig({ ...deployedEnvironment('reconcile'), AWS_REGION: REGION });

    // Act
    const derived = executionArnFor(config.stateMachineArn, JOB_ID);

    // Assess
    expect(derived).toBe(arns.execution);
    expect(isAllowed(statements, 'states:DescribeExecution', arns.execution)).toBe(true);
    // ...and nothing of another state machine.
    expect(isAllowed(statements, 'states:DescribeExecution', arns.execution.replace(arns.stateMachineName, 'Other'))).toBe(false);
    // The listing it starts from is of this state machine only.
    expect(config.stateMachineArn).toBe(arns.stateMachine);
    expect(isAllowed(statements, 'states:ListExecutions', arns.stateMachine)).toBe(true);
    expect(isAllowed(statements, 'states:ListExecutions', arns.stateMachine.replace(arns.stateMachineName, 'Other'))).toBe(false);
  });

  it('Wait For Slot, run as a Map Run child, records an execution the reconciler may describe (issue 37 point 1)', async () => {
    // Prepare: the state Wait For Slot gets inside the Map, as AWS fills it in: `job` is
    // the ItemSelector's $.job (the Register Job result, with the parent's ARN), and
    // `executionArn` is $$.Execution.Id, which in a child execution is the child's own
    // ARN, execution:<machine>/<map run label>:<id> (the resource of
    // docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html).
    const statements = deployedStatements('reconcile');
    const tokenState = definition().States['Process Parts']!.ItemProcessor.States['Wait For Slot']!;
    expect(tokenState.Parameters.Payload['executionArn.$']).toBe('$$.Execution.Id');
    const recorded: string[] = [];
    const slots = {
      acquire: async (_holder: string, executionArn: string) => (recorded.push(executionArn), { acquired: false, inUse: 1 }),
      enqueue: async (waiter: { executionArn: string }) => (recorded.push(waiter.executionArn), 'acquired' as const),
    };
    const job = { jobId: JOB_ID, kind: 'geojson', createdAt: '2025-01-01T00:00:00.000Z', executionArn: arns.execution };
    const ctx = { slots, now: () => new Date(), config: { maxConcurrentProcessings: 1 } } as unknown as Parameters<typeof waitForSlot>[1];

    // Act
    await waitForSlot({ job: job as never, part: { index: 1 }, taskToken: 'token', executionArn: arns.mapChild }, ctx);

    // Assess: the job's own execution is recorded (one ListExecutions page answers for it)...
    expect(recorded).toEqual([arns.execution, arns.execution]);
    for (const executionArn of recorded) expect(isAllowed(statements, 'states:DescribeExecution', executionArn)).toBe(true);
    // ...and a child's ARN, which slot rows written before this fix hold, may be described too,
    expect(isAllowed(statements, 'states:DescribeExecution', arns.mapChild)).toBe(true);
    // while `execution:<machine>:*` alone would not have matched it (the bug).
    expect(isAllowed([{ Effect: 'Allow', Action: 'states:DescribeExecution', Resource: `${arns.execution.slice(0, arns.execution.lastIndexOf(':'))}:*` }], 'states:DescribeExecution', arns.mapChild)).toBe(false);
    expect(isAllowed(statements, 'states:DescribeExecution', arns.mapChild.replace(arns.stateMachineName, 'Other'))).toBe(false);
  });

  it('the state machine may run its Distributed Map: start itself, describe/stop its executions, redrive map runs', () => {
    // Prepare
    const role = synth.bridge.stateMachine.role;
    const roleId = logicalIdOf(synth.stack, role);
    const statements = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && (r.Properties!.Roles as { Ref: string }[]).some((x) => x.Ref === roleId))
      .flatMap((r) => (deployed.resolve(r.Properties!.PolicyDocument) as { Statement: PolicyStatement[] }).Statement);

    // Assess (the policy of docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html)
    expect(isAllowed(statements, 'states:StartExecution', arns.stateMachine)).toBe(true);
    expect(isAllowed(statements, 'states:DescribeExecution', arns.execution)).toBe(true);
    expect(isAllowed(statements, 'states:StopExecution', arns.execution)).toBe(true);
    expect(isAllowed(statements, 'states:RedriveExecution', arns.mapChild)).toBe(true);
    for (const [, fn] of Object.entries(synth.bridge.functions).filter(([n]) => n !== 'dispatch' && n !== 'reconcile')) {
      expect(isAllowed(statements, 'lambda:InvokeFunction', deployed.getAtt(logicalIdOf(synth.stack, fn), 'Arn'))).toBe(true);
    }
  });
});

describe('bring your own ledger table', () => {
  it('a table imported by name still gets the GSI rights the reconciler and the ledger queries need', () => {
    // Prepare: Table.fromTableName knows nothing of the table's indexes (what -c ledgerTableName does).
    const own = synthBridge((stack) => ({ ledgerTable: dynamodb.Table.fromTableName(stack, 'Mine', 'my-ledger') }));
    const values = new DeployedValues(own.template.toJSON() as TemplateJson);
    const statements = values.resolve(statementsOfFunction(own, 'reconcile')) as PolicyStatement[];
    const table = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/my-ledger`;

    // Assess
    expect(isAllowed(statements, 'dynamodb:Query', `${table}/index/${GSI_BY_STATUS}`)).toBe(true);
    expect(isAllowed(statements, 'dynamodb:UpdateItem', table)).toBe(true);
    expect(isAllowed(statements, 'dynamodb:Query', `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/other/index/${GSI_BY_STATUS}`)).toBe(false);
  });

  it('a table with a customer-managed key gets the KMS actions DynamoDB needs', () => {
    // Prepare
    const own = synthBridge((stack) => ({
      ledgerTable: dynamodb.Table.fromTableAttributes(stack, 'Mine', {
        tableName: 'my-ledger',
        encryptionKey: kms.Key.fromKeyArn(stack, 'Key', `arn:aws:kms:${REGION}:${ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab`),
      }),
    }));
    const statements = new DeployedValues(own.template.toJSON() as TemplateJson).resolve(statementsOfFunction(own, 'acquire-slot')) as PolicyStatement[];
    const key = `arn:aws:kms:${REGION}:${ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab`;

    // Assess
    for (const action of ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey']) expect(isAllowed(statements, action, key)).toBe(true);
  });
});

describe('bring your own bucket from context (-c bucketName, -c bucketKmsKeyArn)', () => {
  it('an SSE-KMS bucket named in context gets the KMS actions its reads and multipart writes need', () => {
    // Prepare: what bin/app.ts builds from `-c bucketName=drop -c bucketKmsKeyArn=...`.
    const key = `arn:aws:kms:${REGION}:${ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab`;
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [], bucketName: 'drop-bucket', bucketKmsKeyArn: key } });
    const { stackName, existing, ...bridge } = settingsFromContext(app);
    const stack = new MapflowBridgeStack(app, stackName, { bridge, existing });
    const own: SynthesizedBridge = { app, stack, bridge: stack.bridge, template: Template.fromStack(stack) };
    const values = new DeployedValues(own.template.toJSON() as TemplateJson);
    const allowed = (fn: BridgeFunctionName, action: string, resource: string) =>
      isAllowed(values.resolve(statementsOfFunction(own, fn)) as PolicyStatement[], action, resource);

    // Assess
    expect(allowed('store-results', 'kms:GenerateDataKey', key)).toBe(true);
    expect(allowed('store-results', 'kms:Decrypt', key)).toBe(true); // multipart uploads to SSE-KMS need Decrypt too
    expect(allowed('plan-processing', 'kms:Decrypt', key)).toBe(true);
    expect(allowed('upload-image', 'kms:Decrypt', key)).toBe(true);
    expect(allowed('store-results', 's3:PutObject', 'arn:aws:s3:::drop-bucket/results/a.geojson/a/result.geojson')).toBe(true);
    expect(allowed('register-job', 'kms:Decrypt', key)).toBe(false);
  });
});

describe('Retry and Catch match what the handlers throw', () => {
  /** Lambda reports a thrown error's `name` as errorType, the name Retry/Catch match. */
  const THROWN: Record<string, Error> = {
    MapflowUnavailable: new MapflowUnavailable('down', { method: 'GET', path: '/x' }),
    MapflowRateLimited: new MapflowRateLimited('slow down', { method: 'GET', path: '/x' }),
    MapflowOutcomeUnknown: new MapflowOutcomeUnknown('lost', { method: 'POST', path: '/x' }),
    LedgerContention: new LedgerContention('contended'),
  };

  it('every Task retries the Lambda service errors AWS advises and exactly the transient error names the code throws', () => {
    // Prepare
    const id = logicalIdOf(synth.stack, synth.bridge.stateMachine);
    const definition = JSON.parse(deployed.resolve(template.Resources[id]!.Properties!.DefinitionString) as string);
    const tasks = [
      ...Object.entries(definition.States as Record<string, any>),
      ...Object.entries(definition.States['Process Parts'].ItemProcessor.States as Record<string, any>),
    ].filter(([, state]) => state.Type === 'Task');

    // Act
    const retried = new Set(tasks.flatMap(([, state]) => (state.Retry as { ErrorEquals: string[] }[]).flatMap((r) => r.ErrorEquals)));

    // Assess
    expect(tasks).toHaveLength(TASKS.length);
    for (const lambdaError of ['Lambda.ServiceException', 'Lambda.AWSLambdaException', 'Lambda.SdkClientException', 'Lambda.ClientExecutionTimeoutException']) {
      expect(retried.has(lambdaError), lambdaError).toBe(true);
    }
    const own = [...retried].filter((e) => !e.startsWith('Lambda.'));
    expect(own.sort()).toEqual(Object.keys(THROWN).sort());
    for (const [name, error] of Object.entries(THROWN)) expect(error.name).toBe(name);
    // A rejection is final: retrying it would only repeat the refusal.
    expect(new InputRejected('NO_ROUTE', 'x').name).toBe('InputRejected');
    expect(retried.has('InputRejected')).toBe(false);
    // Every Task but the catch targets ends in Finish Part / Fail Job on any error; a failed Fail Job
    // still releases the job's slots; Release Job Slots is the last step (failing, the reconciler frees them).
    const catchTargets = ['Finish Part', 'Fail Job', 'Release Job Slots'];
    for (const [name, state] of tasks.filter(([n]) => !catchTargets.includes(n))) {
      expect(state.Catch, name).toEqual([expect.objectContaining({ ErrorEquals: ['States.ALL'], ResultPath: '$.error' })]);
    }
    const byName = Object.fromEntries(tasks);
    expect(byName['Fail Job']?.Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.failJobError', Next: 'Release Job Slots' }]);
    expect(byName['Release Job Slots']?.Catch).toBeUndefined();
  });
});

describe('CloudFormation', () => {
  it('the template has no dependency cycle (Ref, GetAtt, Sub and DependsOn)', () => {
    // Act
    const cycle = findCycle(template);

    // Assess
    expect(cycle).toBeUndefined();
  });

  it('the cycle finder finds a cycle (the check above can fail)', () => {
    const looped: TemplateJson = {
      Resources: {
        A: { Type: 'AWS::IAM::Policy', Properties: { Roles: [{ Ref: 'B' }] } },
        B: { Type: 'AWS::IAM::Role', Properties: { Description: { 'Fn::GetAtt': ['A', 'Arn'] } } },
      },
    };
    expect(findCycle(looped)).toEqual(['A', 'B', 'A']);
  });
});

/** A dependency cycle between resources, as CloudFormation computes dependencies; undefined when there is none. */
function findCycle(t: TemplateJson & { Resources: Record<string, { DependsOn?: string | string[] }> }): string[] | undefined {
  const edges = new Map<string, Set<string>>();
  const collect = (value: unknown, into: Set<string>): void => {
    if (Array.isArray(value)) for (const v of value) collect(v, into);
    else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (k === 'Ref' && typeof v === 'string') into.add(v);
        else if (k === 'Fn::GetAtt') into.add(Array.isArray(v) ? String(v[0]) : String(v).split('.')[0]!);
        else if (k === 'Fn::Sub' && typeof v === 'string') for (const m of v.matchAll(/\$\{([^}.!]+)/g)) into.add(m[1]!);
        else collect(v, into);
      }
    }
  };
  for (const [id, resource] of Object.entries(t.Resources)) {
    const deps = new Set<string>();
    collect(resource.Properties ?? {}, deps);
    for (const d of [resource.DependsOn ?? []].flat()) deps.add(d);
    edges.set(id, new Set([...deps].filter((d) => d in t.Resources)));
  }
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string, path: string[]): string[] | undefined => {
    state.set(id, 'visiting');
    for (const next of edges.get(id) ?? []) {
      if (state.get(next) === 'visiting') return [...path.slice(path.indexOf(next)), next];
      if (!state.has(next)) {
        const found = visit(next, [...path, next]);
        if (found) return found;
      }
    }
    state.set(id, 'done');
    return undefined;
  };
  for (const id of edges.keys()) {
    if (!state.has(id)) {
      const found = visit(id, [id]);
      if (found) return found;
    }
  }
  return undefined;
}
