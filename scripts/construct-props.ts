/**
 * Writes docs/construct-props.md: the table of MapflowBridge's props (name,
 * type, default, description) read from the TSDoc of MapflowBridgeProps and
 * the interfaces it extends, with the TypeScript compiler's parser (no type
 * check: a second or so). test/docs/construct-props.test.ts fails when the
 * file is out of date, and an optional prop without `@default` fails here.
 *
 *   npx tsx scripts/construct-props.ts [--check]     (npm run docs:props)
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const PROPS_DOC = path.join(ROOT, 'docs', 'construct-props.md');
/** The files whose interfaces MapflowBridgeProps is made of. */
const SOURCES = ['lib/mapflow-bridge.ts', 'lib/settings.ts'];
const PROPS_INTERFACE = 'MapflowBridgeProps';

export interface PropRow {
  readonly name: string;
  readonly type: string;
  /** The `@default` text; undefined for a required prop. */
  readonly default?: string;
  readonly description: string;
  /** The interface that declares it. */
  readonly declaredIn: string;
}

/** An interface that cannot be documented (an unknown base, an optional prop without `@default`). */
export class PropsDocError extends Error {
  override readonly name = 'PropsDocError';
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/** Every interface declared in the sources, by name. */
async function interfaces(): Promise<Map<string, ts.InterfaceDeclaration>> {
  const found = new Map<string, ts.InterfaceDeclaration>();
  for (const file of SOURCES) {
    const source = ts.createSourceFile(file, await readFile(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
    source.forEachChild((node) => {
      if (ts.isInterfaceDeclaration(node)) found.set(node.name.text, node);
    });
  }
  return found;
}

function rowOf(member: ts.PropertySignature, declaredIn: string): PropRow {
  const name = member.name.getText();
  const docs = ts.getJSDocCommentsAndTags(member).filter(ts.isJSDoc);
  const description = oneLine(docs.map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? '').join(' '));
  const defaultTag = ts.getJSDocTags(member).find((tag) => tag.tagName.text === 'default');
  const optional = member.questionToken !== undefined;
  if (optional && !defaultTag) throw new PropsDocError(`${declaredIn}.${name} is optional but its TSDoc has no @default`);
  return {
    name,
    type: oneLine(member.type?.getText() ?? 'unknown'),
    ...(defaultTag ? { default: oneLine(ts.getTextOfJSDocComment(defaultTag.comment) ?? '') } : {}),
    description,
    declaredIn,
  };
}

/** The props of `name`: those of the interfaces it extends first (in order), then its own, in source order. */
function rowsOf(name: string, all: Map<string, ts.InterfaceDeclaration>): PropRow[] {
  const declaration = all.get(name);
  if (!declaration) throw new PropsDocError(`interface ${name} is not declared in ${SOURCES.join(', ')}`);
  const inherited = (declaration.heritageClauses ?? []).flatMap((clause) => clause.types.flatMap((base) => rowsOf(base.expression.getText(), all)));
  const own = declaration.members.filter(ts.isPropertySignature).map((member) => rowOf(member, name));
  return [...inherited, ...own];
}

/** The rows of MapflowBridgeProps's table. */
export async function propRows(): Promise<PropRow[]> {
  return rowsOf(PROPS_INTERFACE, await interfaces());
}

/** A table cell: pipes escaped (GitHub tables split on them, even inside code). */
const cell = (text: string) => text.replace(/\|/g, '\\|');
/** A TSDoc text as markdown: `{@link X}` as plain X. */
const markdown = (text: string) => cell(text.replace(/\{@link\s+([^}\s|]+)[^}]*\}/g, '$1'));

export async function renderPropsDoc(): Promise<string> {
  const rows = await propRows();
  return [
    '# MapflowBridge props',
    '',
    '<!-- Generated from the TSDoc of MapflowBridgeProps (lib/mapflow-bridge.ts, lib/settings.ts) by `npm run docs:props`; do not edit. -->',
    '',
    'Every prop is optional: `new MapflowBridge(scope, id)` deploys with the defaults below.',
    'The README has the short version; [deploy.md](deploy.md) has examples.',
    '',
    '| Prop | Type | Default | Description |',
    '|---|---|---|---|',
    ...rows.map((r) => `| \`${r.name}\` | \`${cell(r.type)}\` | ${r.default === undefined ? 'required' : markdown(r.default)} | ${markdown(r.description)} |`),
    '',
  ].join('\n');
}

async function main(check: boolean): Promise<number> {
  const content = await renderPropsDoc();
  const current = await readFile(PROPS_DOC, 'utf8').catch(() => '');
  if (current === content) return 0;
  if (!check) {
    await writeFile(PROPS_DOC, content);
    return 0;
  }
  console.error('out of date: docs/construct-props.md; run: npm run docs:props');
  return 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  process.exitCode = await main(process.argv.includes('--check'));
}
