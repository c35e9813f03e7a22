/**
 * The ledger table, built from the runtime's own schema
 * (functions/ledger/schema.ts: ledgerTableSchema), so the deployed keys and
 * GSIs cannot drift from what local mode creates and the code queries.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { ledgerTableSchema } from '../../functions/ledger/schema.ts';
import { LEDGER_TABLE_PROPS } from './defaults.ts';

/** The attribute the ledger writes on a final status when a retention is set (epoch seconds, DynamoDB TTL). */
export const LEDGER_TTL_ATTRIBUTE = 'expiresAt';

export interface LedgerTableOptions {
  readonly removalPolicy: RemovalPolicy;
  /** Turn on DynamoDB TTL on this attribute. @default no TTL */
  readonly ttlAttribute?: string;
}

/**
 * Creates the ledger: on-demand, point-in-time recovery, encrypted, GSIs
 * byStatus, byProcessingId and bySlotQueue. A retained table also gets deletion protection:
 * it is meant to outlive the stack, so deleting it takes a deliberate step.
 */
export function createLedgerTable(scope: Construct, id: string, options: LedgerTableOptions): dynamodb.Table {
  // The name is only a placeholder for the schema; CloudFormation names the table.
  const schema = ledgerTableSchema('ledger');
  const attribute = (name: string | undefined): dynamodb.Attribute => {
    const definition = schema.AttributeDefinitions?.find((a) => a.AttributeName === name);
    if (!name || !definition) throw new Error(`ledgerTableSchema: attribute ${name} has no definition`);
    return { name, type: attributeType(definition.AttributeType) };
  };
  const keyOf = (keys: { AttributeName?: string; KeyType?: string }[] | undefined, type: 'HASH' | 'RANGE') =>
    keys?.find((k) => k.KeyType === type)?.AttributeName;

  const table = new dynamodb.Table(scope, id, {
    ...LEDGER_TABLE_PROPS,
    partitionKey: attribute(keyOf(schema.KeySchema, 'HASH')),
    ...(keyOf(schema.KeySchema, 'RANGE') ? { sortKey: attribute(keyOf(schema.KeySchema, 'RANGE')) } : {}),
    removalPolicy: options.removalPolicy,
    deletionProtection: options.removalPolicy === RemovalPolicy.RETAIN,
    ...(options.ttlAttribute ? { timeToLiveAttribute: options.ttlAttribute } : {}),
  });
  for (const index of schema.GlobalSecondaryIndexes ?? []) {
    const sortKey = keyOf(index.KeySchema, 'RANGE');
    table.addGlobalSecondaryIndex({
      indexName: index.IndexName!,
      partitionKey: attribute(keyOf(index.KeySchema, 'HASH')),
      ...(sortKey ? { sortKey: attribute(sortKey) } : {}),
      projectionType: projectionType(index.Projection?.ProjectionType),
      ...(index.Projection?.NonKeyAttributes ? { nonKeyAttributes: index.Projection.NonKeyAttributes } : {}),
    });
  }
  return table;
}

const ATTRIBUTE_TYPES: Readonly<Record<string, dynamodb.AttributeType>> = {
  S: dynamodb.AttributeType.STRING,
  N: dynamodb.AttributeType.NUMBER,
  B: dynamodb.AttributeType.BINARY,
};

const PROJECTION_TYPES: Readonly<Record<string, dynamodb.ProjectionType>> = {
  ALL: dynamodb.ProjectionType.ALL,
  KEYS_ONLY: dynamodb.ProjectionType.KEYS_ONLY,
  INCLUDE: dynamodb.ProjectionType.INCLUDE,
};

function attributeType(type: string | undefined): dynamodb.AttributeType {
  return cdkValue(ATTRIBUTE_TYPES, type, 'attribute type');
}

function projectionType(type: string | undefined): dynamodb.ProjectionType {
  return cdkValue(PROJECTION_TYPES, type ?? 'ALL', 'projection');
}

/** The CDK value of a DynamoDB API name (`what` names the kind in the error). */
function cdkValue<T>(table: Readonly<Record<string, T>>, name: string | undefined, what: string): T {
  const value = name !== undefined && Object.hasOwn(table, name) ? table[name] : undefined;
  if (value === undefined) throw new Error(`ledgerTableSchema: unsupported ${what} ${name}`);
  return value;
}
