/**
 * Runs before every test file (vitest.config.ts `setupFiles`).
 *
 * Job metrics are CloudWatch EMF documents printed to stdout (Powertools
 * Metrics); in tests they would flood the output with `{"_aws":...}` lines.
 * POWERTOOLS_METRICS_DISABLED is Powertools' own switch (it wins over
 * POWERTOOLS_DEV); a test about the metrics themselves sets it to 'false'
 * before its first metric (test/runtime/metrics.test.ts).
 */
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
