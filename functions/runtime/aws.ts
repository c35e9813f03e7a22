/**
 * AWS SDK clients, one per configuration (created on first use and reused by
 * every invocation of a warm Lambda).
 *
 * Local mode (a BRIDGE_*_ENDPOINT is set) points the clients at s3rver and
 * DynamoDB Local with the keys the local bridge issued, never real ones, and path-style S3
 * addressing. Checksums are only computed/validated when an operation requires
 * them: the SDK's default CRC32 trailers are not understood by s3rver.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { isLocal, type BridgeConfig } from './config.ts';

/** The stand-in when the environment has no keys (the local endpoints refuse it: packages/local/src/auth/gate.ts). */
export const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

/**
 * Local mode signs with the keys the local bridge issued to this function,
 * from its environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), and never
 * looks further (a profile's or an instance role's real credentials).
 */
export function localCredentials(env: NodeJS.ProcessEnv = process.env): { accessKeyId: string; secretAccessKey: string } {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  return accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : LOCAL_CREDENTIALS;
}

interface Clients {
  s3?: S3Client;
  dynamodb?: DynamoDBClient;
  eventBridge?: EventBridgeClient;
  sfn?: SFNClient;
}
const cache = new WeakMap<BridgeConfig, Clients>();

function clientsFor(config: BridgeConfig): Clients {
  let clients = cache.get(config);
  if (!clients) {
    clients = {};
    cache.set(config, clients);
  }
  return clients;
}

function common(config: BridgeConfig): { region?: string; credentials?: { accessKeyId: string; secretAccessKey: string } } {
  return {
    ...(config.region ? { region: config.region } : {}),
    ...(isLocal(config) ? { credentials: localCredentials() } : {}),
  };
}

export function s3Client(config: BridgeConfig): S3Client {
  const clients = clientsFor(config);
  return (clients.s3 ??= new S3Client({
    ...common(config),
    ...(config.local.s3Endpoint ? { endpoint: config.local.s3Endpoint, forcePathStyle: true } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  }));
}

export function dynamoDbClient(config: BridgeConfig): DynamoDBClient {
  const clients = clientsFor(config);
  return (clients.dynamodb ??= new DynamoDBClient({
    ...common(config),
    ...(config.local.dynamodbEndpoint ? { endpoint: config.local.dynamodbEndpoint } : {}),
  }));
}

export function eventBridgeClient(config: BridgeConfig): EventBridgeClient {
  const clients = clientsFor(config);
  return (clients.eventBridge ??= new EventBridgeClient(common(config)));
}

export function sfnClient(config: BridgeConfig): SFNClient {
  const clients = clientsFor(config);
  return (clients.sfn ??= new SFNClient({
    ...common(config),
    ...(config.local.sfnEndpoint ? { endpoint: config.local.sfnEndpoint } : {}),
  }));
}
