/**
 * The fake AWS account and region of local mode: every ARN the local bridge
 * makes or checks (roles, tables, buckets, secrets, state machines) is in it.
 * packages/local/src/assembly/local-definition.ts and packages/local/src/engine/engine.ts use the same two values.
 */
export const LOCAL_AWS = { accountId: '000000000000', region: 'us-east-1', partition: 'aws' } as const;
