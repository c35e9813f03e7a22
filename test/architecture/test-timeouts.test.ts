/**
 * No test waits longer than it is allowed to run: a test whose wait (a
 * `timeoutMs` given to waitForJob, waitForJobs, eventually...) is not below its
 * own timeout fails on a busy machine with vitest's "Test timed out" instead
 * of the wait's own message (test/reliability/resume.test.ts waited 40 s inside
 * the 30 s default). This reads every test file and checks each test's
 * explicit waits against its timeout: its own, else its describe block's,
 * else the default of vitest.config.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import config from '../../vitest.config.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : testFiles(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

const number = (text: string) => Number(text.replace(/_/g, ''));

interface Finding {
  file: string;
  test: string;
  waitMs: number;
  timeoutMs: number;
}

/** Each test of a file with its longest explicit wait and its effective timeout. */
export function auditFile(source: string, defaultTimeoutMs: number): { test: string; waitMs: number; timeoutMs: number }[] {
  const results: { test: string; waitMs: number; timeoutMs: number }[] = [];
  const describes = [...source.matchAll(/^([ \t]*)describe\((['"`])(.*?)\2,\s*(\{[^}]*\})?/gm)].map((match) => ({
    at: match.index,
    indent: match[1]?.length ?? 0,
    timeout: /timeout:\s*([\d_]+)/.exec(match[4] ?? '')?.[1],
  }));
  for (const match of source.matchAll(/^([ \t]*)it\((['"`])(.*?)\2,\s*(\{[^}]*\}\s*,)?/gm)) {
    const indent = match[1] ?? '';
    const start = match.index + match[0].length;
    const close = new RegExp(`\\n${indent}\\}(, ([\\d_]+))?\\);`).exec(source.slice(start));
    const body = close ? source.slice(start, start + close.index) : source.slice(start);
    const own = /timeout:\s*([\d_]+)/.exec(match[4] ?? '')?.[1] ?? close?.[2];
    const enclosing = describes.filter((d) => d.at < match.index && d.indent < indent.length && d.timeout).at(-1)?.timeout;
    const timeoutMs = own ? number(own) : enclosing ? number(enclosing) : defaultTimeoutMs;
    const waits = [...body.matchAll(/timeoutMs:\s*([\d_]+)/g)].map((wait) => number(wait[1] as string));
    results.push({ test: match[3] as string, waitMs: Math.max(0, ...waits), timeoutMs });
  }
  return results;
}

describe('test timeouts', () => {
  it('finds a wait longer than its test may run (the audit itself can fail)', () => {
    const source = "describe('x', () => {\n  it('waits', async () => {\n    await bridge.waitForJob(id, { timeoutMs: 40_000 });\n  });\n});\n";
    const fixed = source.replace("describe('x', () => {", "describe('x', { timeout: 60_000 }, () => {");
    expect(auditFile(source, 30_000)).toEqual([{ test: 'waits', waitMs: 40_000, timeoutMs: 30_000 }]);
    expect(auditFile(fixed, 30_000)).toEqual([{ test: 'waits', waitMs: 40_000, timeoutMs: 60_000 }]);
  });

  it('gives every test that waits a timeout above its longest wait', () => {
    // Prepare
    const defaultTimeoutMs = (config as { test?: { testTimeout?: number } }).test?.testTimeout ?? 5_000;
    // Act
    const self = fileURLToPath(import.meta.url);
    const findings: Finding[] = testFiles(path.join(ROOT, 'test'))
      .filter((file) => file !== self)
      .flatMap((file) =>
      auditFile(readFileSync(file, 'utf8'), defaultTimeoutMs)
        .filter((test) => test.waitMs >= test.timeoutMs)
        .map((test) => ({ file: path.relative(ROOT, file), ...test })),
    );
    // Assess
    expect(findings).toEqual([]);
  });
});
