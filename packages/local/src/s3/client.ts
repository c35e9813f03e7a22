/**
 * An S3 client for the local S3 (s3rver). The same settings the runtime uses
 * for BRIDGE_S3_ENDPOINT: path-style addressing (s3rver does not resolve
 * bucket sub-domains of 127.0.0.1) and checksums only when an operation
 * requires them (s3rver does not understand the SDK's default CRC32 trailers).
 */
import { S3Client } from '@aws-sdk/client-s3';
import { LOCAL_AWS } from '../auth/account.ts';
import type { IssuedCredentials } from '../auth/credentials.ts';

/**
 * `credentials`: issued by the bridge (LocalS3.credentials, or
 * readCredentialsFile(stateDir) for a running bridge's); the local S3 refuses
 * any other signer.
 */
export function localS3Client(endpoint: string, credentials: IssuedCredentials): S3Client {
  return new S3Client({
    endpoint,
    region: LOCAL_AWS.region,
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
  });
}
