/**
 * The heavy part of the local bridge's module graph (the AWS SDK, the ledger,
 * the dispatch and reconcile cores, the simulator, the engine), loaded by
 * startLocalBridge (local/bridge.ts) only after it has spawned DynamoDB
 * Local's JVM and the s3rver process: loading these takes about a second of
 * this process's CPU, and the JVM's start (the slowest service) now runs
 * meanwhile instead of after it.
 */
export { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
export { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
export { Upload } from '@aws-sdk/lib-storage';
export { Ledger } from '../functions/ledger/ledger.ts';
export { bridgeContext } from '../functions/runtime/context.ts';
export { completeObject, dispatchObjectCreated, objectsFromMessage } from '../functions/handlers/dispatch.ts';
export { finishJobAsFailed, reconcile } from '../functions/handlers/reconcile.ts';
export { loadLocalDefinition } from '../lib/local-definition-cache.ts';
export { startSimulator } from './simulator/index.ts';
export { checkDefinition, LocalEngine } from './engine/engine.ts';
export { loadTaskResources } from './engine/handlers.ts';
export { LocalTaskTokens } from './engine/task-tokens.ts';
export { followEvents } from './events/file.ts';
export { localS3Client } from './s3/client.ts';
export { startJsonGateProxy } from './auth/json-gate-proxy.ts';
export { jsonAuthorizer } from './auth/gate.ts';
export { watchDropFolder } from './s3/drop-folder.ts';
