/**
 * The documentation's examples are checked against the real code, so they
 * cannot drift again (new-user trial, B4): every routes config and `mapflow`
 * member shown in README.md and docs/*.md must pass the bridge's own parser,
 * and every model it names must resolve, as the bridge resolves it, among the
 * models of the simulator's catalogue (the default Mapflow account).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ROUTES, applyOverrides, parseRoutes, type Route } from '../../functions/routing/index.ts';
import { resolveModel } from '../../functions/jobs/models.ts';
import { MODELS, findDataProvider } from '../../packages/simulator/src/catalogue.ts';

const root = new URL('../../', import.meta.url);
const read = (file: string) => readFileSync(fileURLToPath(new URL(file, root)), 'utf8');
const DOCS = ['README.md', ...readdirSync(fileURLToPath(new URL('docs/', root))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

interface Example {
  file: string;
  line: number;
  text: string;
}

/** Every ```json block, and every inline `{...}` span that shows routes or a mapflow member. */
function examplesOf(file: string): Example[] {
  const text = read(file);
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const blocks = [...text.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => ({ file, line: lineOf(m.index), text: m[1]! }));
  const spans = [...text.matchAll(/`(\{[^`\n]*"(?:mapflow|routes)"[^`\n]*\})`/g)].map((m) => ({ file, line: lineOf(m.index), text: m[1]! }));
  return [...blocks, ...spans];
}

/** Docs elide long arrays as `[ ... ]`; an empty array stands in for them. */
function parseExample(example: Example): unknown {
  return JSON.parse(example.text.replace(/\[\s*\.\.\.\s*\]/g, '[]'));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A routes config with at least one route (`{"routes": [...]}` in prose is a shape, not an example). */
const looksLikeRoutes = (doc: unknown) => {
  const list = isObject(doc) ? doc.routes : doc;
  return Array.isArray(list) && list.length > 0 && list.every((r) => isObject(r) && 'prefix' in r);
};
const looksLikeMember = (doc: unknown) => isObject(doc) && 'mapflow' in doc;

const examples = DOCS.flatMap(examplesOf);
const routeExamples = examples.filter((e) => looksLikeRoutes(parseExample(e)));
const memberExamples = examples.filter((e) => looksLikeMember(parseExample(e)));
const label = (e: Example) => `${e.file}:${e.line}`;

/** Fails the way the bridge would fail the job: unknown model or data provider. */
function assertRunnable(route: Route): void {
  if (route.model !== undefined) resolveModel(MODELS, route.model);
  const source = route.source as { dataProvider?: { providerName: string } } | undefined;
  if (source?.dataProvider) expect(findDataProvider(source.dataProvider.providerName), `provider ${source.dataProvider.providerName}`).toBeDefined();
}

describe('documentation examples', () => {
  it('finds the examples it is meant to check', () => {
    // Assess: the README's and docs/inputs.md's routes and mapflow-member examples are all seen
    expect(routeExamples.map((e) => e.file)).toEqual(expect.arrayContaining(['README.md', 'docs/inputs.md']));
    expect(routeExamples.filter((e) => e.file === 'docs/inputs.md').length).toBeGreaterThanOrEqual(2);
    expect(memberExamples.map((e) => e.file)).toEqual(expect.arrayContaining(['README.md', 'docs/inputs.md']));
  });

  it.each(routeExamples.map((e) => [label(e), e] as const))('routes example %s parses and names real models and providers', (_label, example) => {
    // Act
    const routes = parseRoutes(JSON.stringify(parseExample(example)));

    // Assess
    expect(routes.routes.length).toBeGreaterThan(0);
    for (const route of routes.routes) assertRunnable(route);
  });

  it.each(memberExamples.map((e) => [label(e), e] as const))('mapflow member example %s applies and names a real model', (_label, example) => {
    // Prepare
    const member = (parseExample(example) as { mapflow: unknown }).mapflow;
    const defaultRoute = DEFAULT_ROUTES.routes.find((r) => r.prefix === '')!;

    // Act
    const route = applyOverrides(defaultRoute, member);

    // Assess
    expect(route.model, 'the example sets a model').toBeDefined();
    assertRunnable(route);
  });

  it.each(DOCS)('%s writes every emoji model name in full', (file) => {
    // Prepare: a catalogue emoji starts a model name; what follows it must be a whole name
    const text = read(file);
    const emoji = [...new Set(MODELS.map((m) => m.name.split(' ')[0]!))];
    const wrong: string[] = [];

    // Act
    for (const mark of emoji) {
      for (let at = text.indexOf(mark); at !== -1; at = text.indexOf(mark, at + mark.length)) {
        if (!MODELS.some((m) => text.startsWith(m.name, at))) wrong.push(`line ${text.slice(0, at).split('\n').length}: ${text.slice(at, at + 30)}`);
      }
    }

    // Assess
    expect(wrong, `model names not in the catalogue (${MODELS.map((m) => m.name).join(', ')})`).toEqual([]);
  });
});
