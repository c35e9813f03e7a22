/**
 * The names and dimensions of the metrics the functions emit (runtime/metrics.ts),
 * apart from Powertools: the construct's metric*() methods, alarms and dashboard
 * (lib/) read them at synth, where the package loads nothing the Lambdas bundle.
 */
export const METRICS_NAMESPACE_DEFAULT = 'MapflowBridge';

/** Metric name per final status. */
export const OUTCOME_METRICS = { SUCCEEDED: 'JobsSucceeded', FAILED: 'JobsFailed', REJECTED: 'JobsRejected' } as const;

/** Credits a finished job spent (its processings' actual cost), per kind. */
export const CREDITS_METRIC = 'CreditsSpent';
/** Seconds from a job's creation to its final status, per kind. */
export const JOB_DURATION_METRIC = 'JobDuration';
/** Dimension of the job metrics: the job's input kind (geojson, geotiff, unsupported). */
export const KIND_DIMENSION = 'kind';
/** Dimension of the oldest-in-flight metric: the route name. */
export const ROUTE_DIMENSION = 'route';

/** Jobs that failed because Mapflow refused the credentials. */
export const AUTH_ERROR_METRIC = 'MapflowAuthErrors';
/** Age of the oldest unfinished job, per route (dimension `route`), emitted by the reconciler. */
export const OLDEST_IN_FLIGHT_METRIC = 'OldestJobInFlightSeconds';
/** How long the longest-waiting QUEUED job has waited for a slot, emitted by the reconciler. */
export const OLDEST_QUEUED_METRIC = 'OldestQueuedSeconds';
/**
 * Rows (jobs, slot holders, waiters) a reconciler run could not judge: a denied or
 * failed DescribeExecution / ListExecutions, or any other error on one row. Emitted
 * on every run (0 included); the row is retried on the next run.
 */
export const RECONCILE_ERRORS_METRIC = 'ReconcileErrors';
