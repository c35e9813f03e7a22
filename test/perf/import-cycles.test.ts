/**
 * The house: no two files of functions/, lib/ or local/ import each other
 * (type imports included). Issue 12 named three such circles
 * (transport <-> multipart, mapflow-bridge <-> validation, simulator sources <-> store).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
/**
 * Known circles left for their owners (docs/architecture.md, "Layers"): the job
 * model re-exports the event detail type that is built from the model's own types.
 */
const KNOWN = ['functions/events/types.ts <-> functions/jobs/model.ts'];

async function tsFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') out.push(...(await tsFiles(full)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** Relative imports and re-exports of a file, resolved to absolute paths. */
function relativeImports(file: string, source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g)) {
    found.push(path.resolve(path.dirname(file), match[1] as string));
  }
  return found;
}

describe('import structure', () => {
  it('has no two-file import circle in functions/, lib/ or local/', async () => {
    // Prepare
    const files = (await Promise.all(['functions', 'lib', 'local'].map((d) => tsFiles(path.join(ROOT, d))))).flat();
    const graph = new Map<string, Set<string>>();
    for (const file of files) graph.set(file, new Set(relativeImports(file, await readFile(file, 'utf8'))));
    // Act
    const circles: string[] = [];
    for (const [file, imports] of graph) {
      for (const target of imports) {
        if (file < target && graph.get(target)?.has(file)) circles.push(`${path.relative(ROOT, file)} <-> ${path.relative(ROOT, target)}`);
      }
    }
    // Assess
    expect(graph.size).toBeGreaterThan(100);
    expect(circles.filter((c) => !KNOWN.includes(c))).toEqual([]);
    for (const named of ['functions/mapflow/http/transport.ts', 'lib/mapflow-bridge.ts', 'local/simulator/sources.ts']) {
      expect(circles.some((c) => c.includes(named))).toBe(false);
    }
  });
});
