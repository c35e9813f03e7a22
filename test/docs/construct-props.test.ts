/**
 * docs/construct-props.md is the table scripts/construct-props.ts makes from
 * the TSDoc of MapflowBridgeProps, and its rows are the props the TypeScript
 * checker sees on MapflowBridgeProps (inherited ones included), so the table
 * can neither go stale nor miss a prop the generator did not find.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript-5'; // the compiler API (scripts/construct-props.ts says why 5)
import { describe, expect, it } from 'vitest';
import { PROPS_DOC, README, renderPropsDoc, renderReadmeProps, withReadmeProps } from '../../scripts/construct-props.ts';

const SOURCE = fileURLToPath(new URL('../../lib/mapflow-bridge.ts', import.meta.url));
const SETTINGS = fileURLToPath(new URL('../../lib/settings.ts', import.meta.url));

/** The property names of MapflowBridgeProps as the checker resolves them (extends clauses followed). */
function checkedPropNames(): string[] {
  // noResolve: only lib/ files are parsed (their imports of aws-cdk-lib stay unresolved), a second instead of twenty;
  // a base interface declared elsewhere would show no members here (and fail the generator, which reads these files only).
  const roots = [SOURCE, SETTINGS];
  const program = ts.createProgram(roots, { noResolve: true, noLib: true, allowImportingTsExtensions: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(SOURCE);
  const declaration = source?.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'MapflowBridgeProps');
  if (!declaration) throw new Error('MapflowBridgeProps is not declared in lib/mapflow-bridge.ts');
  return checker.getPropertiesOfType(checker.getTypeAtLocation(declaration.name)).map((p) => p.name);
}

/** The first column of the props table. */
const tableNames = (doc: string) => [...doc.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);

describe('docs/construct-props.md', () => {
  it('is the table generated from the TSDoc of MapflowBridgeProps', async () => {
    // Act
    const [committed, generated] = await Promise.all([readFile(PROPS_DOC, 'utf8'), renderPropsDoc()]);

    // Assess
    expect(committed, 'docs/construct-props.md is out of date: run `npm run docs:props` and commit it').toBe(generated);
  });

  it('has one row per prop of MapflowBridgeProps as the type checker sees it', async () => {
    // Act
    const [committed, names] = await Promise.all([readFile(PROPS_DOC, 'utf8'), Promise.resolve(checkedPropNames())]);

    // Assess
    expect(tableNames(committed).sort()).toEqual(names.sort());
  });

  it("is in the README's first screen as the short table of the same props", async () => {
    // Act
    const [readme, table] = await Promise.all([readFile(README, 'utf8'), renderReadmeProps()]);

    // Assess: the README holds the generated table (one row per prop), before its local-mode section
    expect(withReadmeProps(readme, table), "the README's props table is out of date: run `npm run docs:props`").toBe(readme);
    expect(tableNames(table).sort()).toEqual(checkedPropNames().sort());
    expect(readme.indexOf(table)).toBeLessThan(readme.indexOf('## Local mode'));
  });
});
