/**
 * Verifies AWS Signature Version 4 on an incoming request, in both forms:
 * the Authorization header and the presigned URL (X-Amz-* query parameters).
 *
 * The canonical request, the string to sign and the signing key are
 * computed by @smithy/signature-v4 (the AWS SDK's own signer), so the rules
 * of path and query escaping are the SDK's, not ours. Only the signed headers
 * the client names are used, as AWS does.
 *
 * Not checked: that the body matches x-amz-content-sha256 (S3 streams it), and
 * the per-chunk signatures of STREAMING-AWS4-HMAC-SHA256-PAYLOAD uploads (the
 * seed signature is checked).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { SignatureV4Base, createScope, getCanonicalHeaders, getSigningKey } from '@smithy/signature-v4';
import type { Checksum, HttpRequest, SourceData } from '@smithy/types';
import { LOCAL_AWS } from './account.ts';
import type { CredentialStore, Principal } from './credentials.ts';

/** An incoming request as a server sees it: the raw path and query as sent. */
export interface IncomingSignedRequest {
  method: string;
  /** The request target as sent: path and query, still percent-encoded. */
  url: string;
  /** Lower-case names, as node:http gives them. */
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
}

export type SignatureFailure =
  | 'Unsigned'
  | 'Malformed'
  | 'UnknownAccessKey'
  | 'SignatureMismatch'
  | 'WrongRegion'
  | 'Expired'
  | 'TimeSkewed';

export type SignatureResult =
  | { ok: true; principal: Principal; accessKeyId: string }
  | { ok: false; failure: SignatureFailure; message: string; accessKeyId?: string };

export interface VerifyOptions {
  /** The service name in the credential scope ('s3', 'dynamodb', ...). */
  service: string;
  /** S3 signs the path as sent; the other services normalize and escape it again. */
  uriEscapePath: boolean;
  /** The body, for services whose clients hash it instead of sending x-amz-content-sha256. */
  body?: Uint8Array | string;
  /** Default Date.now(). */
  now?: number;
}

/** AWS refuses a header-signed request more than 15 minutes away from its clock. */
const MAX_SKEW_MS = 15 * 60 * 1000;
const MAX_PRESIGNED_SECONDS = 7 * 24 * 3600;

/** node:crypto behind the SDK's checksum interface (a plain hash, or an HMAC with a key). */
export class Sha256 implements Checksum {
  private hash;
  constructor(private readonly secret?: SourceData) {
    this.hash = this.make();
  }
  private make() {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(this.secret));
  }
  update(data: Uint8Array): void {
    this.hash.update(data);
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }
  reset(): void {
    this.hash = this.make();
  }
}

function toBuffer(data: SourceData): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/** The SDK's canonical request and string to sign, opened up for a verifier. */
class Canonicalizer extends SignatureV4Base {
  constructor(service: string, uriEscapePath: boolean) {
    super({ service, region: LOCAL_AWS.region, credentials: { accessKeyId: '', secretAccessKey: '' }, sha256: Sha256, uriEscapePath });
  }
  async stringToSign(request: HttpRequest, canonicalHeaders: Record<string, string>, payloadHash: string, longDate: string, scope: string): Promise<string> {
    return this.createStringToSign(longDate, scope, this.createCanonicalRequest(request, canonicalHeaders, payloadHash), 'AWS4-HMAC-SHA256');
  }
}

function header(headers: IncomingSignedRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : (value as string | undefined);
}

/** The query as name -> value(s), percent-decoded ('+' kept: SigV4 clients encode a space as %20). */
export function parseQuery(search: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const part of search.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const name = safeDecode(eq < 0 ? part : part.slice(0, eq));
    const value = eq < 0 ? '' : safeDecode(part.slice(eq + 1));
    const previous = query[name];
    query[name] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
  }
  return query;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Splits a request target into its raw path and raw query. */
export function splitUrl(url: string): { path: string; search: string } {
  const q = url.indexOf('?');
  return q < 0 ? { path: url, search: '' } : { path: url.slice(0, q), search: url.slice(q + 1) };
}

interface Claim {
  accessKeyId: string;
  shortDate: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
  longDate: string;
  presigned?: { expires: number };
}

const CREDENTIAL = /^([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request$/;

function parseClaim(request: IncomingSignedRequest, query: Record<string, string | string[]>): Claim | 'Unsigned' | 'Malformed' {
  const authorization = header(request.headers, 'authorization');
  const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
  let credential: string | undefined;
  let signedHeaders: string | undefined;
  let signature: string | undefined;
  let longDate: string | undefined;
  let presigned: Claim['presigned'];
  if (authorization !== undefined) {
    const match = /^AWS4-HMAC-SHA256 (.*)$/.exec(authorization.trim());
    if (!match?.[1]) return 'Malformed';
    const fields = Object.fromEntries(
      match[1].split(',').map((field) => {
        const eq = field.indexOf('=');
        return [field.slice(0, eq).trim(), field.slice(eq + 1).trim()];
      }),
    );
    ({ Credential: credential, SignedHeaders: signedHeaders, Signature: signature } = fields);
    longDate = header(request.headers, 'x-amz-date');
  } else if (first(query['X-Amz-Algorithm']) !== undefined || first(query['X-Amz-Signature']) !== undefined) {
    if (first(query['X-Amz-Algorithm']) !== 'AWS4-HMAC-SHA256') return 'Malformed';
    credential = first(query['X-Amz-Credential']);
    signedHeaders = first(query['X-Amz-SignedHeaders']);
    signature = first(query['X-Amz-Signature']);
    longDate = first(query['X-Amz-Date']);
    const expires = Number(first(query['X-Amz-Expires']));
    if (!Number.isInteger(expires) || expires < 1 || expires > MAX_PRESIGNED_SECONDS) return 'Malformed';
    presigned = { expires };
  } else {
    return 'Unsigned';
  }
  const scope = credential ? CREDENTIAL.exec(credential) : null;
  if (!scope || !signedHeaders || !signature || !longDate || !/^\d{8}T\d{6}Z$/.test(longDate)) return 'Malformed';
  const [, accessKeyId, shortDate, region, service] = scope as unknown as [string, string, string, string, string];
  if (!longDate.startsWith(shortDate)) return 'Malformed';
  return { accessKeyId, shortDate, region, service, signedHeaders: signedHeaders.split(';'), signature, longDate, ...(presigned ? { presigned } : {}) };
}

function dateOf(longDate: string): number {
  return Date.parse(`${longDate.slice(0, 4)}-${longDate.slice(4, 6)}-${longDate.slice(6, 8)}T${longDate.slice(9, 11)}:${longDate.slice(11, 13)}:${longDate.slice(13, 15)}Z`);
}

/** Checks the request's signature against the credentials the store issued. */
export async function verifySignature(request: IncomingSignedRequest, store: CredentialStore, options: VerifyOptions): Promise<SignatureResult> {
  const { path, search } = splitUrl(request.url);
  const query = parseQuery(search);
  const claim = parseClaim(request, query);
  if (claim === 'Unsigned') return { ok: false, failure: 'Unsigned', message: 'the request is not signed' };
  if (claim === 'Malformed') return { ok: false, failure: 'Malformed', message: 'the signature (Authorization header or X-Amz-* parameters) is malformed' };
  const principal = store.principal(claim.accessKeyId);
  if (!principal) return { ok: false, failure: 'UnknownAccessKey', message: `access key ${claim.accessKeyId} was not issued by this bridge`, accessKeyId: claim.accessKeyId };
  if (claim.region !== LOCAL_AWS.region || claim.service !== options.service) {
    return {
      ok: false,
      failure: 'WrongRegion',
      message: `the credential scope names region ${claim.region} and service ${claim.service}; this endpoint expects ${LOCAL_AWS.region} and ${options.service}`,
      accessKeyId: claim.accessKeyId,
    };
  }
  const now = options.now ?? Date.now();
  const signedAt = dateOf(claim.longDate);
  if (claim.presigned) {
    if (now > signedAt + claim.presigned.expires * 1000) return { ok: false, failure: 'Expired', message: 'Request has expired', accessKeyId: claim.accessKeyId };
  } else if (Math.abs(now - signedAt) > MAX_SKEW_MS) {
    return { ok: false, failure: 'TimeSkewed', message: 'The difference between the request time and the current time is too large.', accessKeyId: claim.accessKeyId };
  }

  // Only the headers the client signed, with the values it sent.
  const signed: Record<string, string> = {};
  for (const name of claim.signedHeaders) {
    const value = header(request.headers, name);
    if (value === undefined) return { ok: false, failure: 'SignatureMismatch', message: `signed header ${name} is missing`, accessKeyId: claim.accessKeyId };
    signed[name] = value;
  }
  if (!('host' in signed)) return { ok: false, failure: 'Malformed', message: 'the Host header is not signed', accessKeyId: claim.accessKeyId };
  const signedQuery = claim.presigned ? Object.fromEntries(Object.entries(query).filter(([name]) => name !== 'X-Amz-Signature')) : query;
  // A presigned URL's payload is UNSIGNED-PAYLOAD unless the signer put a hash in the query or a header.
  const hoisted = query['X-Amz-Content-Sha256'];
  const payloadHash = claim.presigned
    ? ((Array.isArray(hoisted) ? hoisted[0] : hoisted) ?? header(request.headers, 'x-amz-content-sha256') ?? 'UNSIGNED-PAYLOAD')
    : (header(request.headers, 'x-amz-content-sha256') ?? sha256Hex(options.body ?? ''));
  const httpRequest: HttpRequest = { method: request.method.toUpperCase(), protocol: 'http:', hostname: 'localhost', path, query: signedQuery, headers: signed };
  const canonicalHeaders = getCanonicalHeaders(httpRequest, undefined, new Set(claim.signedHeaders));
  const scope = createScope(claim.shortDate, claim.region, claim.service);
  const stringToSign = await new Canonicalizer(options.service, options.uriEscapePath).stringToSign(httpRequest, canonicalHeaders, payloadHash, claim.longDate, scope);
  const key = await getSigningKey(Sha256, principal, claim.shortDate, claim.region, claim.service);
  const expected = createHmac('sha256', key).update(stringToSign, 'utf8').digest();
  const given = Buffer.from(claim.signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, failure: 'SignatureMismatch', message: 'The request signature we calculated does not match the signature you provided.', accessKeyId: claim.accessKeyId };
  }
  return { ok: true, principal, accessKeyId: claim.accessKeyId };
}

function sha256Hex(body: Uint8Array | string): string {
  return createHash('sha256').update(body).digest('hex');
}
