/** The sequencer's list of long files names files that exist (a moved or renamed file would silently lose its place). */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LONGEST_FIRST } from '../support/sequencer.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the longest-first sequencer', () => {
  it('lists only test files that exist, each once', () => {
    // Act
    const missing = LONGEST_FIRST.filter((file) => !existsSync(`${ROOT}${file}`));
    // Assess
    expect(missing).toEqual([]);
    expect(new Set(LONGEST_FIRST).size).toBe(LONGEST_FIRST.length);
  });
});
