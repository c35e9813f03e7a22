/**
 * The construct's alarms (lib/alarms.ts) in the synthesized template: one per
 * condition of the runbook, with the documented default thresholds, the props
 * that change them, the SNS topic (created or brought), and the dashboard's
 * widgets behind them.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import * as sns from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { synthBridge } from './support.ts';

type Resource = { Properties: Record<string, unknown> };
const alarmsOf = (template: ReturnType<typeof synthBridge>['template']) =>
  Object.values(template.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>).map((r) => r.Properties);
const byDescription = (alarms: Record<string, unknown>[], text: string) => alarms.find((a) => String(a.AlarmDescription).includes(text));

describe('alarms', () => {
  it('creates every alarm with its default threshold, notifying a created SNS topic on ALARM and OK', () => {
    // Act
    const { template, bridge, stack } = synthBridge();
    // Assess
    const alarms = alarmsOf(template);
    // DLQ, broken executions, jobs failed/h, oldest in flight for each built-in route (default, buildings), queued, auth.
    expect(alarms).toHaveLength(7);
    template.resourceCountIs('AWS::SNS::Topic', 1);
    const topicId = stack.resolve((bridge.alarms?.topic as sns.Topic).topicArn) as unknown;
    for (const alarm of alarms) {
      expect(alarm.AlarmActions).toEqual([topicId]);
      expect(alarm.OKActions).toEqual([topicId]);
      expect(alarm.TreatMissingData).toBe('notBreaching');
      expect(String(alarm.AlarmDescription)).toContain('docs/operations.md');
    }
    expect(byDescription(alarms, 'dead-letter queue')).toMatchObject({ Threshold: 1, MetricName: 'ApproximateNumberOfMessagesVisible', Namespace: 'AWS/SQS', Statistic: 'Maximum' });
    expect(byDescription(alarms, 'Many jobs FAILED')).toMatchObject({ Threshold: 5 });
    expect(byDescription(alarms, 'route default has been unfinished')).toMatchObject({ Threshold: 7200, MetricName: 'OldestJobInFlightSeconds', Statistic: 'Maximum', Period: 900 });
    expect(byDescription(alarms, 'route buildings')).toMatchObject({ Threshold: 7200 });
    expect(byDescription(alarms, 'concurrency slot')).toMatchObject({ Threshold: 1800, MetricName: 'OldestQueuedSeconds', Period: 900 });
    expect(byDescription(alarms, 'refused the token')).toBeDefined();
    expect(byDescription(alarms, 'credits spent')).toBeUndefined();
  });

  it('counts broken executions as failed + timed out minus the jobs that ended FAILED or REJECTED', () => {
    const { template } = synthBridge();
    const broken = byDescription(alarmsOf(template), 'failed or timed out without ending their job') as { Metrics: { Id: string; Expression?: string; MetricStat?: { Metric: { MetricName: string } } }[] };
    const expression = broken.Metrics.find((m) => m.Expression)?.Expression;
    expect(expression).toBe('FILL(sf, 0) + FILL(st, 0) - (FILL(jf0, 0) + FILL(jf1, 0) + FILL(jr0, 0) + FILL(jr1, 0) + FILL(jr2, 0))');
    const names = broken.Metrics.filter((m) => m.MetricStat).map((m) => m.MetricStat?.Metric.MetricName).sort();
    expect(names).toEqual(['ExecutionsFailed', 'ExecutionsTimedOut', 'JobsFailed', 'JobsFailed', 'JobsRejected', 'JobsRejected', 'JobsRejected']);
  });

  it('does not count the execution of a rejected unsupported file as broken', () => {
    // Act
    const { template } = synthBridge();

    // Assess: Register Job rejects an unsupported file inside its execution, which then fails on purpose,
    // and the rejection is counted under kind 'unsupported' (functions/jobs/steps/register-job.ts).
    type Stat = { MetricStat?: { Metric: { MetricName: string; Dimensions: { Name: string; Value: string }[] } } };
    const broken = byDescription(alarmsOf(template), 'failed or timed out without ending their job') as { Metrics: Stat[] };
    const rejectedKinds = broken.Metrics.filter((m) => m.MetricStat?.Metric.MetricName === 'JobsRejected').map(
      (m) => m.MetricStat?.Metric.Dimensions.find((d) => d.Name === 'kind')?.Value,
    );
    expect(rejectedKinds.sort()).toEqual(['geojson', 'geotiff', 'unsupported']);
  });

  it('takes thresholds from props, a brought topic, and a daily credit budget', () => {
    let topic: sns.Topic | undefined;
    const { template, stack } = synthBridge((s: Stack) => {
      topic = new sns.Topic(s, 'OpsTopic');
      return {
        alarms: {
          topic,
          jobsFailedPerHour: 2,
          expectedJobDuration: Duration.hours(1),
          expectedJobDurationByRoute: { buildings: Duration.hours(6) },
          queuedTooLong: Duration.minutes(10),
          dailyCreditBudget: 500,
        },
      };
    });
    const alarms = alarmsOf(template);
    template.resourceCountIs('AWS::SNS::Topic', 1); // only the brought one
    expect(alarms.every((a) => JSON.stringify(a.AlarmActions) === JSON.stringify([stack.resolve(topic?.topicArn)]))).toBe(true);
    expect(byDescription(alarms, 'Many jobs FAILED')).toMatchObject({ Threshold: 2 });
    expect(byDescription(alarms, 'route default has been unfinished')).toMatchObject({ Threshold: 3600 });
    expect(byDescription(alarms, 'route buildings')).toMatchObject({ Threshold: 21600 });
    expect(byDescription(alarms, 'concurrency slot')).toMatchObject({ Threshold: 600 });
    const credits = byDescription(alarms, 'More than 500 credits') as { Threshold: number; ComparisonOperator: string; Metrics: { Expression?: string; MetricStat?: { Period: number } }[] };
    expect(credits).toMatchObject({ Threshold: 500, ComparisonOperator: 'GreaterThanThreshold' });
    expect(credits.Metrics.filter((m) => m.MetricStat).map((m) => m.MetricStat?.Period)).toEqual([86400, 86400]);
  });

  it('can be turned off, or left without a topic', () => {
    expect(alarmsOf(synthBridge({ alarms: false }).template)).toHaveLength(0);
    const { template } = synthBridge({ alarms: { createTopic: false } });
    template.resourceCountIs('AWS::SNS::Topic', 0);
    expect(alarmsOf(template).every((a) => a.AlarmActions === undefined)).toBe(true);
  });

  it('refuses thresholds that cannot work, with a clear message', () => {
    expect(() => synthBridge({ alarms: { jobsFailedPerHour: 0 } })).toThrow(/alarms.jobsFailedPerHour must be a whole number of at least 1/);
    expect(() => synthBridge({ alarms: { queuedTooLong: Duration.seconds(5) } })).toThrow(/alarms.queuedTooLong must be at least 1 minute/);
    expect(() => synthBridge({ alarms: { dailyCreditBudget: -1 } })).toThrow(/dailyCreditBudget/);
    // a CDK ValidationError on the alarms' construct path
    expect(() => synthBridge({ alarms: { dailyCreditBudget: -1 } })).toThrow(expect.objectContaining({ name: 'MapflowBridgeConfigError', constructPath: expect.stringMatching(/\/Alarms$/) }));
  });

  it('puts the alarms and the metric behind each on the dashboard', () => {
    const { template } = synthBridge();
    const dashboards = template.findResources('AWS::CloudWatch::Dashboard') as Record<string, { Properties: { DashboardBody: unknown } }>;
    const body = JSON.stringify(Object.values(dashboards)[0]?.Properties.DashboardBody);
    for (const title of ['Alarms', 'Alarm: deadLetter', 'Alarm: brokenExecutions', 'Alarm: jobsFailed', 'Alarm: oldestInFlight:default', 'Alarm: queuedTooLong', 'Alarm: authErrors']) {
      expect(body).toContain(`\\"title\\":\\"${title}\\"`);
    }
    expect(body).toContain('OldestQueuedSeconds');
  });
});
