/**
 * The house: no import circle among the project's own files (functions/, lib/,
 * packages/, bin/, scripts/), of any length, counting type imports and
 * dynamic imports with a literal specifier (`await import('./x.ts')`: a circle
 * hidden behind one still loads a module half-initialised; issue 27 found
 * packages/cli/src/start.ts <-> packages/cli/src/console/command.ts that way, issue 12 three
 * static ones); and functions/ is layered: the ground (core) below the rooms,
 * the runtime, the steps and the handlers.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
/**
 * The layers of functions/ (docs/architecture.md, "Layers"), lowest first. A
 * file may import its own layer or a lower one; within the rooms the folder
 * graph must have no circle.
 */
const LAYERS = [
  ['core', 'polling', 'geojson'],
  ['storage', 'geotiff', 'ledger', 'mapflow', 'events', 'aoi', 'routing', 'quicklook', 'results'],
  ['runtime'],
  ['jobs'],
  ['handlers'],
];
const layerOf = (folder: string) => LAYERS.findIndex((layer) => layer.includes(folder));

async function tsFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') out.push(...(await tsFiles(full)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** The project's own folders of code, every one of which the circle check reads. */
const CODE = ['functions', 'lib', 'packages', 'bin', 'scripts'];

/**
 * Relative imports of a file, resolved to absolute paths: `import … from`,
 * `export … from`, `import './x.ts'` and `import('./x.ts')` with a literal
 * specifier (a computed one, `import(path.join(…))`, cannot be read as text).
 */
function relativeImports(file: string, source: string): string[] {
  const patterns = [
    /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g,
    /(?:^|\n)\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/g,
    /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => path.resolve(path.dirname(file), match[1] as string)));
}

/** The circles of a graph: its strongly connected components of more than one file (Tarjan), each sorted. */
function importCircles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)?.has(file)) circles.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return circles;
}

/** Every relative import of the .ts files under the given top folders: file -> imported files. */
async function importGraph(dirs: string[]): Promise<Map<string, Set<string>>> {
  const files = (await Promise.all(dirs.map((d) => tsFiles(path.join(ROOT, d))))).flat();
  const graph = new Map<string, Set<string>>();
  for (const file of files) graph.set(file, new Set(relativeImports(file, await readFile(file, 'utf8'))));
  return graph;
}

/** 'functions/ledger/slots.ts' -> 'ledger'; undefined outside functions/. */
function functionsFolder(file: string): string | undefined {
  const parts = path.relative(ROOT, file).split(path.sep);
  return parts[0] === 'functions' ? parts[1] : undefined;
}

describe('import structure', () => {
  it('reads dynamic imports and finds circles of any length', () => {
    // Prepare: a file that imports two others only dynamically, and a three-file circle
    const file = path.join(ROOT, 'x', 'a.ts');
    const source = "const b = await import('./b.ts');\nvoid import(\n  '../c/c.ts'\n);\nimport './side.ts';\nconst d = await import(path.join(dir, 'd.ts'));";
    const graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a', 'd'])],
      ['d', new Set<string>()],
    ]);
    // Act
    const imports = relativeImports(file, source).map((target) => path.relative(ROOT, target));
    const circles = importCircles(graph);
    // Assess
    expect(imports.sort()).toEqual(['x/b.ts', 'x/side.ts', 'c/c.ts'].sort());
    expect(circles).toEqual([['a', 'b', 'c']]);
  });

  it('has no import circle in the project, dynamic imports included', async () => {
    // Prepare
    const graph = await importGraph(CODE);
    // Act
    const circles = importCircles(graph).map((circle) => circle.map((file) => path.relative(ROOT, file)).join(' -> '));
    // Assess: the graph holds the CLI's commands, which packages/cli/src/main.ts loads only dynamically
    expect(graph.size).toBeGreaterThan(200);
    expect([...(graph.get(path.join(ROOT, 'packages', 'cli', 'src', 'main.ts')) ?? [])].map((target) => path.relative(ROOT, target))).toContain('packages/cli/src/start.ts');
    expect(circles).toEqual([]);
  });

  it('the package entry (lib/index.ts) exports nothing from lib/private/', async () => {
    // Prepare
    const graph = await importGraph(['lib']);
    const isPrivate = (file: string) => path.relative(ROOT, file).startsWith(`lib${path.sep}private${path.sep}`);
    // Act
    const entry = [...(graph.get(path.join(ROOT, 'lib', 'index.ts')) ?? [])];
    // Assess
    expect(entry.length).toBeGreaterThan(2);
    expect(graph.has(path.join(ROOT, 'lib', 'private', 'bundling.ts'))).toBe(true);
    expect(entry.filter(isPrivate).map((t) => path.relative(ROOT, t))).toEqual([]);
  });

  it('functions/jobs/steps/ holds only catalogued steps, and no step imports another (shared helpers live in functions/jobs/)', async () => {
    // Prepare
    const { TASKS } = await import('../../functions/core/catalog.ts');
    const catalogued = new Set<string>(TASKS.map((task) => task.fn));
    const stepsDir = path.join(ROOT, 'functions', 'jobs', 'steps');
    // Act
    const steps = (await readdir(stepsDir)).filter((name) => name.endsWith('.ts')).map((name) => name.slice(0, -3));
    const graph = await importGraph(['functions/jobs/steps']);
    const stepToStep = [...graph].flatMap(([file, imports]) =>
      [...imports].filter((target) => path.dirname(target) === stepsDir).map((target) => `${path.relative(ROOT, file)} -> ${path.relative(ROOT, target)}`),
    );
    // Assess
    expect(steps).toContain('finish-job');
    expect(steps.filter((step) => !catalogued.has(step))).toEqual([]);
    expect(stepToStep).toEqual([]);
  });

  it('imports run downwards only in functions/, and the CDK code reaches no step', async () => {
    // Prepare
    const graph = await importGraph(['functions', 'lib']);
    // Act
    const upward: string[] = [];
    const roomEdges = new Map<string, Set<string>>();
    for (const [file, imports] of graph) {
      const from = functionsFolder(file);
      for (const target of imports) {
        const to = functionsFolder(target);
        const edge = `${path.relative(ROOT, file)} -> ${path.relative(ROOT, target)}`;
        if (from === undefined) {
          // lib/: the catalogue of handlers is data on the ground (functions/core/catalog.ts); the steps and handlers' code are not its business.
          if (to === 'jobs' || to === 'handlers') upward.push(edge);
          continue;
        }
        if (to === undefined) {
          upward.push(edge);
          continue;
        }
        expect(layerOf(from), `folder functions/${from} is in no layer`).toBeGreaterThanOrEqual(0);
        expect(layerOf(to), `folder functions/${to} is in no layer`).toBeGreaterThanOrEqual(0);
        if (layerOf(to) > layerOf(from)) upward.push(edge);
        if (from !== to && layerOf(from) === layerOf(to)) roomEdges.set(from, (roomEdges.get(from) ?? new Set()).add(to));
      }
    }
    const inCircle = (start: string): boolean => {
      const seen = new Set<string>();
      const stack = [...(roomEdges.get(start) ?? [])];
      while (stack.length > 0) {
        const next = stack.pop() as string;
        if (next === start) return true;
        if (seen.has(next)) continue;
        seen.add(next);
        stack.push(...(roomEdges.get(next) ?? []));
      }
      return false;
    };
    // Assess
    expect(upward).toEqual([]);
    expect([...roomEdges.keys()].filter(inCircle)).toEqual([]);
    // the ground imports nothing of the bridge
    for (const [file, imports] of graph) {
      if (functionsFolder(file) === 'core') expect([...imports].map((t) => path.relative(ROOT, t)).filter((t) => !t.startsWith('functions/core/'))).toEqual([]);
    }
  });
});
