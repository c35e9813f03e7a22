/**
 * The bridge's own CloudWatch metrics, as MapflowBridge offers them
 * (`bridge.metricJobsFailed('geojson')`), the way aws-cdk-lib constructs offer
 * theirs (`queue.metricApproximateAgeOfOldestMessage()`). The functions emit
 * them through Powertools Metrics (functions/runtime/metrics.ts): namespace and
 * service from the environment every function gets (lib/private/bridge-function.ts),
 * `service` as Powertools' default dimension, plus `kind` or `route`.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { InputKind } from '../functions/core/model.ts';

export type { InputKind };
export type { JobKind } from '../functions/core/model.ts';

/**
 * The metrics of a bridge (MapflowBridge implements it). Each method returns a
 * metric with the namespace, name and dimensions the functions emit; `props`
 * override its period, statistic, label..., and add dimensions (`dimensionsMap` is merged).
 */
export interface IBridgeMetrics {
  /**
   * A metric of the bridge's namespace by name, with the `service` dimension;
   * give the metric's other dimensions in `props.dimensionsMap`.
   * @default statistic Average, period 5 minutes
   */
  metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /** Jobs of this kind that ended SUCCEEDED. @default statistic Sum, period 5 minutes */
  metricJobsSucceeded(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /** Jobs of this kind that ended FAILED. @default statistic Sum, period 5 minutes */
  metricJobsFailed(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /**
   * Jobs of this kind that ended REJECTED (unsupported files are kind
   * 'unsupported'). @default statistic Sum, period 5 minutes
   */
  metricJobsRejected(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /** Credits spent by jobs of this kind that reached a final status. @default statistic Sum, period 5 minutes */
  metricCreditsSpent(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /** Seconds from a job's creation to its final status. @default statistic Average, period 5 minutes */
  metricJobDuration(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /** Jobs failed because Mapflow refused the credentials (a rotated or revoked token). @default statistic Sum, period 5 minutes */
  metricMapflowAuthErrors(kind: InputKind, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /**
   * Age in seconds of the oldest unfinished job of a route, emitted by the
   * reconciler on each run (0 when none).
   * @default statistic Maximum, period 15 minutes (the reconciler's default schedule)
   */
  metricOldestJobInFlight(route: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /**
   * Seconds the longest-waiting QUEUED job has waited for a concurrency slot,
   * emitted by the reconciler on each run (0 when none).
   * @default statistic Maximum, period 15 minutes (the reconciler's default schedule)
   */
  metricOldestQueuedJob(props?: cloudwatch.MetricOptions): cloudwatch.Metric;
}

/** How often the reconciler emits the backlog metrics by default (DEFAULT_RECONCILE_SCHEDULE); their period. */
export const BACKLOG_PERIOD = Duration.minutes(15);

/** A metric of `namespace` with the service dimension and `dimensions`, `defaults` and `props` applied in that order. */
export function bridgeMetric(
  identity: { readonly namespace: string; readonly service: string },
  metricName: string,
  dimensions: Readonly<Record<string, string>>,
  defaults: cloudwatch.MetricOptions,
  props: cloudwatch.MetricOptions = {},
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    ...defaults,
    ...props,
    namespace: identity.namespace,
    metricName,
    // Powertools Metrics adds `service` to every metric it emits (its default dimension).
    dimensionsMap: { service: identity.service, ...dimensions, ...props.dimensionsMap },
  });
}
