/**
 * An operations dashboard: executions, Lambda errors, the trigger queue and its
 * dead-letter queue, and how to query the ledger's GSIs.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { GSI_BY_PROCESSING_ID, GSI_BY_STATUS } from '../functions/ledger/schema.ts';
import type { InputKind } from '../functions/core/model.ts';
import type { BridgeAlarms } from './alarms.ts';
import type { IBridgeMetrics } from './metrics.ts';

/** What BridgeDashboard graphs: MapflowBridge passes itself as `metrics`, and its resources. */
export interface BridgeDashboardProps {
  /** The bridge's own metrics (job outcomes, credits). */
  readonly metrics: IBridgeMetrics;
  /** The workflow (executions widget). */
  readonly stateMachine: sfn.IStateMachine;
  /** The functions whose errors are graphed, by name. */
  readonly functions: Record<string, lambda.IFunction>;
  /** The trigger queue. */
  readonly queue: sqs.IQueue;
  /** The dead-letter queue. */
  readonly deadLetterQueue: sqs.IQueue;
  /** The ledger (its name goes into the query help). */
  readonly ledgerTable: dynamodb.ITable;
  /** Alarms whose metrics get a widget each (with the threshold drawn). */
  readonly alarms?: BridgeAlarms;
}

/** The operations dashboard of a bridge (MapflowBridge's `dashboard`). */
export class BridgeDashboard extends Construct {
  /** The CloudWatch dashboard. */
  public readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: BridgeDashboardProps) {
    super(scope, id);
    const period = Duration.minutes(5);
    const sum = { statistic: cloudwatch.Stats.SUM, period };
    const sm = props.stateMachine;

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.days(1),
    });
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Jobs (executions)',
        width: 12,
        left: [
          sm.metricStarted({ ...sum, label: 'started' }),
          sm.metricSucceeded({ ...sum, label: 'succeeded' }),
          sm.metricFailed({ ...sum, label: 'failed' }),
          sm.metricTimedOut({ ...sum, label: 'timed out' }),
          sm.metricAborted({ ...sum, label: 'aborted' }),
        ],
      }),
      new cloudwatch.GraphWidget({
        title: 'Lambda errors',
        width: 12,
        left: Object.entries(props.functions).map(([name, fn]) => fn.metricErrors({ ...sum, label: name })),
      }),
    );
    // Job outcomes and credits, from the EMF metrics the final steps emit (functions/runtime/metrics.ts).
    const m = props.metrics;
    const outcomes = { succeeded: m.metricJobsSucceeded, failed: m.metricJobsFailed, rejected: m.metricJobsRejected };
    const kinds: InputKind[] = ['geojson', 'geotiff'];
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Job outcomes (ledger final statuses)',
        width: 12,
        left: kinds.flatMap((kind) => Object.entries(outcomes).map(([status, metric]) => metric.call(m, kind, { ...sum, label: `${kind} ${status}` }))),
      }),
      new cloudwatch.GraphWidget({
        title: 'Credits spent',
        width: 12,
        left: kinds.map((kind) => m.metricCreditsSpent(kind, { ...sum, label: kind })),
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queue depth (undispatched drops)',
        width: 8,
        left: [props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: cloudwatch.Stats.MAXIMUM, period })],
      }),
      new cloudwatch.GraphWidget({
        title: 'Trigger queue',
        width: 8,
        left: [props.queue.metricApproximateNumberOfMessagesVisible({ statistic: cloudwatch.Stats.MAXIMUM, period, label: 'visible' })],
        right: [props.queue.metricApproximateAgeOfOldestMessage({ statistic: cloudwatch.Stats.MAXIMUM, period, label: 'oldest (s)' })],
      }),
      new cloudwatch.TextWidget({ width: 8, height: 6, markdown: ledgerHelp(props.ledgerTable.tableName) }),
    );
    // The metric behind every alarm, with its threshold line (docs/operations.md has the runbook).
    if (props.alarms) {
      this.dashboard.addWidgets(
        new cloudwatch.AlarmStatusWidget({ title: 'Alarms', width: 24, alarms: Object.values(props.alarms.alarms) }),
        ...Object.entries(props.alarms.metrics).map(
          ([name, metric]) =>
            new cloudwatch.GraphWidget({
              title: `Alarm: ${name}`,
              width: 8,
              height: 5,
              left: [metric],
              leftAnnotations: [{ value: props.alarms?.thresholds[name] ?? 0, label: 'threshold', color: '#d13212' }],
            }),
        ),
      );
    }
  }
}

/** Markdown on querying the ledger GSIs (the table name is resolved at deploy time). */
function ledgerHelp(tableName: string): string {
  return [
    '### Ledger queries',
    `Jobs by status, newest first (GSI \`${GSI_BY_STATUS}\`):`,
    '```',
    `aws dynamodb query --table-name ${tableName} --index-name ${GSI_BY_STATUS} \\`,
    `  --key-condition-expression '#s = :s' --expression-attribute-names '{"#s":"status"}' \\`,
    `  --expression-attribute-values '{":s":{"S":"FAILED"}}' --no-scan-index-forward`,
    '```',
    `A job from its Mapflow processing id (GSI \`${GSI_BY_PROCESSING_ID}\`):`,
    '```',
    `aws dynamodb query --table-name ${tableName} --index-name ${GSI_BY_PROCESSING_ID} \\`,
    `  --key-condition-expression 'processingId = :p' --expression-attribute-values '{":p":{"S":"<id>"}}'`,
    '```',
  ].join('\n');
}
