/**
 * Dispatch against a local S3 that answers as AWS does: HeadObject of a
 * missing key is 403 for a principal without s3:ListBucket on it (how the
 * dispatch role was deployed before it had the inbox grant) and 404 with it.
 * Either way an EventBridge key that decoding would change resolves to the
 * object that exists.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeObject, objectsFromMessage } from '../../../../functions/handlers/dispatch.ts';
import { localS3Client } from '../../../../packages/local/src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../../../packages/local/src/s3/server.ts';
import { testTmp } from '../../../support/temp.ts';

const BUCKET = 'drop';

function event(key: string, etag: string) {
  return {
    'detail-type': 'Object Created',
    source: 'aws.s3',
    detail: { bucket: { name: BUCKET }, object: { key, size: 2, etag } },
  };
}

describe('dispatch resolves EventBridge keys whatever S3 answers for the missing one', () => {
  let dir: string;
  const servers: LocalS3[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-dispatch-list-'));
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const getInbox = { Effect: 'Allow', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/inbox/*` };
  const listInbox = { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${BUCKET}`, Condition: { StringLike: { 's3:prefix': 'inbox/*' } } };

  it.each([
    ['403: no s3:ListBucket at all', [getInbox]],
    ['404: s3:ListBucket on the inbox prefix (the dispatch grant)', [getInbox, listInbox]],
  ])('%s', async (_label, statements) => {
    // Prepare: only the raw key exists; decoding "c++ notes" would give "c   notes". Dispatch signs as its role.
    const server = await startLocalS3({ directory: path.join(dir, String(servers.length)), buckets: [BUCKET] });
    servers.push(server);
    const put = await localS3Client(server.endpoint, server.credentials).send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/c++ notes.geojson', Body: '{}' }));
    const role = server.store.addPrincipal('dispatch', 'arn:aws:iam::000000000000:role/dispatch-role', [{ Version: '2012-10-17', Statement: statements }]);
    const s3 = localS3Client(server.endpoint, role);
    const [ref] = objectsFromMessage(event('inbox/c++ notes.geojson', put.ETag!.replace(/"/g, '')));

    // Act
    const object = await completeObject({ s3 }, ref!);

    // Assess
    expect(object).toMatchObject({ bucket: BUCKET, key: 'inbox/c++ notes.geojson', size: 2 });
  }, 60_000);
});
