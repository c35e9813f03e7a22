/**
 * One repository, several products (issue 35): the construct at the root and
 * the packages under packages/ use each other only through their package
 * names and exports, never by a relative path into another's folder; each
 * package declares what it imports; the construct (lib/, functions/) imports
 * nothing of them; and the packages depend on each other in one direction
 * (simulator, then local, then cli; the private benches on top).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Source folders of each product (tests are not a product's code: they may reach into what they test). */
const PRODUCTS: Record<string, string[]> = {
  'mapflow-bridge': ['lib', 'functions', 'bin'],
  '@mapflow-bridge/simulator': ['packages/simulator/src', 'packages/simulator/cdk', 'packages/simulator/bin'],
  '@mapflow-bridge/local': ['packages/local/src'],
  '@mapflow-bridge/cli': ['packages/cli/src', 'packages/cli/bin'],
  '@mapflow-bridge/bench': ['packages/bench'],
};
const MANIFEST: Record<string, string> = {
  'mapflow-bridge': 'package.json',
  '@mapflow-bridge/simulator': 'packages/simulator/package.json',
  '@mapflow-bridge/local': 'packages/local/package.json',
  '@mapflow-bridge/cli': 'packages/cli/package.json',
  '@mapflow-bridge/bench': 'packages/bench/package.json',
};
/** Specifiers that the text pattern finds but no file loads: lib/private/bundling.ts writes this one into the bundles' banner. */
const NOT_IMPORTS = new Set(['@smithy/core/event-streams']);
/** Lower first: a product may import only products before it. */
const ORDER = ['mapflow-bridge', '@mapflow-bridge/simulator', '@mapflow-bridge/local', '@mapflow-bridge/cli', '@mapflow-bridge/bench'];

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|mts|mjs|cjs)$/.test(file) && !file.endsWith('.d.ts'))
    .filter((file) => !file.split(path.sep).some((part) => part === 'node_modules' || part === 'test'))
    .map((file) => path.join(dir, file));
}

/** Every module specifier a file loads: static and dynamic imports, re-exports, require(); `import type` (erased) only `withTypes`. */
function specifiers(source: string, withTypes = false): string[] {
  const patterns = [withTypes ? /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/g : /(?:^|\n)\s*(?:import|export)\s(?!type\s)[^'"]*?from\s+['"]([^'"]+)['"]/g, /(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g, /\b(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1]!));
}

const productOfFile = (file: string) => Object.keys(PRODUCTS).find((name) => PRODUCTS[name]!.some((dir) => file === dir || file.startsWith(`${dir}/`)));
const packageName = (specifier: string) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

describe('package boundaries', () => {
  const files = Object.entries(PRODUCTS).flatMap(([product, dirs]) => dirs.flatMap((dir) => sourceFiles(dir).map((file) => ({ product, file, source: readFileSync(path.join(ROOT, file), 'utf8') }))));

  it('reads every product', () => {
    // Assess
    for (const product of ORDER) expect(files.some((f) => f.product === product), product).toBe(true);
  });

  it('no relative import leaves its own product', () => {
    // Act
    const crossing = files.flatMap(({ product, file, source }) =>
      specifiers(source, true)
        .filter((s) => s.startsWith('.'))
        .map((s) => ({ file, s, target: path.relative(ROOT, path.resolve(ROOT, path.dirname(file), s)) }))
        .filter(({ target }) => productOfFile(target) !== product && !target.startsWith('..'))
        .map(({ file, s }) => `${file}: ${s}`),
    );

    // Assess
    expect(crossing, 'use the other package through its name and exports').toEqual([]);
  });

  it('imports only products below it, and declares each package it imports', () => {
    // Act
    const wrong: string[] = [];
    for (const { product, file, source } of files) {
      const manifest = JSON.parse(readFileSync(path.join(ROOT, MANIFEST[product]!), 'utf8')) as Record<string, Record<string, string> | undefined>;
      const declared = new Set(['dependencies', 'devDependencies', 'peerDependencies'].flatMap((field) => Object.keys(manifest[field] ?? {})));
      for (const specifier of specifiers(source)) {
        if (specifier.startsWith('.') || specifier.startsWith('node:') || NOT_IMPORTS.has(specifier)) continue;
        const name = packageName(specifier);
        if (ORDER.includes(name) && name !== product && ORDER.indexOf(name) > ORDER.indexOf(product)) wrong.push(`${file}: ${specifier} (above ${product})`);
        if (name !== product && !declared.has(name) && !isBuiltin(name)) wrong.push(`${file}: ${specifier} (not in ${MANIFEST[product]})`);
      }
    }

    // Assess
    expect(wrong).toEqual([]);
  });

  it("keeps the simulator apart from the bridge: its server imports nothing of mapflow-bridge, so the two can disagree", () => {
    // Act: the simulator's server sources (its cdk/ construct may use the construct's Lambda defaults)
    const borrowed = files
      .filter(({ file }) => file.startsWith('packages/simulator/src/') || file.startsWith('packages/simulator/bin/'))
      .flatMap(({ file, source }) => specifiers(source, true).filter((s) => packageName(s) === 'mapflow-bridge').map((s) => `${file}: ${s}`));

    // Assess
    expect(borrowed).toEqual([]);
  });
});

/** Node's built-in modules named without the node: prefix (none should be, but they are not packages). */
function isBuiltin(name: string): boolean {
  return ['fs', 'path', 'url', 'os', 'crypto', 'stream', 'util', 'events', 'http', 'https', 'net', 'child_process', 'worker_threads', 'zlib', 'module', 'readline', 'assert'].includes(name);
}
