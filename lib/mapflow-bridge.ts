/**
 * MapflowBridge: turns an S3 bucket into a drop box for the Mapflow API.
 *
 *   S3 inbox/ --"Object Created"--> EventBridge rule --> SQS (+DLQ) --> dispatch
 *   --> Step Functions (one execution per job) --> Mapflow, results/ in S3,
 *   a DynamoDB ledger and EventBridge events; a scheduled reconciler settles
 *   executions that ended without writing their final status.
 *
 * Bring your own bucket, secret, event bus or ledger table, or let the
 * construct create them with the safe defaults of lib/private/defaults.ts. Every
 * created resource is a public property.
 */
import { MAX_AWAITING_SECONDS } from '../functions/polling/poll-policy.ts';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { TASKS, type HandlerName } from '../functions/core/catalog.ts';
import type { InputKind } from '../functions/core/model.ts';
import {
  AUTH_ERROR_METRIC,
  CREDITS_METRIC,
  JOB_DURATION_METRIC,
  KIND_DIMENSION,
  OLDEST_IN_FLIGHT_METRIC,
  OLDEST_QUEUED_METRIC,
  OUTCOME_METRICS,
  ROUTE_DIMENSION,
} from '../functions/runtime/metric-names.ts';
import { DEFAULT_ROUTES } from '../functions/routing/index.ts';
import { BridgeDashboard } from './dashboard.ts';
import { BridgeAlarms, type BridgeAlarmsOptions } from './alarms.ts';
import { BridgeEventSchemas } from './event-schemas.ts';
import { BACKLOG_PERIOD, bridgeMetric, type IBridgeMetrics } from './metrics.ts';
import { BridgeFunction } from './private/bridge-function.ts';
import {
  ACCESS_LOG_BUCKET_PROPS,
  DATA_BUCKET_NOTIFICATIONS,
  DATA_BUCKET_PROPS,
  DEFAULT_LOG_RETENTION,
  DEFAULT_RECONCILE_SCHEDULE,
  DEFAULT_REMOVAL_POLICY,
  DEFAULT_WORK_EXPIRATION,
  DISPATCH_BATCH_SIZE,
  DISPATCH_MAX_RECEIVE_COUNT,
  DLQ_RETENTION,
  FUNCTION_SETTINGS,
  NONCURRENT_VERSION_EXPIRATION,
  POWERTOOLS_METRICS_NAMESPACE,
  POWERTOOLS_SERVICE_NAME,
  QUEUE_PROPS,
  QUEUE_RETENTION,
  SHORT_NONCURRENT_VERSION_EXPIRATION,
  STATE_MACHINE_TIMEOUT_MARGIN,
  type BridgeFunctionName,
} from './private/defaults.ts';
import { createLedgerTable, LEDGER_TTL_ATTRIBUTE } from './private/ledger-table.ts';
import { checkHistoryBudget } from './private/history-budget.ts';
import { acknowledgeBridgeNagFindings } from './private/nag.ts';
import {
  grantFunctionCapabilities,
  grantLedger,
  grantListPrefixes,
  grantObjects,
  LEDGER_READ_ACTIONS,
  OBJECT_READ_ACTIONS,
  OBJECT_WRITE_ACTIONS,
  type GrantTargets,
} from './private/permissions.ts';
import { MapflowBridgeConfigError } from './errors.ts';
import type { BridgeSettings, BridgeSettingsInput } from './settings.ts';
import { resolveBridgeSettings } from './private/validation.ts';
import { BridgeWorkflow } from './private/workflow.ts';

const S3_ACCESS_LOGS_POLICY_FLAG = '@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy';

/**
 * The construct's props: the runtime settings (BridgeSettingsInput: routes,
 * prefixes, Mapflow, concurrency, polling, events, ledger retention) and the
 * resources, logs, alarms and bundling below.
 */
export interface MapflowBridgeProps extends BridgeSettingsInput {
  /**
   * The bucket to watch and write results into. A bucket you bring must have
   * EventBridge notifications turned on (`eventBridgeEnabled: true`), since
   * the trigger is an EventBridge rule.
   * @default a new bucket: SSE-S3, versioned, SSL only, public access blocked, EventBridge notifications on
   */
  readonly bucket?: s3.IBucket;
  /**
   * Where a created bucket writes its server access logs. Ignored when you bring the bucket.
   * @default a new access-log bucket (SSE-S3, SSL only, public access blocked, logs kept 365 days)
   */
  readonly serverAccessLogsBucket?: s3.IBucket;
  /**
   * Secrets Manager secret with the Mapflow credentials, JSON `{"token": "...", "email": "..."}`.
   * @default a new secret with a generated placeholder token: put your token in it after deploying
   */
  readonly secret?: secretsmanager.ISecret;
  /**
   * The bus the job events are published on.
   * @default a new event bus
   */
  readonly eventBus?: events.IEventBus;
  /**
   * The ledger table. A table you bring must have the keys and GSIs of
   * `ledgerTableSchema()` (functions/ledger/schema.ts).
   * @default a new table: on demand, point-in-time recovery, encrypted, GSIs byStatus, byProcessingId and bySlotQueue
   */
  readonly ledgerTable?: dynamodb.ITable;
  /** Retention of the function and state machine logs. @default logs.RetentionDays.THREE_MONTHS */
  readonly logRetention?: logs.RetentionDays;
  /**
   * What happens to created data (buckets, ledger, secret, log groups) when the stack is deleted.
   * DESTROY empties the created buckets first, every object version included
   * (`autoDeleteObjects`, one custom-resource Lambda), so `cdk destroy` can delete them.
   * RETAIN keeps them (and turns on the ledger's deletion protection): see docs/deploy.md for what stays behind.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Ship source maps with the function bundles and run Node with
   * `--enable-source-maps` (readable stack traces, slower cold starts and error paths).
   * @default false
   */
  readonly sourceMaps?: boolean;
  /**
   * Use the AWS SDK v3 of the nodejs24.x runtime instead of bundling it: the
   * bundles shrink to a fifth to a third (see docs/architecture.md, "Lean
   * handlers"), but the SDK version is the runtime's, not the one the bridge
   * was tested with, and cold starts resolve the SDK's files one by one.
   * Applies to functions bundled from source, not to the package's prebuilt
   * bundles.
   * @default false
   */
  readonly externalAwsSdk?: boolean;
  /** When the reconciler runs. @default every 15 minutes */
  readonly reconcileSchedule?: events.Schedule;
  /** Lifecycle expiry of files under the work prefix of a created bucket. @default 30 days */
  readonly workExpiration?: Duration;
  /** Create the CloudWatch dashboard. @default true */
  readonly dashboard?: boolean;
  /**
   * CloudWatch alarms (lib/alarms.ts): DLQ messages, broken executions, jobs FAILED per
   * hour, oldest job in flight per route, queued too long, Mapflow auth errors, and (with
   * `dailyCreditBudget`) credits per day; each threshold is a prop. `false` for none.
   * @default every alarm at its default threshold, notifying a new SNS topic
   */
  readonly alarms?: BridgeAlarmsOptions | false;
  /**
   * Create an EventBridge schema registry with the JSON Schema (draft-04) of every
   * job event, so subscribers get code bindings from AWS's tools. `true` lets
   * CloudFormation name the registry.
   * @default false
   */
  readonly eventSchemaRegistry?: boolean | { readonly registryName?: string };
}

/**
 * Turns an S3 bucket into a drop box for the Mapflow API: files dropped under
 * the inbox prefix become Mapflow processings, their results land under the
 * results prefix, every job is tracked in a DynamoDB ledger and announced on an
 * event bus. Every resource it creates is a public property.
 */
export class MapflowBridge extends Construct implements IBridgeMetrics {
  /** The watched bucket (created or yours). */
  public readonly bucket: s3.IBucket;
  /** The server access log bucket, when the construct created the data bucket and no log bucket was given. */
  public readonly accessLogsBucket?: s3.IBucket;
  /** The secret with the Mapflow credentials (created or yours). */
  public readonly secret: secretsmanager.ISecret;
  /** The bus the job events are published on (created or yours). */
  public readonly eventBus: events.IEventBus;
  /** The ledger table: one row per job (created or yours). */
  public readonly ledgerTable: dynamodb.ITable;
  /** Trigger queue between the S3 rule and dispatch. */
  public readonly queue: sqs.Queue;
  /** Drops that could not be delivered or dispatched. */
  public readonly deadLetterQueue: sqs.Queue;
  /** The "Object Created" rule on the default bus (S3 publishes there). */
  public readonly triggerRule: events.Rule;
  /** The schedule of the reconciler. */
  public readonly reconcileRule: events.Rule;
  /** The workflow: one execution per job. */
  public readonly stateMachine: sfn.StateMachine;
  /** The state machine's execution log group. */
  public readonly stateMachineLogGroup: logs.LogGroup;
  /** Every function, by handler name (the Tasks, dispatch and reconcile). */
  public readonly functions: Record<BridgeFunctionName, lambda.Function>;
  /** Starts an execution per dropped file, from the trigger queue. */
  public readonly dispatchFunction: lambda.Function;
  /** Settles jobs whose execution ended without a final status, and emits the backlog metrics. */
  public readonly reconcileFunction: lambda.Function;
  /** The CloudWatch dashboard (unless `dashboard: false`). */
  public readonly dashboard?: BridgeDashboard;
  /** The alarms and their SNS topic (unless `alarms: false`). */
  public readonly alarms?: BridgeAlarms;
  /** The schema registry of the job events, with `eventSchemaRegistry`. */
  public readonly eventSchemas?: BridgeEventSchemas;
  /** The validated settings (prefixes, routes, poll policy...) with defaults applied. */
  public readonly settings: BridgeSettings;

  private readonly grantTargets: GrantTargets;

  constructor(scope: Construct, id: string, props: MapflowBridgeProps = {}) {
    super(scope, id);
    // Access logs are delivered under a bucket policy, not the legacy ACL (which BUCKET_OWNER_ENFORCED forbids).
    if (this.node.tryGetContext(S3_ACCESS_LOGS_POLICY_FLAG) === undefined) this.node.setContext(S3_ACCESS_LOGS_POLICY_FLAG, true);
    this.settings = resolveBridgeSettings(this, props);
    checkResourceProps(this, props);
    const { prefixes } = this.settings;
    const removalPolicy = props.removalPolicy ?? DEFAULT_REMOVAL_POLICY;
    const logRetention = props.logRetention ?? DEFAULT_LOG_RETENTION;

    // ---- Data: bucket, secret, bus, ledger (bring your own or created here)
    if (props.bucket) {
      this.bucket = props.bucket;
    } else {
      const accessLogs =
        props.serverAccessLogsBucket ??
        new s3.Bucket(this, 'AccessLogsBucket', {
          ...ACCESS_LOG_BUCKET_PROPS,
          removalPolicy,
          autoDeleteObjects: removalPolicy === RemovalPolicy.DESTROY,
        });
      if (!props.serverAccessLogsBucket) this.accessLogsBucket = accessLogs;
      this.bucket = new s3.Bucket(this, 'Bucket', {
        ...DATA_BUCKET_PROPS,
        serverAccessLogsBucket: accessLogs,
        serverAccessLogsPrefix: 'data-bucket/',
        removalPolicy,
        // DeletionPolicy Delete alone fails on a bucket that holds objects (or versions): empty it first.
        autoDeleteObjects: removalPolicy === RemovalPolicy.DESTROY,
        lifecycleRules: [
          {
            id: 'abort-incomplete-uploads',
            abortIncompleteMultipartUploadAfter: Duration.days(7),
            noncurrentVersionExpiration: NONCURRENT_VERSION_EXPIRATION,
          },
          {
            id: 'expire-work-files',
            prefix: prefixes.work,
            expiration: props.workExpiration ?? DEFAULT_WORK_EXPIRATION,
            noncurrentVersionExpiration: SHORT_NONCURRENT_VERSION_EXPIRATION,
          },
        ],
      });
      // S3 -> EventBridge natively (the L2 prop would add a custom-resource Lambda to do the same).
      (this.bucket.node.defaultChild as s3.CfnBucket).notificationConfiguration = DATA_BUCKET_NOTIFICATIONS;
    }
    this.secret =
      props.secret ??
      new secretsmanager.Secret(this, 'MapflowSecret', {
        description: 'Mapflow API credentials of mapflow-bridge: JSON {"token": "...", "email": "..."}; replace the generated token',
        generateSecretString: {
          secretStringTemplate: JSON.stringify({ email: '' }),
          generateStringKey: 'token',
          excludePunctuation: true,
        },
        removalPolicy,
      });
    this.eventBus = props.eventBus ?? new events.EventBus(this, 'EventBus', { description: 'mapflow-bridge job events' });
    this.ledgerTable =
      props.ledgerTable ??
      createLedgerTable(this, 'Ledger', { removalPolicy, ttlAttribute: this.settings.ledgerRetentionDays ? LEDGER_TTL_ATTRIBUTE : undefined });
    this.grantTargets = { bucket: this.bucket, prefixes, ledgerTable: this.ledgerTable, secret: this.secret, eventBus: this.eventBus };

    // ---- Task functions and the state machine
    const environment = this.runtimeEnvironment();
    const makeFunction = (name: BridgeFunctionName, extraEnvironment: Record<string, string> = {}): lambda.Function => {
      const created = new BridgeFunction(this, functionId(name), {
        name,
        environment: { ...environment, ...extraEnvironment },
        logRetention,
        removalPolicy,
        sourceMaps: props.sourceMaps ?? false,
        externalAwsSdk: props.externalAwsSdk ?? false,
      });
      return created.function;
    };
    const taskFunctions = Object.fromEntries(TASKS.map((t) => [t.fn, makeFunction(t.fn)])) as Record<HandlerName, lambda.Function>;
    for (const [name, fn] of Object.entries(taskFunctions)) grantFunctionCapabilities(name as HandlerName, fn, this.grantTargets);

    const workflow = new BridgeWorkflow(this, 'Workflow', {
      taskFunctions,
      maxConcurrency: this.settings.maxConcurrentProcessings,
      // Time a processing spends AWAITING an ordered scene does not count toward maxJobSeconds, up to MAX_AWAITING_SECONDS (poll-policy.ts).
      timeout: Duration.seconds(this.settings.pollPolicy.maxJobSeconds + MAX_AWAITING_SECONDS).plus(STATE_MACHINE_TIMEOUT_MARGIN),
      logRetention,
      removalPolicy,
    });
    this.stateMachine = workflow.stateMachine;
    // Every loop of the definition at its bound must fit 25,000 history events per execution.
    checkHistoryBudget(this, this.stateMachine, this.settings.pollPolicy);
    this.stateMachineLogGroup = workflow.logGroup;
    const workflowTargets: GrantTargets = { ...this.grantTargets, stateMachine: this.stateMachine };

    // ---- Trigger: S3 "Object Created" under the inbox -> SQS -> dispatch
    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', { ...QUEUE_PROPS, retentionPeriod: DLQ_RETENTION });
    this.queue = new sqs.Queue(this, 'TriggerQueue', {
      ...QUEUE_PROPS,
      retentionPeriod: QUEUE_RETENTION,
      // AWS advises six times the function timeout for SQS event sources.
      visibilityTimeout: Duration.seconds(6 * FUNCTION_SETTINGS.dispatch.timeout.toSeconds()),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: DISPATCH_MAX_RECEIVE_COUNT },
    });
    this.triggerRule = new events.Rule(this, 'InboxObjectCreated', {
      description: `mapflow-bridge: new objects under ${prefixes.inbox} (dispatch accepts or rejects each file)`,
      eventPattern: inboxEventPattern(this.bucket.bucketName, prefixes.inbox),
      targets: [new targets.SqsQueue(this.queue, { deadLetterQueue: this.deadLetterQueue })],
    });

    const stateMachineEnvironment = { STATE_MACHINE_ARN: this.stateMachine.stateMachineArn };
    this.dispatchFunction = makeFunction('dispatch', stateMachineEnvironment);
    grantFunctionCapabilities('dispatch', this.dispatchFunction, workflowTargets);
    this.dispatchFunction.addEventSource(
      new SqsEventSource(this.queue, { batchSize: DISPATCH_BATCH_SIZE, reportBatchItemFailures: true }),
    );

    // ---- Reconciler on a schedule
    // INBOX_BUCKET: the inbox sweep lists it for objects whose notification never came.
    this.reconcileFunction = makeFunction('reconcile', { ...stateMachineEnvironment, INBOX_BUCKET: this.bucket.bucketName });
    grantFunctionCapabilities('reconcile', this.reconcileFunction, workflowTargets);
    this.reconcileRule = new events.Rule(this, 'ReconcileSchedule', {
      description: 'mapflow-bridge: settle jobs whose execution ended without a final status',
      schedule: props.reconcileSchedule ?? DEFAULT_RECONCILE_SCHEDULE,
      targets: [new targets.LambdaFunction(this.reconcileFunction, { retryAttempts: 2 })],
    });

    this.functions = { ...taskFunctions, dispatch: this.dispatchFunction, reconcile: this.reconcileFunction };

    if (props.alarms !== false) {
      this.alarms = new BridgeAlarms(this, 'Alarms', {
        ...props.alarms,
        metrics: this,
        stateMachine: this.stateMachine,
        deadLetterQueue: this.deadLetterQueue,
        routes: (this.settings.routes ?? DEFAULT_ROUTES).routes.map((route) => route.name),
      });
    }

    if (props.dashboard ?? true) {
      this.dashboard = new BridgeDashboard(this, 'Dashboard', {
        ...(this.alarms ? { alarms: this.alarms } : {}),
        metrics: this,
        stateMachine: this.stateMachine,
        functions: this.functions,
        queue: this.queue,
        deadLetterQueue: this.deadLetterQueue,
        ledgerTable: this.ledgerTable,
      });
    }

    if (props.eventSchemaRegistry) {
      const registryName = typeof props.eventSchemaRegistry === 'object' ? props.eventSchemaRegistry.registryName : undefined;
      this.eventSchemas = new BridgeEventSchemas(this, 'EventSchemas', { eventSource: this.settings.eventSource, registryName });
    }

    acknowledgeBridgeNagFindings(this, Object.values(prefixes));
  }

  /** Read access to the ledger (GetItem, Query on the table and its GSIs), e.g. for a dashboard or report job. */
  public grantReadLedger(grantee: iam.IGrantable): iam.Grant {
    return grantLedger(grantee, this.ledgerTable, LEDGER_READ_ACTIONS);
  }

  /** Read access to results and failure reports (objects under the results and failed prefixes, and listing them). */
  public grantReadResults(grantee: iam.IGrantable): iam.Grant {
    const { results, failed } = this.settings.prefixes;
    grantObjects(grantee, this.bucket, failed, OBJECT_READ_ACTIONS, ['kms:Decrypt']);
    grantListPrefixes(grantee, this.bucket, [results, failed]);
    return grantObjects(grantee, this.bucket, results, OBJECT_READ_ACTIONS, ['kms:Decrypt']);
  }

  /** Lets a producer drop files into the inbox (PutObject under the inbox prefix only). */
  public grantWriteInbox(grantee: iam.IGrantable): iam.Grant {
    return grantObjects(grantee, this.bucket, this.settings.prefixes.inbox, OBJECT_WRITE_ACTIONS, ['kms:Decrypt', 'kms:GenerateDataKey']);
  }

  /** Lets an operator or pipeline write the Mapflow credentials into the secret. */
  public grantWriteSecret(grantee: iam.IGrantable): iam.Grant {
    return this.secret.grantWrite(grantee);
  }

  // ---- Metrics (IBridgeMetrics in lib/metrics.ts has their defaults): what functions/runtime/metrics.ts emits.
  /** A metric of the bridge's namespace by name, with the `service` dimension (IBridgeMetrics.metric). */
  public metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.ownMetric(metricName, {}, {}, props);
  }

  /** Jobs of a kind that ended SUCCEEDED (IBridgeMetrics.metricJobsSucceeded). */
  public metricJobsSucceeded(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.jobMetric(OUTCOME_METRICS.SUCCEEDED, kind, props);
  }

  /** Jobs of a kind that ended FAILED (IBridgeMetrics.metricJobsFailed). */
  public metricJobsFailed(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.jobMetric(OUTCOME_METRICS.FAILED, kind, props);
  }

  /** Jobs of a kind that ended REJECTED (IBridgeMetrics.metricJobsRejected). */
  public metricJobsRejected(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.jobMetric(OUTCOME_METRICS.REJECTED, kind, props);
  }

  /** Credits spent by jobs of a kind (IBridgeMetrics.metricCreditsSpent). */
  public metricCreditsSpent(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.jobMetric(CREDITS_METRIC, kind, props);
  }

  /** Seconds from a job's creation to its final status (IBridgeMetrics.metricJobDuration). */
  public metricJobDuration(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.ownMetric(JOB_DURATION_METRIC, { [KIND_DIMENSION]: kind }, { statistic: 'Average' }, props);
  }

  /** Jobs failed on refused Mapflow credentials (IBridgeMetrics.metricMapflowAuthErrors). */
  public metricMapflowAuthErrors(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.jobMetric(AUTH_ERROR_METRIC, kind, props);
  }

  /** Age of the oldest unfinished job of a route (IBridgeMetrics.metricOldestJobInFlight). */
  public metricOldestJobInFlight(route: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.ownMetric(OLDEST_IN_FLIGHT_METRIC, { [ROUTE_DIMENSION]: route }, { statistic: 'Maximum', period: BACKLOG_PERIOD }, props);
  }

  /** Longest wait of a QUEUED job for a slot (IBridgeMetrics.metricOldestQueuedJob). */
  public metricOldestQueuedJob(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.ownMetric(OLDEST_QUEUED_METRIC, {}, { statistic: 'Maximum', period: BACKLOG_PERIOD }, props);
  }

  /** A count per job kind: summed over the period. */
  private jobMetric(metricName: string, kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.ownMetric(metricName, { [KIND_DIMENSION]: kind }, { statistic: 'Sum' }, props);
  }

  private ownMetric(
    metricName: string,
    dimensions: Record<string, string>,
    defaults: cloudwatch.MetricOptions,
    props?: cloudwatch.MetricOptions,
  ): cloudwatch.Metric {
    // The namespace and service every function gets in its environment (lib/private/bridge-function.ts).
    const identity = { namespace: POWERTOOLS_METRICS_NAMESPACE, service: POWERTOOLS_SERVICE_NAME };
    // attachTo: the metric lives in this bridge's account and region (as aws-cdk-lib's own metric methods do).
    return bridgeMetric(identity, metricName, dimensions, defaults, props).attachTo(this);
  }

  /** Environment of docs/architecture.md shared by every function. */
  private runtimeEnvironment(): Record<string, string> {
    const s = this.settings;
    return {
      LEDGER_TABLE: this.ledgerTable.tableName,
      EVENT_BUS_NAME: this.eventBus.eventBusArn,
      EVENT_SOURCE: s.eventSource,
      // A full ARN when known; an imported-by-name secret is found by its name.
      MAPFLOW_SECRET_ARN: this.secret.secretFullArn ?? this.secret.secretName,
      MAPFLOW_BASE_URL: s.mapflowBaseUrl,
      MAPFLOW_AUTH_SCHEME: s.authScheme,
      ...(s.routes ? { ROUTES: JSON.stringify(s.routes) } : {}),
      INBOX_PREFIX: s.prefixes.inbox,
      RESULTS_PREFIX: s.prefixes.results,
      FAILED_PREFIX: s.prefixes.failed,
      WORK_PREFIX: s.prefixes.work,
      MAX_CONCURRENT_PROCESSINGS: String(s.maxConcurrentProcessings),
      POLL_POLICY: JSON.stringify(s.pollPolicy),
      ...(s.ledgerRetentionDays ? { LEDGER_RETENTION_DAYS: String(s.ledgerRetentionDays) } : {}),
    };
  }
}

/**
 * The EventBridge pattern of the trigger: "Object Created" in this bucket,
 * key under the inbox. No `wildcard` (EventBridge refuses wildcard rules above
 * its complexity limit, and counts them against a per-bus quota), and no
 * suffix filter: the values of one field are OR-ed, so a prefix AND a suffix
 * on the key cannot be expressed without a wildcard. Every object under the
 * inbox reaches dispatch, which accepts it or ends it REJECTED with a report.
 * Results, reports, work files and tags can never match: they are written
 * outside the inbox (the prefixes are validated apart), and tagging emits
 * "Object Tags Added".
 */
export function inboxEventPattern(bucketName: string, inboxPrefix: string): events.EventPattern {
  return {
    source: ['aws.s3'],
    detailType: ['Object Created'],
    detail: {
      bucket: { name: [bucketName] },
      // S3 keys are case-sensitive and the prefix is plain ASCII (validated), so an exact prefix is right.
      object: { key: [{ prefix: inboxPrefix }] },
    },
  };
}

/** Construct id of a function: 'register-job' -> 'RegisterJobFunction'. */
export function functionId(name: BridgeFunctionName): string {
  return `${name.replace(/(^|-)([a-z])/g, (_m, _dash, c: string) => c.toUpperCase())}Function`;
}

/** Checks props that are combinations of resources. */
function checkResourceProps(scope: Construct, props: MapflowBridgeProps): void {
  if (props.bucket && props.serverAccessLogsBucket) {
    throw new MapflowBridgeConfigError(
      'serverAccessLogsBucket only applies to a bucket the construct creates; configure access logs on your own bucket instead',
      scope,
    );
  }
  if (props.bucket && props.workExpiration) {
    throw new MapflowBridgeConfigError('workExpiration only applies to a bucket the construct creates; add a lifecycle rule to your bucket', scope);
  }
  if (props.workExpiration && props.workExpiration.toSeconds({ integral: false }) < 86_400) {
    throw new MapflowBridgeConfigError('workExpiration must be at least 1 day', scope);
  }
}
