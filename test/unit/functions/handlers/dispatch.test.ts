import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { ExecutionAlreadyExists, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { SQSEvent } from 'aws-lambda';
import {
  dispatchObjectCreated,
  handleSqsBatch,
  objectsFromMessage,
  stepFunctionsStarter,
} from '../../../../functions/handlers/dispatch.ts';
import type { ExecutionInput } from '../../../../functions/core/model.ts';
import { jobIdFor } from '../../../../functions/routing/index.ts';
import { loadConfig } from '../../../../functions/runtime/config.ts';
import { createBridgeContext } from '../../../../functions/runtime/context.ts';
import { createLogger } from '../../../../functions/runtime/logger.ts';
import { captureLogs, type CapturedLogs } from '../../../support/logs.ts';

const STATE_MACHINE_ARN = 'arn:aws:states:eu-west-1:123456789012:stateMachine:mapflow-bridge';
const sfn = mockClient(SFNClient);
const s3 = mockClient(S3Client);
// The mocks patch the SDK clients' prototypes: put them back for the next file in this worker (vitest.config.ts, project 'shared').
afterAll(() => {
  sfn.restore(); s3.restore();
});

function context(env: Record<string, string> = {}) {
  const config = loadConfig({ LEDGER_TABLE: 'ledger', STATE_MACHINE_ARN, AWS_REGION: 'eu-west-1', ...env });
  return createBridgeContext({ config, logger: createLogger({ serviceName: 'dispatch-test' }) });
}

/** An EventBridge "Object Created" event as S3 sends it (key form-URL-encoded). */
function eventBridgeBody(encodedKey: string, extra: Record<string, unknown> = {}) {
  return {
    version: '0',
    id: '17793124-05d4-b198-2fde-7ededc63b103',
    'detail-type': 'Object Created',
    source: 'aws.s3',
    account: '123456789012',
    time: '2025-01-01T00:00:00Z',
    region: 'eu-west-1',
    resources: ['arn:aws:s3:::drop'],
    detail: {
      version: '0',
      bucket: { name: 'drop' },
      object: { key: encodedKey, size: 1234, etag: 'b1946ac92492d2347c6235b4d2611184', 'version-id': 'v-1', sequencer: '617f08299329d189', ...extra },
      'request-id': 'N4N7GDK58NMKJ12R',
      reason: 'PutObject',
    },
  };
}

function sqs(...bodies: unknown[]): SQSEvent {
  return {
    Records: bodies.map((body, i) => ({
      messageId: `m-${i}`,
      receiptHandle: `r-${i}`,
      body: typeof body === 'string' ? body : JSON.stringify(body),
      attributes: {} as never,
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:dispatch',
      awsRegion: 'eu-west-1',
    })),
  };
}

/** Step Functions' rule: one execution per name, whoever asks first. */
function uniqueNames() {
  const names = new Set<string>();
  sfn.on(StartExecutionCommand).callsFake((input: { name: string }) => {
    if (names.has(input.name)) throw new ExecutionAlreadyExists({ message: `Execution Already Exists: '${input.name}'`, $metadata: {} });
    names.add(input.name);
    return { executionArn: `${STATE_MACHINE_ARN.replace('stateMachine', 'execution')}:${input.name}`, startDate: new Date() };
  });
  return names;
}

function startedInputs(): ExecutionInput[] {
  return sfn.commandCalls(StartExecutionCommand).map((call) => JSON.parse(call.args[0].input.input!) as ExecutionInput);
}

describe('dispatch handler', () => {
  let logs: CapturedLogs;
  beforeEach(() => {
    sfn.reset();
    s3.reset();
    logs = captureLogs();
  });
  afterEach(() => logs.restore());

  it('starts one execution named after the job for an EventBridge event, with the decoded key', async () => {
    // Prepare
    uniqueNames();
    const ctx = context();
    // Act
    const result = await handleSqsBatch(ctx, sqs(eventBridgeBody('inbox/buildings/my+scene+%281%29.tif')));
    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    const key = 'inbox/buildings/my scene (1).tif';
    const jobId = jobIdFor({ bucket: 'drop', key, etag: 'b1946ac92492d2347c6235b4d2611184' });
    const [call] = sfn.commandCalls(StartExecutionCommand);
    expect(call.args[0].input).toMatchObject({ stateMachineArn: STATE_MACHINE_ARN, name: jobId });
    expect(startedInputs()[0]).toEqual({
      jobId,
      input: { bucket: 'drop', key, versionId: 'v-1', etag: 'b1946ac92492d2347c6235b4d2611184', size: 1234 },
    });
  });

  it.each([
    ['a literal plus', 'inbox/c%2B%2B+notes.geojson', 'inbox/c++ notes.geojson'],
    ['a literal percent', 'inbox/100%25+cover.tif', 'inbox/100% cover.tif'],
    ['non-ASCII characters', 'inbox/Z%C3%BCrich/%E6%9D%B1%E4%BA%AC.tiff', 'inbox/Zürich/東京.tiff'],
    ['a folder with spaces', 'inbox/my+area/field+1.json', 'inbox/my area/field 1.json'],
  ])('decodes a key with %s', async (_label, encoded, decoded) => {
    // Prepare
    uniqueNames();
    // Act
    await handleSqsBatch(context(), sqs(eventBridgeBody(encoded)));
    // Assess
    expect(startedInputs().map((i) => i.input.key)).toEqual([decoded]);
  });

  it('accepts S3 notification records (several per message)', async () => {
    // Prepare
    uniqueNames();
    const body = {
      Records: [
        { eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'drop' }, object: { key: 'inbox/a+b.geojson', size: 10, eTag: '"e-1"', sequencer: '1' } } },
        { eventName: 'ObjectRemoved:Delete', s3: { bucket: { name: 'drop' }, object: { key: 'inbox/gone.tif' } } },
        { eventName: 'ObjectCreated:CompleteMultipartUpload', s3: { bucket: { name: 'drop' }, object: { key: 'inbox/big.tif', size: 99, eTag: 'e-2-3', versionId: 'v9' } } },
      ],
    };
    // Act
    const result = await handleSqsBatch(context(), sqs(body));
    // Assess
    expect(result.batchItemFailures).toEqual([]);
    expect(startedInputs().map((i) => i.input)).toEqual([
      { bucket: 'drop', key: 'inbox/a b.geojson', etag: 'e-1', size: 10 },
      { bucket: 'drop', key: 'inbox/big.tif', versionId: 'v9', etag: 'e-2-3', size: 99 },
    ]);
  });

  it('treats a re-delivered event as a duplicate and starts nothing new', async () => {
    // Prepare
    uniqueNames();
    const ctx = context();
    const event = sqs(eventBridgeBody('inbox/area.geojson'));
    // Act
    const first = await handleSqsBatch(ctx, event);
    const second = await handleSqsBatch(ctx, event);
    // Assess
    expect(first.batchItemFailures).toEqual([]);
    expect(second.batchItemFailures).toEqual([]);
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(2);
    expect(logs.entries().filter((e) => e.message === 'execution started')).toHaveLength(1);
    expect(logs.entries().filter((e) => String(e.message).startsWith('duplicate event'))).toHaveLength(1);
  });

  it('yields exactly one execution when the same event arrives concurrently', async () => {
    // Prepare
    const names = uniqueNames();
    const ctx = context();
    const start = stepFunctionsStarter(ctx);
    const objects = objectsFromMessage(eventBridgeBody('inbox/area.geojson')) as never;
    // Act
    const summaries = await Promise.all(Array.from({ length: 6 }, () => dispatchObjectCreated(ctx, objects, start)));
    // Assess
    expect(summaries.flatMap((s) => s.started)).toHaveLength(1);
    expect(summaries.flatMap((s) => s.duplicates)).toHaveLength(5);
    expect(names.size).toBe(1);
  });

  it('skips keys outside the inbox, folder markers and hidden files, saying why', async () => {
    // Prepare
    uniqueNames();
    const ctx = context();
    // Act
    const summary = await dispatchObjectCreated(
      ctx,
      [
        { bucket: 'drop', key: 'results/a/result.geojson', etag: 'e', size: 1 },
        { bucket: 'drop', key: 'inbox/folder/', etag: 'e', size: 0 },
        { bucket: 'drop', key: 'inbox/.partial.geojson', etag: 'e', size: 1 },
        { bucket: 'drop', key: 'inbox/area/.sync/scene.tif', etag: 'e', size: 1 },
        { bucket: 'drop', key: 'inbox/ok.TIF', etag: 'e', size: 1 },
      ],
      stepFunctionsStarter(ctx),
    );
    // Assess
    expect(startedInputs().map((i) => i.input.key)).toEqual(['inbox/ok.TIF']);
    expect(summary.skipped).toEqual([
      { key: 'results/a/result.geojson', reason: 'outside the inbox prefix "inbox/"' },
      { key: 'inbox/folder/', reason: 'a folder marker, not a file' },
      { key: 'inbox/.partial.geojson', reason: 'a hidden file or folder (a name starting with ".")' },
      { key: 'inbox/area/.sync/scene.tif', reason: 'a hidden file or folder (a name starting with ".")' },
    ]);
    expect(logs.entries().filter((e) => e.message === 'object skipped').map((e) => e.key)).toEqual([
      'results/a/result.geojson',
      'inbox/folder/',
      'inbox/.partial.geojson',
      'inbox/area/.sync/scene.tif',
    ]);
  });

  it('starts an execution for a file type the bridge does not take, so Register Job rejects it (UNSUPPORTED_FILE_TYPE)', async () => {
    // Prepare
    uniqueNames();
    // Act
    const result = await handleSqsBatch(context(), sqs(eventBridgeBody('inbox/notes/readme.txt'), eventBridgeBody('inbox/scan.PNG')));
    // Assess
    expect(result.batchItemFailures).toEqual([]);
    const names = sfn.commandCalls(StartExecutionCommand).map((call) => call.args[0].input.name);
    expect(startedInputs().map((i) => i.input.key)).toEqual(['inbox/notes/readme.txt', 'inbox/scan.PNG']);
    expect(names).toEqual(startedInputs().map((i) => i.jobId));
  });

  it.each([
    ['a dot-dot segment', 'inbox/a/%2E%2E/%2E%2E/b.geojson', 'inbox/a/../../b.geojson'],
    ['a dot segment (a hidden-looking name that is not hidden)', 'inbox/./b.geojson', 'inbox/./b.geojson'],
    ['an empty segment', 'inbox//b.tif', 'inbox//b.tif'],
    ['a control character', 'inbox/b%07.geojson', 'inbox/b\u0007.geojson'],
    ['a dot-dot segment in a hidden-looking path', 'inbox/.cache/../b.geojson', 'inbox/.cache/../b.geojson'],
  ])('starts an execution for a key with %s, so Register Job rejects it (INVALID_KEY)', async (_label, encoded, decoded) => {
    // Prepare
    uniqueNames();
    // Act
    const result = await handleSqsBatch(context(), sqs({ Records: [{ eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'drop' }, object: { key: encoded, size: 1, eTag: 'e' } } }] }));
    // Assess
    expect(result.batchItemFailures).toEqual([]);
    expect(startedInputs().map((i) => i.input.key)).toEqual([decoded]);
  });

  it('reports unreadable messages and failed starts so SQS retries them, and keeps going', async () => {
    // Prepare
    sfn.on(StartExecutionCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    sfn.on(StartExecutionCommand, { name: jobIdFor({ bucket: 'drop', key: 'inbox/fine.tif', etag: 'b1946ac92492d2347c6235b4d2611184' }) }).resolves({});
    // Act
    const result = await handleSqsBatch(
      context(),
      sqs('not json', { hello: 'world' }, eventBridgeBody('inbox/throttled.tif'), eventBridgeBody('inbox/fine.tif'), { Event: 's3:TestEvent' }),
    );
    // Assess
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'm-0' }, { itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }]);
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(2);
  });

  it('reads a missing etag and size with HeadObject (s3rver copy events)', async () => {
    // Prepare
    uniqueNames();
    s3.on(HeadObjectCommand).resolves({ ETag: '"abc123"', ContentLength: 77 });
    const body = { Records: [{ eventName: 'ObjectCreated:Copy', s3: { bucket: { name: 'drop' }, object: { key: 'inbox/copied.tif' } } }] };
    // Act
    const result = await handleSqsBatch(context(), sqs(body));
    // Assess
    expect(result.batchItemFailures).toEqual([]);
    expect(startedInputs()[0].input).toEqual({ bucket: 'drop', key: 'inbox/copied.tif', etag: 'abc123', size: 77 });
  });

  it('keeps raw keys as they are when told they are not encoded (s3rver)', () => {
    // Prepare
    const body = { Records: [{ eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'drop' }, object: { key: 'inbox/a+b%20c.tif', eTag: 'e', size: 1 } } }] };
    // Act
    const [object] = objectsFromMessage(body, { keysEncoded: false });
    // Assess
    expect(object.key).toBe('inbox/a+b%20c.tif');
  });

  it('ignores other EventBridge detail-types', () => {
    expect(objectsFromMessage({ ...eventBridgeBody('inbox/a.tif'), 'detail-type': 'Object Deleted' })).toEqual([]);
  });

  it('refuses to run without STATE_MACHINE_ARN', async () => {
    // Prepare
    const config = loadConfig({ LEDGER_TABLE: 'ledger', AWS_REGION: 'eu-west-1' });
    const ctx = createBridgeContext({ config });
    // Act
    const attempt = handleSqsBatch(ctx, sqs(eventBridgeBody('inbox/a.tif')));
    // Assess
    await expect(attempt).rejects.toMatchObject({ name: 'ConfigurationError', message: expect.stringContaining('STATE_MACHINE_ARN') });
  });
});
