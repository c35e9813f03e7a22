/**
 * The repository stands on its own (issue 8): people clone it from its public
 * home with nothing beside it, so no file of the project may read or name a
 * folder beside the repository or a path of the machine it was written on.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../e2e/helpers.ts';

/** Built at run time so that this file does not name what it looks for. */
const FORBIDDEN = [['..', 'shared'].join('/'), ['', 'work', 'shared'].join('/'), ['', 'work', 'main'].join('/')];
const SKIP_DIRS = new Set(['node_modules', '.git', '.local', 'cdk.out', 'mapflow-output', 'coverage', 'dist', '.test-output']);
const TEXT = /\.(ts|mts|cts|js|mjs|cjs|json|md|sh|yml|yaml|txt|html|css)$|^(\.ci|run|Makefile|\.npmrc|\.gitignore)$/;

function projectFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return SKIP_DIRS.has(entry.name) ? [] : projectFiles(full);
    return TEXT.test(entry.name) && entry.name !== 'package-lock.json' && statSync(full).size < 8 << 20 ? [full] : [];
  });
}

describe('a clone with nothing beside it', () => {
  const files = projectFiles(ROOT);

  it('reads the project files', () => {
    // Assess: the walk sees code, tests, docs and CI
    const relative = files.map((f) => path.relative(ROOT, f));
    expect(relative).toEqual(expect.arrayContaining(['README.md', 'package.json', '.ci/run', 'packages/cli/src/main.ts', 'samples/README.md']));
  });

  it('no file names a folder outside the repository', () => {
    // Act
    const offenders = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return FORBIDDEN.filter((needle) => text.includes(needle)).map((needle) => `${path.relative(ROOT, file)}: ${needle}`);
    });

    // Assess
    expect(offenders).toEqual([]);
  });

  it('carries its own licence, and every folder of data written by others carries theirs', () => {
    // Prepare
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { license?: string };
    const dataFolders = ['samples/aoi', 'samples/rasters', 'packages/local/samples'];
    // Act
    const licence = readFileSync(path.join(ROOT, 'LICENSE'), 'utf8');
    const withoutLicence = dataFolders.filter((folder) => !readdirSync(path.join(ROOT, folder)).some((name) => name.startsWith('LICENSE')));
    // Assess: npm puts LICENSE in every tarball; package.json names the same licence
    expect(licence.split('\n')[0]).toBe('MIT License');
    expect(pkg.license).toBe('MIT');
    expect(withoutLicence).toEqual([]);
  });
});
