/**
 * The local stand-ins the bundles call through AWS_ENDPOINT_URL_<SERVICE>
 * (packages/local/src/assembly/services.ts), spoken to with the real AWS SDK clients as
 * the bundles speak to them: the shapes and error codes AWS answers, and the
 * `authorize` hook of local IAM refusing a request before it is served.
 * Also the trigger's SQS delivery (batch size, partial batch failures,
 * maxReceiveCount and the dead-letter queue) and the scheduled event.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { DescribeExecutionCommand, ListExecutionsCommand, SFNClient, SendTaskSuccessCommand, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalEngine } from '../../src/engine/engine.ts';
import { LambdaFunctionError } from '../../src/engine/lambda.ts';
import { LocalTaskTokens } from '../../src/engine/task-tokens.ts';
import type { RunningEndpoint } from '../../src/assembly/aws-endpoint.ts';
import type { LocalFunction } from '../../src/assembly/functions.ts';
import { startEventBridgeEndpoint, startSecretsManagerEndpoint, startStepFunctionsEndpoint } from '../../src/assembly/services.ts';
import type { TriggerSpec } from '../../src/assembly/template.ts';
import { LocalTrigger, matchesPattern, objectCreatedEvent, scheduledEvent } from '../../src/assembly/trigger.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const client = { region: 'us-east-1', credentials };

const running: RunningEndpoint[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((endpoint) => endpoint.close()));
});
/** The error a call rejects with (awaited at once: no unhandled rejection while other calls run). */
const failure = (promise: Promise<unknown>): Promise<unknown> => promise.then(() => new Error('resolved'), (error: unknown) => error);

const started = async (endpoint: Promise<RunningEndpoint>) => {
  const value = await endpoint;
  running.push(value);
  return value;
};

/** A one-state machine whose Task echoes its input. */
function echoEngine(taskTokens = new LocalTaskTokens()): LocalEngine {
  return new LocalEngine({
    definition: { StartAt: 'Echo', States: { Echo: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:000000000000:function:echo', End: true } } },
    taskResources: { Echo: async (input) => input },
    taskTokens,
  });
}

describe('the local Step Functions endpoint', () => {
  it('starts, describes and lists executions, and answers ExecutionAlreadyExists and ExecutionDoesNotExist as AWS does', async () => {
    // Prepare
    const engine = echoEngine();
    const { endpoint } = await started(startStepFunctionsEndpoint({ engine, taskTokens: engine.taskTokens }));
    const sfn = new SFNClient({ ...client, endpoint });

    // Act
    const first = await sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'job-1', input: '{"a":1}' }));
    await engine.idle();
    const again = await failure(sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'job-1', input: '{"a":1}' })));
    const described = await sfn.send(new DescribeExecutionCommand({ executionArn: first.executionArn }));
    const listed = await sfn.send(new ListExecutionsCommand({ stateMachineArn: engine.stateMachineArn, statusFilter: 'SUCCEEDED' }));
    const missing = await failure(sfn.send(new DescribeExecutionCommand({ executionArn: `${first.executionArn}-not` })));
    const otherMachine = await failure(sfn.send(new StartExecutionCommand({ stateMachineArn: `${engine.stateMachineArn}-other`, name: 'x', input: '{}' })));

    // Assess
    expect(first.executionArn).toBe('arn:aws:states:us-east-1:000000000000:execution:mapflow-bridge:job-1');
    expect(first.startDate).toBeInstanceOf(Date);
    expect(again).toMatchObject({ name: 'ExecutionAlreadyExists' });
    expect(described).toMatchObject({ name: 'job-1', status: 'SUCCEEDED', input: '{"a":1}', output: '{"a":1}' });
    expect(listed.executions?.map((e) => e.name)).toEqual(['job-1']);
    expect(missing).toMatchObject({ name: 'ExecutionDoesNotExist' });
    expect(otherMachine).toMatchObject({ name: 'StateMachineDoesNotExist' });
    await engine.close();
  });

  it('refuses a StartExecution input above 256 KiB with a ValidationException, starting nothing (issue 37 point 3)', async () => {
    // Prepare: StartExecution `input` has a maximum length of 262,144 UTF-8 bytes (API reference)
    const engine = echoEngine();
    const { endpoint } = await started(startStepFunctionsEndpoint({ engine, taskTokens: engine.taskTokens }));
    const sfn = new SFNClient({ ...client, endpoint });
    const over = JSON.stringify({ big: 'é'.repeat(131_072) });

    // Act
    const refused = await failure(sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'job-big', input: over })));

    // Assess
    expect(Buffer.byteLength(over, 'utf8')).toBeGreaterThan(262_144);
    expect(over.length).toBeLessThan(262_144);
    expect(refused).toMatchObject({ name: 'ValidationException' });
    expect(engine.describe('job-big')).toBeUndefined();
    await engine.close();
  });

  it('settles a task token with SendTaskSuccess and answers TaskDoesNotExist for a settled one', async () => {
    // Prepare
    const taskTokens = new LocalTaskTokens();
    const engine = echoEngine(taskTokens);
    const { endpoint } = await started(startStepFunctionsEndpoint({ engine, taskTokens }));
    const sfn = new SFNClient({ ...client, endpoint });
    const { token, settled } = taskTokens.create('job-1');

    // Act
    await sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{"acquired":true}' }));
    const twice = await failure(sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })));

    // Assess
    await expect(settled).resolves.toEqual({ acquired: true });
    expect(twice).toMatchObject({ name: 'TaskDoesNotExist' });
    await engine.close();
  });

  it('lets the authorize hook refuse a request with an AWS-shaped AccessDeniedException before it is served', async () => {
    // Prepare
    const engine = echoEngine();
    const seen: string[] = [];
    const { endpoint } = await started(
      startStepFunctionsEndpoint({
        engine,
        taskTokens: engine.taskTokens,
        authorize: (request, raw) => {
          seen.push(`${String(request.headers['x-amz-target'])} ${raw.toString('utf8')}`);
          return { status: 403, code: 'AccessDeniedException', message: 'not allowed: states:StartExecution' };
        },
      }),
    );
    const sfn = new SFNClient({ ...client, endpoint });

    // Act
    const refused = await failure(sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'job-2', input: '{}' })));

    // Assess
    expect(refused).toMatchObject({ name: 'AccessDeniedException', $metadata: { httpStatusCode: 403 } });
    expect(seen[0]).toMatch(/^AWSStepFunctions\.StartExecution \{.*"name":"job-2"/);
    expect(engine.describe('job-2')).toBeUndefined();
    await engine.close();
  });
});

describe('the local EventBridge endpoint', () => {
  it('appends PutEvents entries to the events file as the local event records, and refuses an unknown bus', async () => {
    // Prepare
    const eventsFile = path.join(testTmp(), `events-${process.pid}-${Date.now()}.jsonl`);
    const bus = { name: 'MapflowBridgeEventBus', arn: 'arn:aws:events:us-east-1:000000000000:event-bus/MapflowBridgeEventBus' };
    const { endpoint } = await started(startEventBridgeEndpoint({ eventsFile, buses: [bus] }));
    const events = new EventBridgeClient({ ...client, endpoint });
    const at = new Date('2026-11-26T10:00:00.000Z');

    // Act
    const answer = await events.send(
      new PutEventsCommand({ Entries: [{ Source: 'mapflow.bridge', DetailType: 'Job Succeeded', Detail: '{"jobId":"j1"}', EventBusName: bus.arn, Time: at }] }),
    );
    const unknown = await failure(events.send(new PutEventsCommand({ Entries: [{ Source: 's', DetailType: 'd', Detail: '{}', EventBusName: 'nope' }] })));
    const malformed = await events.send(new PutEventsCommand({ Entries: [{ Source: 's', DetailType: 'd', Detail: 'not json', EventBusName: bus.name }] }));

    // Assess
    expect(answer.FailedEntryCount).toBe(0);
    expect(answer.Entries?.[0]?.EventId).toMatch(/^[0-9a-f-]{36}$/);
    const lines = (await readFile(eventsFile, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as unknown);
    expect(lines).toEqual([{ time: at.toISOString(), source: 'mapflow.bridge', detailType: 'Job Succeeded', detail: { jobId: 'j1' } }]);
    expect(unknown).toMatchObject({ name: 'ResourceNotFoundException' });
    expect(malformed).toMatchObject({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'MalformedDetail' }] });
  });
});

describe('the local Secrets Manager endpoint', () => {
  it("serves the template's secret by ARN and by name, and answers ResourceNotFoundException for another", async () => {
    // Prepare
    const arn = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:BridgeMapflowSecret-LOCAL0';
    let token = 'first-token';
    const { endpoint } = await started(startSecretsManagerEndpoint({ secrets: [{ name: 'BridgeMapflowSecret', arn, value: () => JSON.stringify({ token }) }] }));
    const secrets = new SecretsManagerClient({ ...client, endpoint });

    // Act
    const byArn = await secrets.send(new GetSecretValueCommand({ SecretId: arn }));
    token = 'rotated-token';
    const byName = await secrets.send(new GetSecretValueCommand({ SecretId: 'BridgeMapflowSecret' }));
    const other = await failure(secrets.send(new GetSecretValueCommand({ SecretId: 'other' })));

    // Assess
    expect(byArn).toMatchObject({ ARN: arn, Name: 'BridgeMapflowSecret', SecretString: '{"token":"first-token"}', VersionStages: ['AWSCURRENT'] });
    expect(byName.SecretString).toBe('{"token":"rotated-token"}');
    expect(other).toMatchObject({ name: 'ResourceNotFoundException' });
  });
});

const TRIGGER: TriggerSpec = {
  ruleArn: 'arn:aws:events:us-east-1:000000000000:rule/Inbox',
  eventPattern: { source: ['aws.s3'], 'detail-type': ['Object Created'], detail: { bucket: { name: ['bucket'] }, object: { key: [{ prefix: 'inbox/' }] } } },
  queue: { logicalId: 'Q', name: 'Q', url: 'https://sqs.us-east-1.amazonaws.com/000000000000/Q', arn: 'arn:aws:sqs:us-east-1:000000000000:Q', visibilityTimeoutSeconds: 0, maxReceiveCount: 2 },
  batchSize: 3,
  reportBatchItemFailures: true,
  functionLogicalId: 'Dispatch',
};

const created = (key: string) => ({ eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bucket' }, object: { key, size: 1, eTag: '"abc"' } } });

/** A dispatch function that records its events and answers with `answer`. */
function recordingDispatch(answer: (event: SQSEvent) => unknown): { fn: LocalFunction; events: SQSEvent[] } {
  const events: SQSEvent[] = [];
  const fn = { invoke: async (event: unknown) => { events.push(event as SQSEvent); return answer(event as SQSEvent); } } as unknown as LocalFunction;
  return { fn, events };
}

describe('the trigger: S3 -> EventBridge rule -> SQS -> dispatch', () => {
  it('delivers the S3 "Object Created" event in SQS batches of the mapping\'s batch size, only for keys the rule matches', async () => {
    // Prepare
    const { fn, events } = recordingDispatch(() => ({ batchItemFailures: [] }));
    const trigger = new LocalTrigger({ spec: TRIGGER, dispatch: fn, log: () => undefined });

    // Act: five objects in the inbox, one outside it, one in another bucket
    for (const key of ['inbox/a b.geojson', 'inbox/b', 'inbox/c', 'inbox/d', 'inbox/e', 'results/x']) trigger.onS3Record(created(key));
    trigger.onS3Record({ ...created('inbox/f'), s3: { bucket: { name: 'other' }, object: { key: 'inbox/f' } } });
    await trigger.idle();

    // Assess
    expect(events.map((event) => event.Records.length)).toEqual([3, 2]);
    const record = events[0]?.Records[0];
    expect(record).toMatchObject({ eventSource: 'aws:sqs', eventSourceARN: TRIGGER.queue.arn, awsRegion: 'us-east-1', attributes: { ApproximateReceiveCount: '1' } });
    const body = JSON.parse(record?.body ?? '{}') as { source: string; 'detail-type': string; detail: { bucket: { name: string }; object: { key: string; etag: string } } };
    expect(body).toMatchObject({ source: 'aws.s3', 'detail-type': 'Object Created', detail: { bucket: { name: 'bucket' }, object: { key: 'inbox/a+b.geojson', etag: 'abc' } } });
    expect(trigger.pending).toBe(0);
    await trigger.close();
  });

  it('redelivers the messages a batch reports as failed and moves one received maxReceiveCount times to the dead-letter queue', async () => {
    // Prepare: dispatch fails 'inbox/bad' every time, and a whole batch once by throwing
    let thrown = false;
    const { fn, events } = recordingDispatch((event) => {
      if (!thrown) {
        thrown = true;
        throw new LambdaFunctionError('Sandbox.Timedout', 'Task timed out after 30.00 seconds');
      }
      return { batchItemFailures: event.Records.filter((r) => r.body.includes('inbox/bad')).map((r) => ({ itemIdentifier: r.messageId })) };
    });
    const logs: string[] = [];
    const trigger = new LocalTrigger({ spec: TRIGGER, dispatch: fn, log: (line) => logs.push(line) });

    // Act
    trigger.onS3Record(created('inbox/good'));
    trigger.onS3Record(created('inbox/bad'));
    await trigger.idle();
    // The visibility timeout is 0 here: each retry is delivered at once.
    while (trigger.deadLetters.length === 0) await new Promise((resolve) => setImmediate(resolve)).then(() => trigger.idle());

    // Assess: batch 1 threw (both back), batch 2 kept 'bad', then 'bad' went to the DLQ after 2 receives
    expect(events.map((event) => event.Records.map((r) => `${JSON.parse(r.body).detail.object.key}#${r.attributes.ApproximateReceiveCount}`))).toEqual([
      ['inbox/good#1', 'inbox/bad#1'],
      ['inbox/good#2', 'inbox/bad#2'],
    ]);
    expect(trigger.deadLetters.map((body) => (JSON.parse(body) as { detail: { object: { key: string } } }).detail.object.key)).toEqual(['inbox/bad']);
    expect(logs.some((line) => line.includes('dead-letter queue'))).toBe(true);
    await trigger.close();
  });

  it('matches EventBridge patterns by value, prefix and nesting', () => {
    // Act + Assess
    const event = objectCreatedEvent(created('inbox/x.tif'));
    expect(matchesPattern(TRIGGER.eventPattern, event)).toBe(true);
    expect(matchesPattern({ detail: { object: { key: [{ prefix: 'results/' }] } } }, event)).toBe(false);
    expect(matchesPattern({ 'detail-type': ['Object Deleted'] }, event)).toBe(false);
    expect(matchesPattern({ detail: { object: { key: [{ wildcard: '*' }] } } }, event)).toBe(false);
  });

  it('gives the reconcile function the Scheduled Event of its rule', () => {
    // Act
    const event = scheduledEvent({ ruleArn: 'arn:aws:events:us-east-1:000000000000:rule/Reconcile', expression: 'rate(15 minutes)', functionLogicalId: 'R', retryAttempts: 2, asyncRetryAttempts: 2 });

    // Assess
    expect(event).toMatchObject({ 'detail-type': 'Scheduled Event', source: 'aws.events', account: '000000000000', region: 'us-east-1', resources: ['arn:aws:events:us-east-1:000000000000:rule/Reconcile'], detail: {} });
    expect(event.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});
