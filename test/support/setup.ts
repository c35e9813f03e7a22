/**
 * Runs before every test file (vitest.config.ts `setupFiles`).
 *
 * Job metrics are CloudWatch EMF documents printed to stdout (Powertools
 * Metrics); in tests they would flood the output with `{"_aws":...}` lines.
 * POWERTOOLS_METRICS_DISABLED is Powertools' own switch (it wins over
 * POWERTOOLS_DEV); a test about the metrics themselves sets it to 'false'
 * before its first metric (test/runtime/metrics.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

// A CDK App without an outdir synthesizes into a fresh cdk.outXXXXXX in the
// temporary folder and never removes it: about a hundred folders of up to
// 0.5 MB were left behind by every run. One folder per test file instead
// (CDK_OUTDIR, which App reads), removed when the file ends.
if (!process.env.CDK_OUTDIR) {
  const outdir = mkdtempSync(path.join(tmpdir(), 'mfb-test-cdk-'));
  process.env.CDK_OUTDIR = outdir;
  afterAll(() => {
    delete process.env.CDK_OUTDIR;
    rmSync(outdir, { recursive: true, force: true });
  });
}
