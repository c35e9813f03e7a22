/**
 * The DynamoDB document client of a configuration. Apart from ./aws.ts because
 * @aws-sdk/lib-dynamodb does not declare itself free of side effects: a bundler
 * keeps it (and the DynamoDB client) wherever its module is imported, and the
 * dispatch function, which imports ./aws.ts for S3 and Step Functions, has no
 * use for DynamoDB.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamoDbClient } from './aws.ts';
import type { BridgeConfig } from './config.ts';

const documents = new WeakMap<BridgeConfig, DynamoDBDocumentClient>();

/** Document client: plain JS values in and out; undefined attributes are dropped. */
export function documentClient(config: BridgeConfig): DynamoDBDocumentClient {
  let document = documents.get(config);
  if (!document) {
    document = DynamoDBDocumentClient.from(dynamoDbClient(config), { marshallOptions: { removeUndefinedValues: true } });
    documents.set(config, document);
  }
  return document;
}
