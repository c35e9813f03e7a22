/**
 * SigV4 verification of incoming requests, against requests signed by the
 * AWS SDK's own signer: header and presigned forms, S3 (path as sent,
 * x-amz-content-sha256) and JSON protocol (body hashed).
 */
import { SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest } from '@smithy/types';
import { describe, expect, it } from 'vitest';
import { CredentialStore } from '../../src/auth/credentials.ts';
import { Sha256, verifySignature, type IncomingSignedRequest } from '../../src/auth/sigv4.ts';


const HOST = '127.0.0.1:4568';

/** What a server receives for a request the SDK signed: the target as sent and the headers. */
function received(signed: HttpRequest): IncomingSignedRequest {
  const search = Object.entries(signed.query ?? {})
    .flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v) => `${encodeURIComponent(name)}=${encodeURIComponent(String(v ?? ''))}`))
    .join('&');
  return { method: signed.method, url: search ? `${signed.path}?${search}` : signed.path, headers: Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), v])) };
}

function signer(credentials: { accessKeyId: string; secretAccessKey: string }, service: string, region = 'us-east-1') {
  return new SignatureV4({ service, region, credentials, sha256: Sha256, uriEscapePath: service !== 's3', applyChecksum: service === 's3' });
}

const s3Request = (path: string, query: Record<string, string> = {}): HttpRequest => ({ method: 'GET', protocol: 'http:', hostname: '127.0.0.1', port: 4568, path, query, headers: { host: HOST } });

describe('verifySignature', () => {
  const store = CredentialStore.inMemory();
  const s3 = { service: 's3', uriEscapePath: false };

  it('admits an S3 request the SDK signed, naming the principal, whatever its key and query', async () => {
    // Prepare
    const signed = await signer(store.user, 's3').sign(s3Request('/bkt/inbox/Z%C3%BCrich%20a%2Bb.tif', { 'list-type': '2', prefix: 'inbox/ä b' }));
    // Act
    const result = await verifySignature(received(signed), store, s3);
    // Assess
    expect(result).toMatchObject({ ok: true, principal: { name: 'user' } });
  });

  it('admits a role principal and tells it apart from the user', async () => {
    // Prepare
    const role = store.addPrincipal('register-job', 'arn:aws:iam::000000000000:role/stack-RegisterJobRole-X', [{ Statement: [] }]);
    const signed = await signer(role, 's3').sign(s3Request('/bkt/k'));
    // Act
    const result = await verifySignature(received(signed), store, s3);
    // Assess
    expect(result).toMatchObject({ ok: true, principal: { name: 'register-job', arn: 'arn:aws:sts::000000000000:assumed-role/stack-RegisterJobRole-X/register-job' } });
  });

  it('admits a presigned URL until it expires', async () => {
    // Prepare
    const signingDate = new Date();
    // As S3's presigner does: the payload is UNSIGNED-PAYLOAD.
    const request = s3Request('/bkt/inbox/a.tif');
    request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
    const signed = await signer(store.user, 's3').presign(request, { expiresIn: 60, signingDate });
    // Act
    const fresh = await verifySignature(received(signed), store, s3);
    const late = await verifySignature(received(signed), store, { ...s3, now: signingDate.getTime() + 61_000 });
    // Assess
    expect(fresh.ok).toBe(true);
    expect(late).toMatchObject({ ok: false, failure: 'Expired' });
  });

  it('checks the body of a JSON-protocol request (its hash is signed)', async () => {
    // Prepare
    const body = '{"TableName":"ledger"}';
    const request: HttpRequest = { method: 'POST', protocol: 'http:', hostname: '127.0.0.1', port: 8000, path: '/', query: {}, headers: { host: '127.0.0.1:8000', 'x-amz-target': 'DynamoDB_20120810.DescribeTable', 'content-type': 'application/x-amz-json-1.0' }, body };
    const signed = received(await signer(store.user, 'dynamodb').sign(request));
    const options = { service: 'dynamodb', uriEscapePath: true };
    // Act
    const same = await verifySignature(signed, store, { ...options, body });
    const changed = await verifySignature(signed, store, { ...options, body: '{"TableName":"other"}' });
    // Assess
    expect(same.ok).toBe(true);
    expect(changed).toMatchObject({ ok: false, failure: 'SignatureMismatch' });
  });

  it.each([
    ['an unsigned request', async () => ({ method: 'PUT', url: '/bkt/inbox/a.tif', headers: { host: HOST } }), 'Unsigned'],
    ['a key the bridge never issued', async () => received(await signer({ accessKeyId: 'AKIAOTHER', secretAccessKey: 'x' }, 's3').sign(s3Request('/bkt/k'))), 'UnknownAccessKey'],
    ['the right key with another secret', async () => received(await signer({ accessKeyId: store.user.accessKeyId, secretAccessKey: 'guess' }, 's3').sign(s3Request('/bkt/k'))), 'SignatureMismatch'],
    ['another region', async () => received(await signer(store.user, 's3', 'eu-west-1').sign(s3Request('/bkt/k'))), 'WrongRegion'],
    ['another service', async () => received(await signer(store.user, 'dynamodb').sign(s3Request('/bkt/k'))), 'WrongRegion'],
    ['a signed request whose path was changed', async () => ({ ...received(await signer(store.user, 's3').sign(s3Request('/bkt/inbox/a'))), url: '/bkt/inbox/b' }), 'SignatureMismatch'],
    ['a signed request whose Host was changed', async () => { const r = received(await signer(store.user, 's3').sign(s3Request('/bkt/k'))); return { ...r, headers: { ...r.headers, host: 'evil.example' } }; }, 'SignatureMismatch'],
    ['a request signed 20 minutes ago', async () => received(await signer(store.user, 's3').sign(s3Request('/bkt/k'), { signingDate: new Date(Date.now() - 20 * 60_000) })), 'TimeSkewed'],
  ])('refuses %s', async (_label, make, failure) => {
    // Act
    const result = await verifySignature(await make(), store, s3);
    // Assess
    expect(result).toMatchObject({ ok: false, failure });
  });
});
