/**
 * BridgeAlarms: CloudWatch alarms that tell an operator something is wrong,
 * each with a documented threshold and an optional SNS topic (yours, or one
 * created here). docs/operations.md has the runbook: what each alarm means
 * and what to do when it fires.
 *
 * Metrics: the queues' and the state machine's own, and the EMF metrics of
 * functions/runtime/metrics.ts (job outcomes, credits and auth errors from
 * the final steps; the backlog ages from the reconciler's sweep).
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { INPUT_KINDS, type InputKind } from '../functions/core/model.ts';
import { MapflowBridgeConfigError } from './errors.ts';
import type { IBridgeMetrics } from './metrics.ts';

/** Thresholds and notification of the alarms (the `alarms` prop of MapflowBridge). */
export interface BridgeAlarmsOptions {
  /**
   * Where alarms (and their return to OK) are sent. Bring your own topic, or
   * let the construct create one (`createTopic`) and subscribe to it.
   * @default a new topic when createTopic is true, else no notification (the alarms still show in CloudWatch)
   */
  readonly topic?: sns.ITopic;
  /** Create an SNS topic for the alarms when no `topic` is given. @default true */
  readonly createTopic?: boolean;
  /** Messages in the dead-letter queue (drops that were never dispatched) at which to alarm. @default 1 */
  readonly deadLetterMessages?: number;
  /**
   * Executions that failed or timed out in 15 minutes, beyond the jobs that
   * ended FAILED or REJECTED (those end their execution as failed on purpose).
   * @default 1
   */
  readonly brokenExecutions?: number;
  /** Jobs that ended FAILED in one hour at which to alarm. @default 5 */
  readonly jobsFailedPerHour?: number;
  /** How long a job normally takes, from drop to result; an unfinished job older than this alarms. @default 2 hours */
  readonly expectedJobDuration?: Duration;
  /** `expectedJobDuration` per route name, for routes that are slower or faster than the rest. @default none */
  readonly expectedJobDurationByRoute?: Record<string, Duration>;
  /** A job waiting for a concurrency slot (QUEUED) longer than this alarms. @default 30 minutes */
  readonly queuedTooLong?: Duration;
  /** Jobs failed by Mapflow refusing the credentials (a rotated or revoked token) in 15 minutes at which to alarm. @default 1 */
  readonly authErrors?: number;
  /** Credits spent in one day (UTC) above which to alarm. @default no credit alarm */
  readonly dailyCreditBudget?: number;
}

/** What BridgeAlarms watches: MapflowBridge passes itself as `metrics`, and its state machine, DLQ and routes. */
export interface BridgeAlarmsProps extends BridgeAlarmsOptions {
  /** The bridge's own metrics (job outcomes, credits, backlog). */
  readonly metrics: IBridgeMetrics;
  /** The workflow whose failed and timed-out executions are watched. */
  readonly stateMachine: sfn.IStateMachine;
  /** The dead-letter queue of undispatched drops. */
  readonly deadLetterQueue: sqs.IQueue;
  /** Route names (one oldest-job alarm each). */
  readonly routes: readonly string[];
}

/** The default thresholds of BridgeAlarmsOptions. */
export const ALARM_DEFAULTS = {
  deadLetterMessages: 1,
  brokenExecutions: 1,
  jobsFailedPerHour: 5,
  expectedJobDuration: Duration.hours(2),
  queuedTooLong: Duration.minutes(30),
  authErrors: 1,
} as const;

const KINDS: readonly InputKind[] = ['geojson', 'geotiff'];
/** A job metric of IBridgeMetrics, by kind. */
type JobMetric = (kind: InputKind, props?: cloudwatch.MetricOptions) => cloudwatch.Metric;

/** The alarms of a bridge (MapflowBridge's `alarms`), with the topic they notify. */
export class BridgeAlarms extends Construct {
  /** The topic alarms notify (created or yours); undefined when none. */
  public readonly topic?: sns.ITopic;
  /** Every alarm, by a short name: deadLetter, brokenExecutions, jobsFailed, oldestInFlight:<route>, queuedTooLong, authErrors, dailyCredits. */
  public readonly alarms: Record<string, cloudwatch.Alarm> = {};
  /** The metric behind each alarm (the dashboard graphs them). */
  public readonly metrics: Record<string, cloudwatch.IMetric> = {};
  /** The threshold of each alarm. */
  public readonly thresholds: Record<string, number> = {};

  constructor(scope: Construct, id: string, props: BridgeAlarmsProps) {
    super(scope, id);
    validate(this, props);
    this.topic = props.topic ?? ((props.createTopic ?? true) ? new sns.Topic(this, 'Topic', { displayName: 'mapflow-bridge alarms', enforceSSL: true }) : undefined);

    const m = props.metrics;
    const job = (metric: JobMetric, kind: InputKind, period: Duration) => metric.call(m, kind, { statistic: 'Sum', period });
    /** A metric summed over both kinds of input, missing data as 0. */
    const overKinds = (metric: JobMetric, period: Duration, label: string, prefix: string) =>
      new cloudwatch.MathExpression({
        expression: KINDS.map((_, i) => `FILL(${prefix}${i}, 0)`).join(' + '),
        usingMetrics: Object.fromEntries(KINDS.map((kind, i) => [`${prefix}${i}`, job(metric, kind, period)])),
        period,
        label,
      });

    // Drops that never became jobs.
    this.add(
      'deadLetter',
      'DeadLetterMessages',
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: Duration.minutes(5) }),
      props.deadLetterMessages ?? ALARM_DEFAULTS.deadLetterMessages,
      'Drops in the dead-letter queue: they were never dispatched. See "DeadLetterMessages" in docs/operations.md (redrive the DLQ).',
    );

    // Executions that broke: failed or timed out beyond the jobs that ended FAILED/REJECTED on purpose.
    const period15 = Duration.minutes(15);
    const sm = props.stateMachine;
    // Jobs whose execution fails on purpose. Rejections of every kind: an unsupported file is rejected
    // (kind 'unsupported') by Register Job inside its execution (functions/jobs/steps/register-job.ts).
    const onPurpose = Object.fromEntries([
      ...KINDS.map((kind, i) => [`jf${i}`, job(m.metricJobsFailed, kind, period15)]),
      ...INPUT_KINDS.map((kind, i) => [`jr${i}`, job(m.metricJobsRejected, kind, period15)]),
    ]);
    this.add(
      'brokenExecutions',
      'BrokenExecutions',
      new cloudwatch.MathExpression({
        expression: `FILL(sf, 0) + FILL(st, 0) - (${Object.keys(onPurpose).map((id) => `FILL(${id}, 0)`).join(' + ')})`,
        usingMetrics: {
          sf: sm.metricFailed({ statistic: 'Sum', period: period15 }),
          st: sm.metricTimedOut({ statistic: 'Sum', period: period15 }),
          ...onPurpose,
        },
        period: period15,
        label: 'executions failed or timed out, beyond FAILED/REJECTED jobs',
      }),
      props.brokenExecutions ?? ALARM_DEFAULTS.brokenExecutions,
      'Executions failed or timed out without ending their job (the reconciler settles them as EXECUTION_LOST). See "BrokenExecutions" in docs/operations.md.',
    );

    this.add(
      'jobsFailed',
      'JobsFailedPerHour',
      overKinds(m.metricJobsFailed, Duration.hours(1), 'jobs FAILED per hour', 'f'),
      props.jobsFailedPerHour ?? ALARM_DEFAULTS.jobsFailedPerHour,
      'Many jobs FAILED in the last hour. See "JobsFailedPerHour" in docs/operations.md.',
    );

    for (const route of props.routes) {
      const expected = props.expectedJobDurationByRoute?.[route] ?? props.expectedJobDuration ?? ALARM_DEFAULTS.expectedJobDuration;
      this.add(
        `oldestInFlight:${route}`,
        `OldestJobInFlight-${route.replace(/[^A-Za-z0-9_-]/g, '_')}`,
        m.metricOldestJobInFlight(route),
        expected.toSeconds(),
        `A job of route ${route} has been unfinished for longer than ${expected.toHumanString()}. See "OldestJobInFlight" in docs/operations.md.`,
      );
    }

    this.add(
      'queuedTooLong',
      'QueuedTooLong',
      m.metricOldestQueuedJob(),
      (props.queuedTooLong ?? ALARM_DEFAULTS.queuedTooLong).toSeconds(),
      'A job has waited for a concurrency slot for too long. See "QueuedTooLong" in docs/operations.md.',
    );

    this.add(
      'authErrors',
      'MapflowAuthErrors',
      overKinds(m.metricMapflowAuthErrors, Duration.minutes(15), 'jobs failed on Mapflow credentials', 'a'),
      props.authErrors ?? ALARM_DEFAULTS.authErrors,
      'Mapflow refused the token (rotated or revoked). See "MapflowAuthErrors" in docs/operations.md (rotate the token).',
    );

    if (props.dailyCreditBudget !== undefined) {
      this.add(
        'dailyCredits',
        'CreditsPerDay',
        overKinds(m.metricCreditsSpent, Duration.days(1), 'credits spent per day', 'c'),
        props.dailyCreditBudget,
        `More than ${props.dailyCreditBudget} credits spent in a day. See "CreditsPerDay" in docs/operations.md.`,
        cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      );
    }
  }

  private add(
    name: string,
    id: string,
    metric: cloudwatch.IMetric,
    threshold: number,
    description: string,
    comparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  ): void {
    const alarm = new cloudwatch.Alarm(this, id, {
      metric,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator,
      // No data means nothing happened (EMF metrics only exist when there is something to count).
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: `mapflow-bridge: ${description}`,
    });
    if (this.topic) {
      alarm.addAlarmAction(new actions.SnsAction(this.topic));
      alarm.addOkAction(new actions.SnsAction(this.topic));
    }
    this.alarms[name] = alarm;
    this.metrics[name] = metric;
    this.thresholds[name] = threshold;
  }
}

function validate(scope: Construct, props: BridgeAlarmsOptions): void {
  const counts: [string, number | undefined][] = [
    ['deadLetterMessages', props.deadLetterMessages],
    ['brokenExecutions', props.brokenExecutions],
    ['jobsFailedPerHour', props.jobsFailedPerHour],
    ['authErrors', props.authErrors],
  ];
  for (const [name, value] of counts) {
    if (value !== undefined && (!Number.isInteger(value) || value < 1)) throw new MapflowBridgeConfigError(`alarms.${name} must be a whole number of at least 1, got ${value}`, scope);
  }
  if (props.dailyCreditBudget !== undefined && !(Number.isFinite(props.dailyCreditBudget) && props.dailyCreditBudget >= 0)) {
    throw new MapflowBridgeConfigError(`alarms.dailyCreditBudget must be a number of credits >= 0, got ${props.dailyCreditBudget}`, scope);
  }
  const durations: [string, Duration | undefined][] = [
    ['expectedJobDuration', props.expectedJobDuration],
    ['queuedTooLong', props.queuedTooLong],
    ...Object.entries(props.expectedJobDurationByRoute ?? {}).map(([route, d]): [string, Duration] => [`expectedJobDurationByRoute.${route}`, d]),
  ];
  for (const [name, value] of durations) {
    if (value !== undefined && value.toSeconds({ integral: false }) < 60) throw new MapflowBridgeConfigError(`alarms.${name} must be at least 1 minute`, scope);
  }
  if (props.topic && props.createTopic) throw new MapflowBridgeConfigError('alarms: give a topic or createTopic, not both', scope);
}
