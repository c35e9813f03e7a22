import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/support/sequencer.ts';

/**
 * Files that change process-wide state other files would see (environment
 * variables read once, module-level singletons, vi.mock, spies on process
 * streams): each runs in a fresh worker, as vitest does by default.
 *
 * The bridges' end-to-end and reliability files are not among them: each
 * closes what it starts and restores what it changes, so they share their
 * workers' modules too (the bridge, the AWS SDK, the simulator are imported
 * once per worker, not once per file). Side by side on 16 one-bridge files:
 * 87-93 s of CPU shared against 112-115 s isolated, two pairs
 * (docs/development.md).
 */
const ISOLATED = [
  'test/architecture/test-timeouts.test.ts',
  'packages/local/test/assembly/services.test.ts',
  'packages/local/test/assembly/function-environments.test.ts',
  'packages/local/test/assembly/outside-kill.test.ts',
  'packages/cli/test/cli.test.ts',
  'packages/cli/test/jobs-list.test.ts',
  'packages/cli/test/live.test.ts',
  'packages/cli/test/preflight-mapflow.test.ts',
  'packages/local/test/engine/engine.test.ts',
  'packages/local/test/events/file.test.ts',
  'packages/local/test/poll-policy.test.ts',
  'packages/local/test/s3/drop-folder.test.ts',
  'packages/local/test/s3/s3-atomic.test.ts',
  'packages/local/test/s3/s3-guard.test.ts',
  'packages/local/test/s3/s3.test.ts',
  'packages/local/test/state-lock.test.ts',
  'test/unit/functions/runtime/**/*.test.ts',
  // vi.mock of functions/runtime/metrics.ts: needs a module graph of its own.
  'test/unit/functions/handlers/reconcile-denied.test.ts',
  'test/integ/**/*.test.ts',
  'packages/simulator/test/lambda.test.ts',
  // A local bridge routes GeoJSON and GeoTIFF checks through worker threads for the whole process (packages/local/src/engine/workers.ts).
  'test/perf/startup-timeline.test.ts',
];

export default defineConfig({
  test: {
    // Files are chosen per project below (a root include would be merged into both).
    // Quiet output: no Powertools metrics (EMF JSON lines) from the handlers under test.
    setupFiles: ['./test/support/setup.ts'],
    // One DynamoDB Local for the run, started on first use (each project asks its own broker);
    // the cloud assemblies the suites share, synthesized once before any file starts.
    globalSetup: ['./test/support/dynamodb-broker.ts', './test/support/assembly-setup.ts'],
    // Tests wait on events, not on time; the limit only catches a hang, and
    // must hold on a loaded 2-core machine where a local bridge job takes minutes.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Three files at a time on this 2-core machine: a file that runs bridges
    // waits on them part of the time (its CPU is 0.5-0.8 of its duration), and
    // a third file fills that. Side by side on c347874, otherwise idle: 697.6 s
    // of vitest with two (1,020 s of CPU), 655.7 s with three (986 s), 670.6 s
    // with four (1,019 s). With many JVMs per run (before 872cf10) a third only
    // added contention (docs/development.md). Since then files that wait more than they
    // work have come (a 90 s standstill, a chaos run, a file waiting for the shared
    // tarball): a fourth worker fills those waits (2026-11-28, clean clones: 730.7 s
    // of vitest with three, 688.2 s with four; docs/development.md).
    maxWorkers: 4,
    reporters: ['default', './test/support/summary-reporter.ts'],
    // The longest files first, so that no long file starts last and runs alone at the end.
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        // Everything else shares its worker's modules from file to file: aws-cdk-lib, the
        // AWS SDK and the handlers are imported once per worker, not once per file
        // (test/cdk alone: 146 s of CPU isolated, 77 s shared, same 164 tests).
        extends: true,
        test: { name: 'shared', include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'], exclude: ISOLATED, isolate: false },
      },
      {
        extends: true,
        test: { name: 'isolated', include: ISOLATED },
      },
    ],
  },
});
