/**
 * Runs before every test file (vitest.config.ts `setupFiles`).
 *
 * Job metrics are CloudWatch EMF documents printed to stdout (Powertools
 * Metrics); in tests they would flood the output with `{"_aws":...}` lines.
 * POWERTOOLS_METRICS_DISABLED is Powertools' own switch (it wins over
 * POWERTOOLS_DEV); a test about the metrics themselves sets it to 'false'
 * before its first metric (test/unit/functions/runtime/metrics.test.ts).
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

// aws-cdk-lib validates every synthesized template with a WebAssembly engine
// (CloudFormationValidatePlugin), about 6 s of CPU for the first synth of a
// process and 0.3 s for each next one: a fifth of the CDK tests' CPU. The
// bridge's template is checked by it once, strictly, in
// test/cdk/cloudformation-validation.test.ts, and a README `cdk synth`
// (test/cdk/assembly-bundles.test.ts) runs it as users do.
process.env.CDK_VALIDATION ??= 'false';

// Every temporary folder of a test file goes under one folder of its own
// (test/support/temp.ts), removed when the file ends: tests made about 1,800
// folders a day in the temporary directory and left them there.
if (!process.env.MFB_TEST_TMP) {
  const root = mkdtempSync(path.join(tmpdir(), 'mfb-test-'));
  process.env.MFB_TEST_TMP = root;
  afterAll(() => {
    delete process.env.MFB_TEST_TMP;
    rmSync(root, { recursive: true, force: true });
  });
}

// A CDK App without an outdir synthesizes into a fresh cdk.outXXXXXX in the
// temporary folder and never removes it (about a hundred per run, up to
// 0.5 MB each). The Apps this process makes are seen through the hook CDK's
// own test helpers use (aws-cdk-lib/testhelpers), and their temporary outdirs
// removed when the file ends. (Not CDK_OUTDIR: with it set, every App also
// synthesizes again when the process exits.)
const APP_INIT_HOOK = Symbol.for('@aws-cdk/core.App#initHook');
const OUTDIRS = Symbol.for('mapflow-bridge.test.cdkOutdirs');
const hooks = globalThis as unknown as Record<symbol, unknown>;
if (!hooks[OUTDIRS]) {
  const outdirs: string[] = [];
  hooks[OUTDIRS] = outdirs;
  const previous = hooks[APP_INIT_HOOK] as ((app: { outdir: string }) => void) | undefined;
  hooks[APP_INIT_HOOK] = (app: { outdir: string }) => {
    previous?.(app);
    outdirs.push(app.outdir);
  };
}
afterAll(() => {
  const outdirs = hooks[OUTDIRS] as string[];
  for (const outdir of outdirs.splice(0)) {
    // Only the folders CDK made itself: cdk.outXXXXXX right in the temporary directory.
    if (path.basename(outdir).startsWith('cdk.out') && path.dirname(outdir) === realpathSync(tmpdir())) {
      rmSync(outdir, { recursive: true, force: true });
    }
  }
});
