import { describe, expect, it } from 'vitest';
import { summaryFigures } from '../suite-pair.ts';

describe('summaryFigures', () => {
  it("reads vitest's Duration and Tests lines, colours and all", () => {
    // Prepare: the lines as vitest prints them to a pipe with colours forced (CI=true)
    const duration = '\x1b[2m   Duration \x1b[22m 507.33s\x1b[2m (transform 246.94s, setup 3.42s, import 86.03s, tests 1894.57s)\x1b[22m';
    const tests = '\x1b[2m      Tests \x1b[22m \x1b[1m\x1b[31m2 failed\x1b[39m\x1b[22m\x1b[2m | \x1b[22m\x1b[1m\x1b[32m2300 passed\x1b[39m\x1b[22m\x1b[90m (2302)\x1b[39m';

    // Act / Assess
    expect(summaryFigures(duration)).toEqual({ vitestSeconds: 507.33 });
    expect(summaryFigures('   Duration  850ms (transform 10ms)')).toEqual({ vitestSeconds: 0.85 });
    expect(summaryFigures(tests)).toEqual({ passed: 2300, failed: 2 });
    expect(summaryFigures('      Tests  2302 passed (2302)')).toEqual({ passed: 2302, failed: 0 });
  });

  it('leaves every other line alone, a test named after a Duration among them', () => {
    // Act / Assess
    expect(summaryFigures(' ✓ test/e2e/pipeline.test.ts (22 tests) 122900ms')).toBeUndefined();
    expect(summaryFigures('     ✓ Duration 12s is printed by the summary')).toBeUndefined();
    expect(summaryFigures('2302 passed, 0 failed, 0 skipped')).toBeUndefined();
  });
});
