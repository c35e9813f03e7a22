/**
 * Reads the bridge's settings from CDK context (`-c key=value` or cdk.json),
 * so `npx cdk deploy -c routes=routes.json -c maxConcurrentProcessings=3`
 * works without editing code. Values given with -c arrive as strings.
 */
import { existsSync, readFileSync } from 'node:fs';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { IConstruct } from 'constructs';
import type { Route } from '../functions/routing/index.ts';
import type { PollPolicy } from '../functions/polling/poll-policy.ts';
import { MapflowBridgeConfigError } from './errors.ts';
import type { AuthScheme } from './settings.ts';

/** The context keys understood by bin/app.ts, with what each does (printed in docs/deploy.md). */
export const CONTEXT_KEYS = {
  stackName: 'Name of the stack (default MapflowBridge).',
  routes: 'Routes: JSON text (an array or {"routes": [...]}) or the path of a .json file.',
  mapflowBaseUrl: 'Mapflow API base URL (default https://api.mapflow.ai/rest).',
  authScheme: 'basic, bearer or auto (default auto).',
  maxConcurrentProcessings: 'Processings running at once (default 5).',
  pollPolicy: 'JSON, any of {initialSeconds, maxSeconds, factor, maxPolls, maxJobSeconds, nearEndSeconds, maxEstimatedSeconds}.',
  eventSource: 'Source of the published events (default mapflow.bridge).',
  inboxPrefix: 'default inbox/',
  resultsPrefix: 'default results/',
  failedPrefix: 'default failed/',
  workPrefix: 'default work/',
  logRetentionDays: 'Log retention in days, one of the CloudWatch values (default 90).',
  removalPolicy: 'retain (default) or destroy: what happens to data when the stack is deleted.',
  reconcileMinutes: 'Minutes between reconciler runs (default 15).',
  bucketName: 'Use this existing bucket (EventBridge notifications must be on) instead of creating one.',
  bucketKmsKeyArn: 'ARN of the KMS key of that existing bucket, when it is SSE-KMS encrypted (the functions then get kms:Decrypt / GenerateDataKey on it).',
  secretName: 'Use this existing Secrets Manager secret instead of creating one.',
  eventBusName: 'Publish on this existing event bus instead of creating one.',
  ledgerTableName: 'Use this existing ledger table (same keys and GSIs) instead of creating one.',
  dashboard: 'false to skip the CloudWatch dashboard.',
  ledgerRetentionDays: 'Days a finished job\'s ledger row is kept (DynamoDB TTL on expiresAt); default: kept forever.',
  sourceMaps: 'true to ship source maps and run the functions with --enable-source-maps (default false).',
} as const;
export type ContextKey = keyof typeof CONTEXT_KEYS;

/** Existing resources MapflowBridgeStack imports by name instead of creating them (context keys of the same names). */
export interface ExistingResources {
  /**
   * Use this bucket (EventBridge notifications must be on) instead of creating one.
   * @default a new bucket
   */
  readonly bucketName?: string;
  /**
   * ARN of the KMS key of that bucket, when it is SSE-KMS encrypted (the functions then get kms:Decrypt / GenerateDataKey on it).
   * @default none: the bucket is SSE-S3
   */
  readonly bucketKmsKeyArn?: string;
  /**
   * Use this Secrets Manager secret instead of creating one.
   * @default a new secret
   */
  readonly secretName?: string;
  /**
   * Publish on this event bus instead of creating one.
   * @default a new event bus
   */
  readonly eventBusName?: string;
  /**
   * Use this ledger table (same keys and GSIs) instead of creating one.
   * @default a new table
   */
  readonly ledgerTableName?: string;
}

/** Settings of the stack as read from context; names of existing resources are imported by the stack. */
export interface ContextSettings {
  stackName: string;
  routes?: Route[];
  mapflowBaseUrl?: string;
  authScheme?: AuthScheme;
  maxConcurrentProcessings?: number;
  pollPolicy?: Partial<PollPolicy>;
  eventSource?: string;
  inboxPrefix?: string;
  resultsPrefix?: string;
  failedPrefix?: string;
  workPrefix?: string;
  logRetention?: logs.RetentionDays;
  removalPolicy?: RemovalPolicy;
  reconcileSchedule?: events.Schedule;
  existing: ExistingResources;
  dashboard?: boolean;
  ledgerRetentionDays?: number;
  sourceMaps?: boolean;
}

/** The settings in the context of `scope` (the app); a bad value throws a MapflowBridgeConfigError on that scope. */
export function settingsFromContext(scope: IConstruct): ContextSettings {
  const node = scope.node;
  const get = (key: ContextKey): unknown => {
    const value: unknown = node.tryGetContext(key);
    return value === '' ? undefined : value;
  };
  const text = (key: ContextKey): string | undefined => {
    const value = get(key);
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw new MapflowBridgeConfigError(`context ${key} must be a string`, scope);
    return value;
  };
  const integer = (key: ContextKey): number | undefined => {
    const value = get(key);
    if (value === undefined) return undefined;
    const n = typeof value === 'number' ? value : Number(value);
    if (!Number.isInteger(n)) throw new MapflowBridgeConfigError(`context ${key} must be an integer (got ${String(value)})`, scope);
    return n;
  };
  const json = (key: ContextKey): unknown => {
    const value = get(key);
    if (value === undefined || typeof value !== 'string') return value;
    const source = value.trim().endsWith('.json') && existsSync(value) ? readFileSync(value, 'utf8') : value;
    try {
      return JSON.parse(source);
    } catch (cause) {
      throw new MapflowBridgeConfigError(`context ${key} is neither JSON nor the path of a JSON file`, scope, { cause });
    }
  };

  const routesValue = json('routes');
  const routes =
    routesValue === undefined
      ? undefined
      : Array.isArray(routesValue)
        ? (routesValue as Route[])
        : ((routesValue as { routes?: Route[] }).routes ?? (routesValue as Route[]));

  const removal = text('removalPolicy')?.toLowerCase();
  if (removal !== undefined && removal !== 'retain' && removal !== 'destroy') {
    throw new MapflowBridgeConfigError(`context removalPolicy must be retain or destroy (got ${removal})`, scope);
  }
  const retentionDays = integer('logRetentionDays');
  if (retentionDays !== undefined && !(Object.values(logs.RetentionDays) as unknown[]).includes(retentionDays)) {
    throw new MapflowBridgeConfigError(`context logRetentionDays ${retentionDays} is not a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, ...)`, scope);
  }
  const reconcileMinutes = integer('reconcileMinutes');
  if (reconcileMinutes !== undefined && (reconcileMinutes < 1 || reconcileMinutes > 1_440)) {
    throw new MapflowBridgeConfigError('context reconcileMinutes must be from 1 to 1440', scope);
  }
  const dashboard = get('dashboard');
  const sourceMaps = get('sourceMaps');
  const bucketKmsKeyArn = text('bucketKmsKeyArn');
  if (bucketKmsKeyArn !== undefined && text('bucketName') === undefined) {
    throw new MapflowBridgeConfigError('context bucketKmsKeyArn only applies with bucketName (the key of your existing bucket); a created bucket uses SSE-S3', scope);
  }
  if (bucketKmsKeyArn !== undefined && !/^arn:[^:]+:kms:[^:]+:\d{12}:(key|alias)\/.+$/.test(bucketKmsKeyArn)) {
    throw new MapflowBridgeConfigError(`context bucketKmsKeyArn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), got ${bucketKmsKeyArn}`, scope);
  }

  return {
    stackName: text('stackName') ?? 'MapflowBridge',
    routes,
    mapflowBaseUrl: text('mapflowBaseUrl'),
    authScheme: text('authScheme') as AuthScheme | undefined,
    maxConcurrentProcessings: integer('maxConcurrentProcessings'),
    pollPolicy: json('pollPolicy') as Partial<PollPolicy> | undefined,
    eventSource: text('eventSource'),
    inboxPrefix: text('inboxPrefix'),
    resultsPrefix: text('resultsPrefix'),
    failedPrefix: text('failedPrefix'),
    workPrefix: text('workPrefix'),
    logRetention: retentionDays as logs.RetentionDays | undefined,
    removalPolicy: removal === undefined ? undefined : removal === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    reconcileSchedule: reconcileMinutes === undefined ? undefined : events.Schedule.rate(Duration.minutes(reconcileMinutes)),
    existing: {
      bucketName: text('bucketName'),
      bucketKmsKeyArn,
      secretName: text('secretName'),
      eventBusName: text('eventBusName'),
      ledgerTableName: text('ledgerTableName'),
    },
    dashboard: dashboard === undefined ? undefined : !(dashboard === false || dashboard === 'false'),
    ledgerRetentionDays: integer('ledgerRetentionDays'),
    sourceMaps: sourceMaps === undefined ? undefined : sourceMaps === true || sourceMaps === 'true',
  };
}
