/**
 * Safe defaults of the bridge, in one place (the aws-solutions-constructs
 * habit): every resource the construct creates takes its settings from here,
 * so a reviewer can check the security posture without reading the wiring.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { DEFAULT_POLL_POLICY, OPTIONAL_POLL_POLICY_KEYS, type PollPolicy } from '../../functions/polling/poll-policy.ts';
import type { BridgeFunctionName } from '../../functions/core/catalog.ts';

export { DEFAULT_POLL_POLICY, OPTIONAL_POLL_POLICY_KEYS, type BridgeFunctionName, type PollPolicy };

/** S3 layout (must match the runtime defaults in docs/architecture.md). */
export const DEFAULT_PREFIXES = {
  inbox: 'inbox/',
  results: 'results/',
  failed: 'failed/',
  work: 'work/',
} as const;

export const DEFAULT_MAPFLOW_BASE_URL = 'https://api.mapflow.ai/rest';
export const DEFAULT_AUTH_SCHEME = 'auto';
export const DEFAULT_EVENT_SOURCE = 'mapflow.bridge';
export const DEFAULT_MAX_CONCURRENT_PROCESSINGS = 5;
export const DEFAULT_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS;
/** Data (bucket, ledger, secret) outlives the stack unless the user says otherwise. */
export const DEFAULT_REMOVAL_POLICY = RemovalPolicy.RETAIN;
export const DEFAULT_RECONCILE_SCHEDULE = events.Schedule.rate(Duration.minutes(15));
/** Intermediate files under work/ are only needed while a job runs. */
export const DEFAULT_WORK_EXPIRATION = Duration.days(30);

/** Powertools settings of every function (service name in logs, metrics namespace). */
export const POWERTOOLS_SERVICE_NAME = 'mapflow-bridge';
export const POWERTOOLS_METRICS_NAMESPACE = 'MapflowBridge';

/** Runtime of every function; NODEJS_24_X exists in this aws-cdk-lib. */
export const LAMBDA_RUNTIME = lambda.Runtime.NODEJS_24_X;
export const LAMBDA_ARCHITECTURE = lambda.Architecture.ARM_64;

// The bundling options (and this banner) live in lib/private/bundling.ts, which loads without aws-cdk-lib.
export { ESM_REQUIRE_BANNER } from './bundling.ts';

/** Size and time of each function. Uploads and result downloads stream large files; the rest are short API calls. */
export interface FunctionSettings {
  readonly memorySize: number;
  readonly timeout: Duration;
}

const SHORT: FunctionSettings = { memorySize: 512, timeout: Duration.seconds(60) };
const STREAMING: FunctionSettings = { memorySize: 1024, timeout: Duration.minutes(15) };

export const FUNCTION_SETTINGS: Record<BridgeFunctionName, FunctionSettings> = {
  'register-job': SHORT,
  'inspect-geotiff': { memorySize: 1024, timeout: Duration.minutes(2) },
  'ensure-mosaic': SHORT,
  'upload-image': STREAMING,
  'plan-processing': { memorySize: 1024, timeout: Duration.minutes(2) },
  'acquire-slot': SHORT,
  'admit-job': SHORT,
  'wait-for-slot': SHORT,
  'create-processing': SHORT,
  'poll-processing': SHORT,
  'restart-processing': SHORT,
  'store-results': STREAMING,
  'finish-part': SHORT,
  'finish-job': SHORT,
  'fail-job': SHORT,
  'release-job-slots': SHORT,
  dispatch: { memorySize: 256, timeout: Duration.seconds(30) },
  reconcile: { memorySize: 512, timeout: Duration.minutes(5) },
};

/** SQS: a message whose dispatch fails this many times goes to the dead-letter queue. */
export const DISPATCH_MAX_RECEIVE_COUNT = 5;
export const DISPATCH_BATCH_SIZE = 10;
/**
 * Message retention, stated rather than left to SQS's default (4 days). A
 * message keeps its first enqueue time when it moves to a standard DLQ, so the
 * DLQ must keep messages longer than the trigger queue.
 */
export const QUEUE_RETENTION = Duration.days(4);
export const DLQ_RETENTION = Duration.days(14);

/**
 * Step Functions: a Standard execution fails at 25,000 history events. Each
 * poll round (Task + Choice + Wait) adds about 9 events to the history of the
 * part's child execution (the Process Parts Map runs in DISTRIBUTED mode, so
 * every part has its own history). maxPolls is validated against this budget.
 */
export const HISTORY_EVENT_LIMIT = 25_000;
export const EVENTS_PER_POLL_ROUND = 9;
/** Events outside the poll loop (slot waits are bounded by the same budget). */
export const HISTORY_EVENT_RESERVE = 5_000;
export const MAX_POLLS = Math.floor((HISTORY_EVENT_LIMIT - HISTORY_EVENT_RESERVE) / EVENTS_PER_POLL_ROUND);
/** Extra time above maxJobSeconds before Step Functions stops an execution (upload, results, finishing). */
export const STATE_MACHINE_TIMEOUT_MARGIN = Duration.hours(6);

/** Lambda keeps all environment variables under 4 KB; ROUTES is the only one that can grow. */
export const MAX_ROUTES_JSON_BYTES = 3_000;

/**
 * Retry of transient errors on every Task (exponential backoff with full jitter):
 * the Lambda service errors AWS advises retrying (ClientExecutionTimeoutException
 * included: the invoke call timed out on Step Functions' side), and the `name`s
 * of the transient Mapflow errors (functions/mapflow/errors.ts) and of the
 * ledger's contention (functions/core/errors.ts LedgerContention), which Lambda
 * reports as the errorType Step Functions matches.
 */
export const TRANSIENT_ERRORS: readonly string[] = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.ClientExecutionTimeoutException',
  'Lambda.TooManyRequestsException',
  'MapflowUnavailable',
  'MapflowRateLimited',
  'MapflowOutcomeUnknown',
  // functions/core/errors.ts: a ledger row contended under every attempt (DynamoDB TransactionConflict).
  'LedgerContention',
];
export const TRANSIENT_RETRY = {
  interval: Duration.seconds(2),
  maxAttempts: 6,
  backoffRate: 2,
  maxDelay: Duration.seconds(60),
} as const;

/**
 * Versioned buckets keep a noncurrent version of every overwritten or deleted
 * object; every lifecycle rule also expires those, so "expire after N days"
 * really frees the bytes.
 */
export const NONCURRENT_VERSION_EXPIRATION = Duration.days(30);
/** Noncurrent versions of short-lived files (work/, access logs) go after a day. */
export const SHORT_NONCURRENT_VERSION_EXPIRATION = Duration.days(1);

/** Bucket settings of a created data bucket: encrypted, versioned, SSL only, private (events to EventBridge: below). */
export const DATA_BUCKET_PROPS: Readonly<s3.BucketProps> = {
  encryption: s3.BucketEncryption.S3_MANAGED,
  versioned: true,
  enforceSSL: true,
  minimumTLSVersion: 1.2,
  blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
  objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
};

/**
 * eventBridgeEnabled: true, set on the CloudFormation bucket itself: the L2
 * `eventBridgeEnabled` prop deploys a custom-resource Lambda to do the same.
 */
export const DATA_BUCKET_NOTIFICATIONS: s3.CfnBucket.NotificationConfigurationProperty = {
  eventBridgeConfiguration: { eventBridgeEnabled: true },
};

/** The server access log bucket: same posture; access log delivery requires SSE-S3. */
export const ACCESS_LOG_BUCKET_PROPS: Readonly<s3.BucketProps> = {
  ...DATA_BUCKET_PROPS,
  lifecycleRules: [
    { id: 'expire-access-logs', expiration: Duration.days(365), noncurrentVersionExpiration: SHORT_NONCURRENT_VERSION_EXPIRATION },
  ],
};

/** Ledger table: on demand, point-in-time recovery, encrypted with the AWS managed key. */
export const LEDGER_TABLE_PROPS = {
  billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  encryption: dynamodb.TableEncryption.AWS_MANAGED,
  pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
} as const;

/** Queues: SSE-SQS and SSL only. */
export const QUEUE_PROPS: Readonly<sqs.QueueProps> = {
  encryption: sqs.QueueEncryption.SQS_MANAGED,
  enforceSSL: true,
};
