/**
 * Runs the longest files first (vitest.config.ts `sequence.sequencer`). On a
 * clean clone vitest has no timings cached and starts the largest files
 * first, so a small file that runs for minutes (the chaos test) started last
 * and ran alone at the end while the other worker had nothing left to do.
 * The list is of files that took 30 s or more in a CI run, longest first;
 * every other file keeps vitest's own order after them, within its project.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const LONGEST_FIRST = [
  'test/e2e/pipeline.test.ts',
  'test/e2e/hostile-start.test.ts',
  'test/reliability/chaos.test.ts',
  // Two minutes, most of them a 90 s pause: started early, it overlaps the files that need the CPU.
  'test/reliability/bridge-standstill.test.ts',
  'test/e2e/hostile.test.ts',
  'test/package/pack-install-synth.test.ts',
  'test/reliability/slots.test.ts',
  'test/e2e/bad-inputs.test.ts',
  'test/e2e/hostile-processes.test.ts',
  'test/e2e/hostile-round2.test.ts',
  'test/reliability/fault-suite.test.ts',
  'test/e2e/new-user.test.ts',
  'test/e2e/cli.test.ts',
  'test/e2e/restart.test.ts',
  'test/docs/commands.test.ts',
  'test/e2e/operators-cli.test.ts',
  'test/reliability/crash-resumes.test.ts',
  'test/reliability/routes-change.test.ts',
  'test/e2e/account-limits.test.ts',
  'test/e2e/console.test.ts',
  'test/e2e/events.test.ts',
  'test/e2e/flatgeobuf.test.ts',
  'test/reliability/resume.test.ts',
  'test/cdk/assembly-bundles.test.ts',
  'test/e2e/assembly.test.ts',
];

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const projects = [...new Set(sorted.map((spec) => spec.project.name))];
    const rank = (spec: TestSpecification) => {
      const index = LONGEST_FIRST.indexOf(relative(spec.project.config.root, spec.moduleId).split('\\').join('/'));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    // Array.prototype.sort is stable: files of equal rank keep vitest's order.
    return [...sorted].sort((a, b) => projects.indexOf(a.project.name) - projects.indexOf(b.project.name) || rank(a) - rank(b));
  }
}
