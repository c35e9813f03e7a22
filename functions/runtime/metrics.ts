/**
 * Job metrics through Powertools Metrics (CloudWatch embedded metric format:
 * printed to the function's log, no PutMetricData call or IAM right needed).
 * One data point per job that reaches a final status, so dashboards and alarms
 * can count outcomes and credits without scanning the ledger.
 *
 * Namespace and service come from POWERTOOLS_METRICS_NAMESPACE and
 * POWERTOOLS_SERVICE_NAME (set by the CDK construct); local mode sets
 * POWERTOOLS_METRICS_DISABLED so the terminal shows progress, not EMF JSON.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { LedgerRow } from '../core/model.ts';

export {
  METRICS_NAMESPACE_DEFAULT,
  OUTCOME_METRICS,
  CREDITS_METRIC,
  JOB_DURATION_METRIC,
  KIND_DIMENSION,
  ROUTE_DIMENSION,
  AUTH_ERROR_METRIC,
  OLDEST_IN_FLIGHT_METRIC,
  OLDEST_QUEUED_METRIC,
  RECONCILE_ERRORS_METRIC,
} from './metric-names.ts';
import { METRICS_NAMESPACE_DEFAULT, OUTCOME_METRICS, CREDITS_METRIC, JOB_DURATION_METRIC, KIND_DIMENSION, ROUTE_DIMENSION, AUTH_ERROR_METRIC, OLDEST_IN_FLIGHT_METRIC, OLDEST_QUEUED_METRIC, RECONCILE_ERRORS_METRIC } from './metric-names.ts';

let shared: Metrics | undefined;

function metrics(): Metrics {
  shared ??= new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE_DEFAULT, serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'mapflow-bridge' });
  return shared;
}

/** Emits the outcome of a job that just became final (count, credits, duration), by kind. */
export function recordJobOutcome(row: LedgerRow): void {
  const name = OUTCOME_METRICS[row.status as keyof typeof OUTCOME_METRICS];
  if (!name) return;
  const m = metrics();
  m.addDimension(KIND_DIMENSION, row.kind);
  m.addMetric(name, MetricUnit.Count, 1);
  // A rotated or revoked token: the MapflowAuthErrors alarm (lib/alarms.ts) watches this.
  if (row.error?.code === 'MAPFLOW_AUTH_ERROR') m.addMetric(AUTH_ERROR_METRIC, MetricUnit.Count, 1);
  if (row.actualCost !== undefined) m.addMetric(CREDITS_METRIC, MetricUnit.Count, row.actualCost);
  const seconds = (Date.parse(row.finishedAt ?? row.updatedAt) - Date.parse(row.createdAt)) / 1000;
  if (Number.isFinite(seconds) && seconds >= 0) m.addMetric(JOB_DURATION_METRIC, MetricUnit.Seconds, seconds);
  m.publishStoredMetrics();
}

/**
 * The backlog as the reconciler sees it on each sweep: the oldest unfinished
 * job per route and the longest wait in QUEUED (0 when none), so the alarms of
 * lib/alarms.ts can tell a stuck job from a slow one.
 */
export function recordBacklog(backlog: { oldestInFlightSecondsByRoute: Record<string, number>; oldestQueuedSeconds: number }, routes: readonly string[] = []): void {
  const byRoute = { ...Object.fromEntries(routes.map((route) => [route, 0])), ...backlog.oldestInFlightSecondsByRoute };
  for (const [route, seconds] of Object.entries(byRoute)) {
    const m = metrics();
    m.addDimension(ROUTE_DIMENSION, route);
    m.addMetric(OLDEST_IN_FLIGHT_METRIC, MetricUnit.Seconds, Math.max(0, Math.round(seconds)));
    m.publishStoredMetrics();
  }
  const m = metrics();
  m.addMetric(OLDEST_QUEUED_METRIC, MetricUnit.Seconds, Math.max(0, Math.round(backlog.oldestQueuedSeconds)));
  m.publishStoredMetrics();
}

/** What one reconciler run could not judge (denied or failed calls on single rows), 0 included. */
export function recordReconcileErrors(count: number): void {
  const m = metrics();
  m.addMetric(RECONCILE_ERRORS_METRIC, MetricUnit.Count, count);
  m.publishStoredMetrics();
}
