/**
 * An S3 client for the local S3 (s3rver). The same settings the runtime uses
 * for BRIDGE_S3_ENDPOINT: path-style addressing (s3rver does not resolve
 * bucket sub-domains of 127.0.0.1) and checksums only when an operation
 * requires them (s3rver does not understand the SDK's default CRC32 trailers).
 */
import { S3Client } from '@aws-sdk/client-s3';

/** s3rver's built-in account; any signed request with these keys is accepted. */
export const LOCAL_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export function localS3Client(endpoint: string, region = 'us-east-1'): S3Client {
  return new S3Client({
    endpoint,
    region,
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials: LOCAL_S3_CREDENTIALS,
  });
}
