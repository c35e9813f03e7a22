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

// Every temporary folder of a test file goes under one folder of its own
// (test/support/temp.ts), removed when the file ends: tests made about 1,800
// folders a day in the temporary directory and left them there. A CDK App
// without an outdir synthesizes into a fresh cdk.outXXXXXX there and never
// removes it (about a hundred per run): CDK_OUTDIR, which App reads, points
// into the same folder.
if (!process.env.MFB_TEST_TMP) {
  const root = mkdtempSync(path.join(tmpdir(), 'mfb-test-'));
  process.env.MFB_TEST_TMP = root;
  const outdirWasSet = process.env.CDK_OUTDIR !== undefined;
  if (!outdirWasSet) process.env.CDK_OUTDIR = path.join(root, 'cdk.out');
  afterAll(() => {
    delete process.env.MFB_TEST_TMP;
    if (!outdirWasSet) delete process.env.CDK_OUTDIR;
    rmSync(root, { recursive: true, force: true });
  });
}
