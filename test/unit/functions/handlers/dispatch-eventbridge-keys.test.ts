/**
 * Which key an EventBridge "Object Created" event means when decoding would
 * change it: S3 documents URL-encoded keys for notifications, not for
 * EventBridge, whose real events carry raw keys. Dispatch asks S3.
 */
import { HeadObjectCommand, NotFound, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { completeObject, objectsFromMessage } from '../../../../functions/handlers/dispatch.ts';

const s3 = mockClient(S3Client);
// The mocks patch the SDK clients' prototypes: put them back for the next file in this worker (vitest.config.ts, project 'shared').
afterAll(() => {
  s3.restore();
});
const ctx = { s3: new S3Client({ region: 'eu-west-1' }) };
const ETAG = 'b1946ac92492d2347c6235b4d2611184';

function event(key: string) {
  return {
    'detail-type': 'Object Created',
    source: 'aws.s3',
    detail: { bucket: { name: 'drop' }, object: { key, size: 10, etag: ETAG, 'version-id': 'v-1' } },
  };
}

const notFound = () => new NotFound({ message: 'Not Found', $metadata: { httpStatusCode: 404 } });

describe('EventBridge object keys', () => {
  afterEach(() => s3.reset());

  it('takes the raw key when only the raw object exists (a literal + in the name)', async () => {
    // Prepare: the object is "inbox/c++ notes.geojson"; decoding would make it "inbox/c   notes.geojson"
    s3.on(HeadObjectCommand, { Key: 'inbox/c   notes.geojson' }).rejects(notFound());
    s3.on(HeadObjectCommand, { Key: 'inbox/c++ notes.geojson' }).resolves({ ETag: `"${ETAG}"`, ContentLength: 10 });
    const [ref] = objectsFromMessage(event('inbox/c++ notes.geojson'));

    // Act
    const object = await completeObject(ctx, ref!);

    // Assess
    expect(object.key).toBe('inbox/c++ notes.geojson');
    expect(object).toMatchObject({ etag: ETAG, size: 10, versionId: 'v-1' });
  });

  it('takes the decoded key when that object exists (an encoded space)', async () => {
    // Prepare
    s3.on(HeadObjectCommand, { Key: 'inbox/my scene.tif' }).resolves({ ETag: `"${ETAG}"` });
    s3.on(HeadObjectCommand, { Key: 'inbox/my+scene.tif' }).rejects(notFound());
    const [ref] = objectsFromMessage(event('inbox/my+scene.tif'));

    // Act
    const object = await completeObject(ctx, ref!);

    // Assess
    expect(object.key).toBe('inbox/my scene.tif');
  });

  it('takes the raw key when S3 answers 403 for the decoded one (no s3:ListBucket on that key)', async () => {
    // Prepare: how S3 answers HeadObject of a missing key to a principal without ListBucket
    const forbidden = new S3ServiceException({ name: 'Forbidden', $fault: 'client', message: 'Forbidden', $metadata: { httpStatusCode: 403 } });
    s3.on(HeadObjectCommand, { Key: 'inbox/c   notes.geojson' }).rejects(forbidden);
    s3.on(HeadObjectCommand, { Key: 'inbox/c++ notes.geojson' }).resolves({ ETag: `"${ETAG}"`, ContentLength: 10 });
    const [ref] = objectsFromMessage(event('inbox/c++ notes.geojson'));

    // Act
    const object = await completeObject(ctx, ref!);

    // Assess
    expect(object.key).toBe('inbox/c++ notes.geojson');
  });

  it('still fails on other errors, so SQS retries the message', async () => {
    // Prepare
    const throttled = new S3ServiceException({ name: 'SlowDown', $fault: 'server', message: 'Please reduce your request rate.', $metadata: { httpStatusCode: 503 } });
    s3.on(HeadObjectCommand).rejects(throttled);
    const [ref] = objectsFromMessage(event('inbox/c++ notes.geojson'));

    // Act
    const attempt = completeObject(ctx, ref!);

    // Assess
    await expect(attempt).rejects.toMatchObject({ name: 'SlowDown' });
  });

  it('picks the object with the event ETag when both keys exist', async () => {
    // Prepare: "a+b.geojson" and "a b.geojson" both exist; the event is about the first
    s3.on(HeadObjectCommand, { Key: 'inbox/a b.geojson' }).resolves({ ETag: '"another-etag"' });
    s3.on(HeadObjectCommand, { Key: 'inbox/a+b.geojson' }).resolves({ ETag: `"${ETAG}"` });
    const [ref] = objectsFromMessage(event('inbox/a+b.geojson'));

    // Act
    const object = await completeObject(ctx, ref!);

    // Assess
    expect(object.key).toBe('inbox/a+b.geojson');
  });

  it('asks S3 nothing when decoding does not change the key', async () => {
    // Prepare: ':' is not decoded; a key without '+' or '%' is the same either way
    const [ref] = objectsFromMessage(event('inbox/health-check/2023-08-08T14:03:40.zip.geojson'));

    // Act
    const object = await completeObject(ctx, ref!);

    // Assess
    expect(object.key).toBe('inbox/health-check/2023-08-08T14:03:40.zip.geojson');
    expect(s3.commandCalls(HeadObjectCommand)).toHaveLength(0);
  });

  it('still decodes S3 notification records, whose keys S3 documents as URL-encoded', () => {
    // Act
    const [ref] = objectsFromMessage({ Records: [{ eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'drop' }, object: { key: 'inbox/my+scene.tif', eTag: ETAG, size: 1 } } }] });

    // Assess
    expect(ref).toMatchObject({ key: 'inbox/my scene.tif' });
    expect(ref).not.toHaveProperty('rawKey');
  });
});
