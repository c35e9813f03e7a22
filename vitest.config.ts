import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Quiet output: no Powertools metrics (EMF JSON lines) from the handlers under test.
    setupFiles: ['./test/support/setup.ts'],
    // Tests wait on events, not on time; the limit only catches a hang, and
    // must hold on a loaded 2-core machine where a local bridge job takes minutes.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // End-to-end suites start DynamoDB Local (a JVM) and the simulator, then
    // mostly wait on simulated processings: two files at a time; three were no
    // faster here and made a loaded machine slower still.
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
