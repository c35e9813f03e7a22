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
import type { LedgerRow } from '../jobs/model.ts';

export const METRICS_NAMESPACE_DEFAULT = 'MapflowBridge';

/** Metric name per final status. */
export const OUTCOME_METRICS = { SUCCEEDED: 'JobsSucceeded', FAILED: 'JobsFailed', REJECTED: 'JobsRejected' } as const;

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
  m.addDimension('kind', row.kind);
  m.addMetric(name, MetricUnit.Count, 1);
  if (row.actualCost !== undefined) m.addMetric('CreditsSpent', MetricUnit.Count, row.actualCost);
  const seconds = (Date.parse(row.finishedAt ?? row.updatedAt) - Date.parse(row.createdAt)) / 1000;
  if (Number.isFinite(seconds) && seconds >= 0) m.addMetric('JobDuration', MetricUnit.Seconds, seconds);
  m.publishStoredMetrics();
}
