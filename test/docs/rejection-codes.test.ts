/**
 * Every code a REJECTED job can end with is listed in the README (issue 23:
 * "the README's rejection codes list the new ones") and explained, with what
 * to do, in docs/inputs.md's "Rejection codes" table; neither lists a code
 * the bridge does not have.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REJECTION_CODES } from '../../functions/core/errors.ts';

const read = (file: string) => readFileSync(fileURLToPath(new URL(`../../${file}`, import.meta.url)), 'utf8');
/** The text of a `## heading` or `### heading` section, up to the next heading of any level. */
function section(text: string, heading: string): string {
  const start = text.indexOf(heading);
  if (start === -1) return '';
  const next = text.slice(start + heading.length).search(/\n#{1,6} /);
  return next === -1 ? text.slice(start) : text.slice(start, start + heading.length + next);
}
/** Codes in backticks in the first column (inputs.md) or any column (README) of a table's rows. */
const codesIn = (table: string, column?: number) =>
  new Set(
    table
      .split('\n')
      .filter((line) => line.startsWith('| '))
      .flatMap((line) => [...(column === undefined ? line : line.split('|')[column]!).matchAll(/`([A-Z][A-Z_]+)`/g)].map((m) => m[1]!)),
  );

describe('rejection codes in the docs', () => {
  const readme = codesIn(section(read('README.md'), '### Rejection codes'));
  const inputs = codesIn(section(read('docs/inputs.md'), '## Rejection codes'), 1);

  it('finds both tables', () => {
    // Assess
    expect(readme.size).toBeGreaterThan(40);
    expect(inputs.size).toBeGreaterThan(40);
  });

  it('the README lists every rejection code, and only those', () => {
    // Assess
    expect([...REJECTION_CODES].filter((code) => !readme.has(code))).toEqual([]);
    expect([...readme].filter((code) => !(REJECTION_CODES as readonly string[]).includes(code))).toEqual([]);
  });

  it('docs/inputs.md explains every rejection code, and only those', () => {
    // Assess
    expect([...REJECTION_CODES].filter((code) => !inputs.has(code))).toEqual([]);
    expect([...inputs].filter((code) => !(REJECTION_CODES as readonly string[]).includes(code))).toEqual([]);
  });
});
