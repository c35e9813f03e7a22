/**
 * The gate on the local S3 and on the DynamoDB gate proxy: what AWS refuses is
 * refused (unsigned, browser form uploads, a foreign Host, keys never issued)
 * in each service's own error shape, and a role is allowed exactly what its
 * policies allow: a call its policy has no statement for is AccessDenied
 * naming the action and the resource, while the allowed calls pass.
 * DynamoDB Local itself answers the gate only.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialStore } from '../../src/auth/credentials.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../src/dynamodb/index.ts';
import { startJsonGateProxy, type JsonGateProxy } from '../../src/auth/json-gate-proxy.ts';
import { localS3Client } from '../../src/s3/client.ts';
import { startLocalS3, type LocalS3, type S3NotificationRecord } from '../../src/s3/server.ts';
import { sharedDynamoDbEndpoint, uniqueTableName } from '../../../../test/support/shared-dynamodb.ts';
import { rawRequest, signedRequest } from '../../../../test/support/signed-request.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const BUCKET = 'gate-bucket';
const ROLE = 'arn:aws:iam::000000000000:role/bridge-FinishJobRole';

async function failure(promise: Promise<unknown>): Promise<{ name: string; status?: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as Error & { $metadata?: { httpStatusCode?: number } };
    return { name: e.name, message: e.message, ...(e.$metadata?.httpStatusCode !== undefined ? { status: e.$metadata.httpStatusCode } : {}) };
  }
  throw new Error('the call succeeded');
}

describe('the gate of the local S3', () => {
  let dir: string;
  let server: LocalS3;
  const records: S3NotificationRecord[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-gate-s3-'));
    server = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET], onRecord: (record) => records.push(record) });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const form = [
    '--b0undary',
    'Content-Disposition: form-data; name="key"',
    '',
    'inbox/from-a-web-page.geojson',
    '--b0undary',
    'Content-Disposition: form-data; name="file"; filename="x.geojson"',
    'Content-Type: application/geo+json',
    '',
    '{"type":"FeatureCollection","features":[]}',
    '--b0undary--',
    '',
  ].join('\r\n');

  it.each([
    ['an unsigned PUT into the inbox', () => rawRequest(server.endpoint, { method: 'PUT', path: `/${BUCKET}/inbox/curl.geojson`, body: '{}' }), 'AccessDenied', /Access Denied/],
    // What `curl -X PUT --data` sends: judged as an unsigned request, not as a browser form.
    ['an unsigned PUT with a form content type', () => rawRequest(server.endpoint, { method: 'PUT', path: `/${BUCKET}/inbox/curl.geojson`, body: '{}', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 'AccessDenied', /<Message>Access Denied<\/Message>/],
    [
      'a cross-origin form POST (no preflight needed)',
      () => rawRequest(server.endpoint, { method: 'POST', path: `/${BUCKET}`, body: form, headers: { 'content-type': 'multipart/form-data; boundary=b0undary', origin: 'https://evil.example' } }),
      'AccessDenied',
      /web browsers/,
    ],
    ['a form POST without Origin', () => rawRequest(server.endpoint, { method: 'POST', path: `/${BUCKET}`, body: form, headers: { 'content-type': 'multipart/form-data; boundary=b0undary' } }), 'AccessDenied', /web browsers/],
    [
      'a request for another Host (DNS rebinding), even signed',
      () => signedRequest(server.endpoint, server.credentials, { method: 'PUT', path: `/${BUCKET}/inbox/rebound.geojson`, body: '{}', headers: { host: 'evil.example' } }),
      'AccessDenied',
      /not for Host &quot;evil.example&quot;/,
    ],
    ['a key the bridge never issued', () => signedRequest(server.endpoint, { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, { method: 'PUT', path: `/${BUCKET}/inbox/s3rver.geojson`, body: '{}' }), 'InvalidAccessKeyId', /does not exist/],
    [
      'the issued key with a wrong secret',
      () => signedRequest(server.endpoint, { accessKeyId: server.credentials.accessKeyId, secretAccessKey: 'guess' }, { method: 'PUT', path: `/${BUCKET}/inbox/guess.geojson`, body: '{}' }),
      'SignatureDoesNotMatch',
      /signature we calculated/,
    ],
  ])('refuses %s with 403 and S3 XML, and stores nothing', async (_label, send, code, message) => {
    // Act
    const answer = await send();
    await server.flushNotifications();
    // Assess
    expect(answer.status).toBe(403);
    expect(answer.headers['content-type']).toBe('application/xml');
    expect(answer.text).toContain(`<Code>${code}</Code>`);
    expect(answer.text).toMatch(message);
    expect(records).toEqual([]);
    expect(await readdir(path.join(dir, 's3', BUCKET))).toEqual([]);
  });

  it('lets a role do what its policy allows, and refuses the call its policy has no statement for', async () => {
    // Prepare: the role may read the inbox and write results/, but its statement for failed/ is missing
    const user = localS3Client(server.endpoint, server.credentials);
    await user.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/a.geojson', Body: '{}' }));
    const role = server.store.addPrincipal('finish-job', ROLE, [
      {
        Version: '2012-10-17',
        Statement: [
          { Effect: 'Allow', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/inbox/*` },
          { Effect: 'Allow', Action: ['s3:PutObject', 's3:AbortMultipartUpload'], Resource: `arn:aws:s3:::${BUCKET}/results/*` },
        ],
      },
    ]);
    const s3 = localS3Client(server.endpoint, role);
    // Act
    const read = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'inbox/a.geojson' }));
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'results/a/job.json', Body: '{}' }));
    const denied = await failure(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'failed/a/report.json', Body: '{}' })));
    // Assess
    expect(await read.Body?.transformToString()).toBe('{}');
    expect(denied).toEqual({
      name: 'AccessDenied',
      status: 403,
      message: `User: arn:aws:sts::000000000000:assumed-role/bridge-FinishJobRole/finish-job is not authorized to perform: s3:PutObject on resource: "arn:aws:s3:::${BUCKET}/failed/a/report.json" because no identity-based policy allows the s3:PutObject action`,
    });
    expect((await failure(user.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'failed/a/report.json' })))).name).toBe('NoSuchKey');
  }, 60_000);

  it('refuses an explicit Deny even where an Allow matches', async () => {
    // Prepare
    const role = server.store.addPrincipal('reader', ROLE, [
      { Statement: [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }, { Effect: 'Deny', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/secret/*` }] },
    ]);
    // Act
    const denied = await failure(localS3Client(server.endpoint, role).send(new GetObjectCommand({ Bucket: BUCKET, Key: 'secret/x' })));
    // Assess
    expect(denied.name).toBe('AccessDenied');
    expect(denied.message).toMatch(/s3:GetObject on resource: ".*secret\/x" with an explicit deny in an identity-based policy$/);
  }, 60_000);
});

describe('the gate in front of DynamoDB Local', () => {
  let gate: JsonGateProxy;
  const store = CredentialStore.inMemory();
  const table = uniqueTableName('gate');
  const tableArn = `arn:aws:dynamodb:us-east-1:000000000000:table/${table}`;

  beforeAll(async () => {
    const target = await sharedDynamoDbEndpoint();
    gate = await startJsonGateProxy({ service: 'dynamodb', target, store });
    const admin = new DynamoDBClient({ endpoint: gate.endpoint, region: 'us-east-1', credentials: store.user });
    await admin.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'jobId', AttributeType: 'S' }, { AttributeName: 'status', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'jobId', KeyType: 'HASH' }],
        GlobalSecondaryIndexes: [{ IndexName: 'byStatus', KeySchema: [{ AttributeName: 'status', KeyType: 'HASH' }], Projection: { ProjectionType: 'ALL' } }],
      }),
    );
    admin.destroy();
  }, 120_000);
  afterAll(async () => {
    await gate?.close();
  });

  const describeTable = JSON.stringify({ TableName: 'x' });
  const target = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.DescribeTable' };

  it.each([
    ['an unsigned request', () => rawRequest(gate.endpoint, { method: 'POST', path: '/', body: describeTable, headers: target }), 'MissingAuthenticationTokenException'],
    ['a request from a web page', () => signedRequest(gate.endpoint, store.user, { method: 'POST', path: '/', body: describeTable, headers: { ...target, origin: 'https://evil.example' } }, 'dynamodb'), 'AccessDeniedException'],
    ['a request for another Host', () => signedRequest(gate.endpoint, store.user, { method: 'POST', path: '/', body: describeTable, headers: { ...target, host: 'evil.example' } }, 'dynamodb'), 'AccessDeniedException'],
    ['any key DynamoDB Local would take', () => signedRequest(gate.endpoint, { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, { method: 'POST', path: '/', body: describeTable, headers: target }, 'dynamodb'), 'UnrecognizedClientException'],
  ])('refuses %s with 400 and a JSON error', async (_label, send, code) => {
    // Act
    const answer = await send();
    // Assess
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({ __type: `com.amazon.coral.service#${code}` });
  });

  it('lets a role do what its policy allows, and refuses the call its policy has no statement for', async () => {
    // Prepare: PutItem on the table, but no statement for Query on the byStatus index
    const role = store.addPrincipal('register-job', 'arn:aws:iam::000000000000:role/bridge-RegisterJobRole', [
      { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: ['dynamodb:PutItem', 'dynamodb:GetItem'], Resource: tableArn }] },
    ]);
    const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: gate.endpoint, region: 'us-east-1', credentials: role, maxAttempts: 1 }));
    // Act
    await doc.send(new PutCommand({ TableName: table, Item: { jobId: 'j1', status: 'RUNNING' } }));
    const denied = await failure(doc.send(new QueryCommand({ TableName: table, IndexName: 'byStatus', KeyConditionExpression: '#s = :s', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':s': 'RUNNING' } })));
    // Assess
    expect(denied).toEqual({
      name: 'AccessDeniedException',
      status: 400,
      message: `User: arn:aws:sts::000000000000:assumed-role/bridge-RegisterJobRole/register-job is not authorized to perform: dynamodb:Query on resource: ${tableArn}/index/byStatus because no identity-based policy allows the dynamodb:Query action`,
    });
    const user = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: gate.endpoint, region: 'us-east-1', credentials: store.user }));
    const rows = await user.send(new QueryCommand({ TableName: table, IndexName: 'byStatus', KeyConditionExpression: '#s = :s', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':s': 'RUNNING' } }));
    expect(rows.Items).toEqual([{ jobId: 'j1', status: 'RUNNING' }]);
    doc.destroy();
    user.destroy();
  }, 60_000);
});

describe('DynamoDB Local behind the gate', () => {
  let dynamodb: DynamoDbLocal | undefined;
  let gate: JsonGateProxy | undefined;
  const store = CredentialStore.inMemory();
  const secret = 'a-secret-only-the-gate-knows';

  beforeAll(async () => {
    dynamodb = await startDynamoDbLocal({ inMemory: true, gateSecret: secret, startTimeoutMs: 180_000 });
    gate = await startJsonGateProxy({ service: 'dynamodb', target: dynamodb.endpoint, store, forwardHeaders: { 'x-mapflow-bridge-gate': secret } });
  }, 240_000);
  afterAll(async () => {
    await gate?.close();
    await dynamodb?.close();
  });

  it('answers the gate only: a signed request sent to its own port is refused', async () => {
    // Prepare
    const listTables = { method: 'POST', path: '/', body: '{}', headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.ListTables' } };
    // Act
    const direct = await signedRequest(dynamodb!.endpoint, store.user, listTables, 'dynamodb');
    const throughGate = await signedRequest(gate!.endpoint, store.user, listTables, 'dynamodb');
    // Assess
    expect(direct.status).toBe(403);
    expect(direct.text).toContain('answers only the mapflow-bridge gate');
    expect(throughGate.status).toBe(200);
    expect(JSON.parse(throughGate.text)).toEqual({ TableNames: [] });
  });
});
