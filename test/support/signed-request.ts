/**
 * Raw HTTP requests to the local endpoints, signed (SigV4, by the AWS SDK's
 * own signer) or not: the path goes on the wire exactly as given, which the
 * SDK's clients would normalise.
 */
import { request } from 'node:http';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '../../packages/local/src/auth/sigv4.ts';

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface RawRequest {
  method: string;
  /** Path and query as they go on the wire. */
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

export function rawRequest(endpoint: string, { method, path, body = '', headers = {} }: RawRequest): Promise<RawAnswer> {
  const { hostname, port } = new URL(endpoint);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, method, path, headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Signs like an S3 client (path signed as sent, x-amz-content-sha256) or a JSON-protocol client (service other than s3). */
export async function signedRequest(
  endpoint: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  raw: RawRequest,
  service = 's3',
): Promise<RawAnswer> {
  const url = new URL(endpoint);
  const [path, search = ''] = raw.path.split('?');
  const query: Record<string, string> = {};
  for (const part of search.split('&').filter(Boolean)) {
    const [name, value = ''] = part.split('=');
    query[decodeURIComponent(name!)] = decodeURIComponent(value);
  }
  const body = raw.body ?? '';
  const signer = new SignatureV4({ service, region: 'us-east-1', credentials, sha256: Sha256, uriEscapePath: service !== 's3', applyChecksum: service === 's3' });
  const signed = await signer.sign({
    method: raw.method,
    protocol: 'http:',
    hostname: url.hostname,
    port: Number(url.port),
    path: path!,
    query,
    headers: { host: url.host, ...raw.headers },
    body,
  });
  return rawRequest(endpoint, { ...raw, headers: signed.headers as Record<string, string> });
}
