/**
 * MapflowBridge's metric*() methods (lib/metrics.ts): each names the metric
 * the functions emit (functions/runtime/metrics.ts) in the namespace and with
 * the service the construct gives the functions, and takes overrides as
 * aws-cdk-lib's metric methods do. The expected names come from the emitting
 * code and the synthesized functions' environment, so neither can drift.
 * test/unit/functions/runtime/emitted-metrics.test.ts checks them against the
 * EMF documents the functions print.
 */
import { Duration } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { describe, expect, it } from 'vitest';
import {
  AUTH_ERROR_METRIC,
  CREDITS_METRIC,
  JOB_DURATION_METRIC,
  KIND_DIMENSION,
  OLDEST_IN_FLIGHT_METRIC,
  OLDEST_QUEUED_METRIC,
  OUTCOME_METRICS,
  ROUTE_DIMENSION,
} from '../../functions/runtime/metrics.ts';
import type { MapflowBridge } from '../../lib/mapflow-bridge.ts';
import { synthBridge } from './support.ts';

type Environment = Record<string, string>;

/** The Powertools namespace and service every function of the template runs with (one pair, or the test fails). */
function emittingIdentity(synth: ReturnType<typeof synthBridge>): { namespace: string; service: string } {
  const functions = Object.values(synth.template.findResources('AWS::Lambda::Function') as Record<string, { Properties: { Environment?: { Variables?: Environment } } }>)
    .map((f) => f.Properties.Environment?.Variables ?? {})
    .filter((env) => env.BRIDGE_FUNCTION !== undefined);
  const pairs = new Set(functions.map((env) => JSON.stringify({ namespace: env.POWERTOOLS_METRICS_NAMESPACE, service: env.POWERTOOLS_SERVICE_NAME })));
  expect(functions.length).toBeGreaterThan(0);
  expect([...pairs]).toHaveLength(1);
  return JSON.parse([...pairs][0]!) as { namespace: string; service: string };
}

const identityOf = (metric: cloudwatch.Metric) => ({ namespace: metric.namespace, metricName: metric.metricName, dimensions: metric.dimensions });

describe('MapflowBridge metric methods', () => {
  const synth = synthBridge();
  const bridge = synth.bridge;
  const { namespace, service } = emittingIdentity(synth);

  /** Each method, the metric name and dimensions the function code emits for it, and its default statistic and period. */
  const cases: [string, (b: MapflowBridge) => cloudwatch.Metric, string, Record<string, string>, string, number][] = [
    ['metricJobsSucceeded', (b) => b.metricJobsSucceeded('geojson'), OUTCOME_METRICS.SUCCEEDED, { [KIND_DIMENSION]: 'geojson' }, 'Sum', 300],
    ['metricJobsFailed', (b) => b.metricJobsFailed('geotiff'), OUTCOME_METRICS.FAILED, { [KIND_DIMENSION]: 'geotiff' }, 'Sum', 300],
    ['metricJobsRejected', (b) => b.metricJobsRejected('unsupported'), OUTCOME_METRICS.REJECTED, { [KIND_DIMENSION]: 'unsupported' }, 'Sum', 300],
    ['metricCreditsSpent', (b) => b.metricCreditsSpent('geotiff'), CREDITS_METRIC, { [KIND_DIMENSION]: 'geotiff' }, 'Sum', 300],
    ['metricJobDuration', (b) => b.metricJobDuration('geojson'), JOB_DURATION_METRIC, { [KIND_DIMENSION]: 'geojson' }, 'Average', 300],
    ['metricMapflowAuthErrors', (b) => b.metricMapflowAuthErrors('geojson'), AUTH_ERROR_METRIC, { [KIND_DIMENSION]: 'geojson' }, 'Sum', 300],
    ['metricOldestJobInFlight', (b) => b.metricOldestJobInFlight('buildings'), OLDEST_IN_FLIGHT_METRIC, { [ROUTE_DIMENSION]: 'buildings' }, 'Maximum', 900],
    ['metricOldestQueuedJob', (b) => b.metricOldestQueuedJob(), OLDEST_QUEUED_METRIC, {}, 'Maximum', 900],
  ];

  it.each(cases)('%s names the metric the functions emit, with its default statistic and period', (_name, make, metricName, dimensions, statistic, periodSeconds) => {
    // Act
    const metric = make(bridge);

    // Assess
    expect(identityOf(metric)).toEqual({ namespace, metricName, dimensions: { service, ...dimensions } });
    expect(metric.statistic).toBe(statistic);
    expect(metric.period.toSeconds()).toBe(periodSeconds);
  });

  it('applies overrides of period, statistic and label, and merges dimensions', () => {
    // Act
    const failed = bridge.metricJobsFailed('geojson', { period: Duration.hours(1), statistic: 'p90', label: 'failed' });
    const queued = bridge.metricOldestQueuedJob({ period: Duration.minutes(5), statistic: 'Average' });
    const custom = bridge.metric(JOB_DURATION_METRIC, { dimensionsMap: { [KIND_DIMENSION]: 'geotiff' } });

    // Assess
    expect(failed).toMatchObject({ statistic: 'p90', label: 'failed', metricName: OUTCOME_METRICS.FAILED, dimensions: { service, [KIND_DIMENSION]: 'geojson' } });
    expect(failed.period.toSeconds()).toBe(3600);
    expect(queued.statistic).toBe('Average');
    expect(queued.period.toSeconds()).toBe(300);
    expect(identityOf(custom)).toEqual({ namespace, metricName: JOB_DURATION_METRIC, dimensions: { service, [KIND_DIMENSION]: 'geotiff' } });
  });

  it('backs the alarms with the same metrics', () => {
    // Act
    const alarms = bridge.alarms?.metrics ?? {};

    // Assess
    expect(identityOf(alarms['queuedTooLong'] as cloudwatch.Metric)).toEqual(identityOf(bridge.metricOldestQueuedJob()));
    expect(identityOf(alarms['oldestInFlight:default'] as cloudwatch.Metric)).toEqual(identityOf(bridge.metricOldestJobInFlight('default')));
    const jobsFailed = (alarms['jobsFailed'] as cloudwatch.MathExpression).usingMetrics;
    expect(Object.values(jobsFailed).map((m) => identityOf(m as cloudwatch.Metric))).toEqual([
      identityOf(bridge.metricJobsFailed('geojson')),
      identityOf(bridge.metricJobsFailed('geotiff')),
    ]);
  });
});
