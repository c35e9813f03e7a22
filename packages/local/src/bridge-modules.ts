/**
 * The heavy part of the local bridge's module graph (the AWS SDK, the ledger,
 * the assembly runtime, the simulator, the engine), loaded by
 * startLocalBridge (packages/local/src/bridge.ts) only after it has spawned DynamoDB
 * Local's JVM and the s3rver process: loading these takes about a second of
 * this process's CPU, and the JVM's start (the slowest service) now runs
 * meanwhile instead of after it.
 */
export { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
export { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
export { Upload } from '@aws-sdk/lib-storage';
export { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
export { loadLocalAssembly } from './assembly/cache.ts';
export { readAssembly } from './assembly/template.ts';
export { startAssemblyRuntime } from './assembly/runtime.ts';
export { startSimulator } from '@mapflow-bridge/simulator';
export { checkDefinition } from './engine/engine.ts';
export { followEvents } from './events/file.ts';
export { localS3Client } from './s3/client.ts';
export { startJsonGateProxy } from './auth/json-gate-proxy.ts';
export { servicesGate } from './auth/services-gate.ts';
export { watchDropFolder } from './s3/drop-folder.ts';
