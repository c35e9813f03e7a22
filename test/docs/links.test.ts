/**
 * Every link between the README and docs/*.md leads somewhere (issue 27: one
 * place per subject, linked from the others): a relative link names a file
 * or folder of the repository, and its `#anchor` a heading of that file (as
 * GitHub makes anchors of headings) or an explicit `<a id>`. Files and code
 * that name a docs page in prose (`docs/<page>.md`) name one that exists.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../e2e/helpers.ts';

const DOCS = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
/** Code blocks are not prose: their brackets and parentheses are not links. */
const withoutCode = (markdown: string) => markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '``');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a markdown file offers: its headings (with GitHub's -1, -2 for repeats) and `<a id>`s. */
function anchorsOf(file: string): Set<string> {
  const markdown = read(file).replace(/```[\s\S]*?```/g, '');
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of markdown.matchAll(/<a (?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

interface Link {
  file: string;
  target: string;
}

function linksOf(file: string): Link[] {
  return [...withoutCode(read(file)).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target))
    .map((target) => ({ file, target }));
}

const links = DOCS.flatMap(linksOf);

describe('links in the README and docs', () => {
  it('finds the links it is meant to check', () => {
    // Assess: the README links into docs, docs link to each other and to anchors
    expect(links.filter((l) => l.file === 'README.md' && l.target.startsWith('docs/')).length).toBeGreaterThan(10);
    expect(links.filter((l) => l.file.startsWith('docs/') && l.target.includes('#')).length).toBeGreaterThan(3);
  });

  it('computes anchors as GitHub does', () => {
    // Assess: headings with punctuation, code and a leading hyphen
    expect(slug('Kill -9 at any instant')).toBe('kill--9-at-any-instant');
    expect(slug('Admission (concurrency slots without polling)')).toBe('admission-concurrency-slots-without-polling');
    expect(slug('Start-up: what runs side by side')).toBe('start-up-what-runs-side-by-side');
    expect(slug('`npm start`')).toBe('npm-start');
  });

  it.each(links.map((l) => [`${l.file} -> ${l.target}`, l] as const))('%s', (_label, link) => {
    // Prepare
    const [target, anchor] = link.target.split('#') as [string, string | undefined];
    const resolved = target === '' ? link.file : path.relative(ROOT, path.resolve(ROOT, path.dirname(link.file), decodeURI(target)));

    // Assess: the file exists in the repository, and so does the anchor
    expect(resolved, 'leaves the repository').not.toMatch(/^\.\./);
    expect(existsSync(path.join(ROOT, resolved)), `${resolved} does not exist`).toBe(true);
    if (anchor !== undefined) {
      expect(resolved.endsWith('.md') && statSync(path.join(ROOT, resolved)).isFile(), `#${anchor} on a non-markdown target`).toBe(true);
      expect([...anchorsOf(resolved)], `no heading for #${anchor} in ${resolved}`).toContain(anchor);
    }
  });

  it('names only docs pages that exist, in docs, code and tests', () => {
    // Prepare: every `docs/<name>.md` named in prose or comments
    const files = [
      ...DOCS,
      ...['functions', 'lib', 'packages', 'bin', 'test', 'scripts'].flatMap((dir) =>
        readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
          .filter((f) => /\.(ts|mts|mjs|md)$/.test(f) && !f.split(path.sep).includes('node_modules'))
          .map((f) => `${dir}/${f}`),
      ),
    ];

    // Act
    const missing = files.flatMap((file) =>
      [...read(file).matchAll(/\bdocs\/([a-z0-9-]+\.md)/g)].filter((m) => !existsSync(path.join(ROOT, 'docs', m[1]!))).map((m) => `${file}: docs/${m[1]}`),
    );

    // Assess
    expect([...new Set(missing)]).toEqual([]);
  });
});
