/**
 * Tests mirror the code (issue 27 point 3): moves each test file to where the
 * layout of docs/development.md ("Where tests live") puts it, with `git mv`,
 * then rewrites every path that named a moved file.
 *
 *   npx tsx scripts/dev/mirror-tests.ts             move and rewrite
 *   npx tsx scripts/dev/mirror-tests.ts --dry-run   print what it would do, change nothing
 *   npx tsx scripts/dev/mirror-tests.ts --check     exit 1 if a file would move or is unmapped
 *
 * Deterministic and idempotent: the moves come from TABLE (explicit, one line
 * per file) and, for a file the table does not know, from RULE (below); a
 * second run finds nothing to move and changes nothing. A file RULE cannot
 * place is printed as unmapped and the script exits 1 before touching anything.
 *
 * After a run, `git mv` has staged the pure renames and the rewrites are
 * unstaged, so the two commit apart:
 *   git commit -m 'Tests mirror the code: moves' && git commit -am 'Tests mirror the code: imports and paths'
 *
 * What is rewritten:
 *  - relative string literals ('../x', "./y", `../../samples/${name}`) in a
 *    moved file: resolved from its old folder, mapped through the moves,
 *    written relative to its new folder (imports, import(), vi.mock, new URL(..,
 *    import.meta.url), path.join/resolve(here, '../..')). A literal that names no
 *    file or folder of the repository (a key in a traversal test), and a bare
 *    '..' (data in tests), are left alone;
 *  - in every other file, a relative literal that named a file moved away;
 *  - repository paths of moved files in text (docs, comments, configs,
 *    scripts, package.json), and the folder names of DIR_MENTIONS;
 *  - vitest.config.ts's ISOLATED list: a glob over a folder that is gone
 *    becomes the glob of the folder its files went to when that folder holds
 *    only isolated files, else the list of their new paths.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SELF = 'scripts/dev/ws-move.ts';

/** Folder (or file) moves into the workspaces, longest prefix first; expanded per tracked file. */
const PREFIXES: [string, string][] = [
  ['local/simulator/', 'packages/simulator/src/'],
  ['local/console/', 'packages/cli/src/console/'],
  ['local/cli/', 'packages/cli/src/'],
  ['local/samples/', 'packages/local/samples/'],
  ['local/', 'packages/local/src/'],
  ['lib/private/local-account.ts', 'packages/local/src/local-account.ts'],
  ['lib/private/local-assembly.ts', 'packages/local/src/assembly/local-assembly.ts'],
  ['lib/private/local-definition.ts', 'packages/local/src/assembly/local-definition.ts'],
  ['lib/private/local-definition-cache.ts', 'packages/local/src/assembly/local-definition-cache.ts'],
  ['lib/testing/mapflow-simulator.ts', 'packages/simulator/cdk/mapflow-simulator.ts'],
  ['bench/', 'packages/bench/'],
  ['bin/cli.ts', 'packages/cli/src/main.ts'],
  ['bin/mapflow-bridge.mjs', 'packages/cli/bin/mapflow-bridge.mjs'],
  ['test/unit/local/simulator/', 'packages/simulator/test/'],
  ['test/unit/local/cli/', 'packages/cli/test/'],
  ['test/unit/local/', 'packages/local/test/'],
  ['test/unit/bench/', 'packages/local/test/bench/'],
  ['test/unit/lib/local-definition.test.ts', 'packages/local/test/assembly/local-definition.test.ts'],
];
const ALL = execFileSync('git', ['ls-files', '-z'], { cwd: fileURLToPath(new URL('../../', import.meta.url)), encoding: 'utf8' }).split('\0').filter(Boolean);
export const TABLE: Readonly<Record<string, string>> = Object.fromEntries(
  ALL.flatMap((file) => {
    const hit = PREFIXES.find(([from]) => (from.endsWith('/') ? file.startsWith(from) : file === from));
    return hit ? [[file, hit[1] + file.slice(hit[0].length)]] : [];
  }),
);

/**
 * Folders whose files are where they belong: RULE leaves a file under them alone.
 * test/perf holds measurements (bundle sizes, start-up, memory, polling and capacity figures).
 */
export const SETTLED = [
  'test/unit/', 'test/e2e/', 'test/reliability/', 'test/perf/', 'test/architecture/',
  'test/cdk/', 'test/docs/', 'test/contract/', 'test/integ/', 'test/package/', 'test/support/', 'test/fixtures/',
];

/** Old folders whose every test covers one source folder: RULE sends a new file there. */
const FOLDER_RULES: Readonly<Record<string, string>> = {
  'test/aoi/': 'test/unit/functions/aoi/',
  'test/geotiff/': 'test/unit/functions/geotiff/',
  'test/ledger/': 'test/unit/functions/ledger/',
  'test/mapflow/': 'test/unit/functions/mapflow/',
  'test/routing/': 'test/unit/functions/routing/',
  'test/runtime/': 'test/unit/functions/runtime/',
  'test/storage/': 'test/unit/functions/storage/',
  'test/simulator/': 'test/unit/local/simulator/',
  'test/spec-client/': 'test/contract/',
};

/** Folder names in text (docs, scripts) that are gone, and what names their tests now. */
const DIR_MENTIONS: Readonly<Record<string, string>> = {
  'local/simulator/': 'packages/simulator/src/',
  'local/console/': 'packages/cli/src/console/',
  'local/cli/': 'packages/cli/src/',
  'local/samples/': 'packages/local/samples/',
  'test/unit/local/simulator/': 'packages/simulator/test/',
  'test/unit/local/cli/': 'packages/cli/test/',
  'test/unit/local/': 'packages/local/test/',
  'test/unit/bench/': 'packages/local/test/bench/',
}

const SOURCE_ROOTS = ['functions/', 'lib/', 'local/', 'bench/', 'examples/', 'bin/', 'scripts/'];
const TEXT = /\.(ts|mts|mjs|js|cjs|json|md|sh|ya?ml)$/;

const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' });
const tracked = () => git('ls-files', '-z').split('\0').filter(Boolean).filter((file) => existsSync(path.join(ROOT, file)));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const posix = (p: string) => p.split(path.sep).join('/');
/** A repository path: normalized, no trailing slash, '' for the root. */
const norm = (p: string) => posix(path.posix.normalize(p)).replace(/\/$/, '').replace(/^\.$/, '');

/** Relative specifiers a file names: `from '…'`, `import('…')`, `vi.mock('…')`, resolved to repository paths. */
function imports(file: string, source: string): string[] {
  const dir = path.posix.dirname(file);
  return [...source.matchAll(/(?:from\s+|import\(\s*|vi\.mock\(\s*)(['"])(\.{1,2}\/[^'"]+)\1/g)].map((m) => norm(path.posix.join(dir, m[2] as string)));
}

/**
 * RULE, for a file under test/ the table does not know and no settled folder holds:
 *  1. a folder of FOLDER_RULES sends it to that folder;
 *  2. a test that starts a bridge (imports local/bridge.ts or test/e2e/helpers.ts) goes to test/e2e/;
 *  3. a test that synthesizes the stack (imports test/cdk/support.ts) goes to test/cdk/;
 *  4. else to test/unit/<the source folder it imports most>/ (ties: the first imported);
 *  5. a helper (not *.test.ts) goes where all the tests that import it go, else to test/support/.
 * Nothing else is guessed: the file is unmapped.
 */
function rule(file: string, files: string[], moves: Map<string, string>): string | undefined {
  const base = path.posix.basename(file);
  if (!file.endsWith('.test.ts')) {
    if (!/\.(ts|mts|mjs)$/.test(file)) return undefined;
    const users = files.filter((other) => other !== file && /\.(ts|mts|mjs)$/.test(other) && imports(other, read(other)).includes(file));
    const dirs = new Set(users.map((user) => path.posix.dirname(moves.get(user) ?? user)));
    return dirs.size === 1 ? `${[...dirs][0]}/${base}` : `test/support/${base}`;
  }
  const folder = Object.keys(FOLDER_RULES).find((prefix) => file.startsWith(prefix));
  if (folder) return FOLDER_RULES[folder] + file.slice(folder.length);
  const targets = imports(file, read(file));
  if (targets.some((t) => t === 'local/bridge.ts' || t === 'test/e2e/helpers.ts')) return `test/e2e/${base}`;
  if (targets.includes('test/cdk/support.ts')) return `test/cdk/${base}`;
  const counts = new Map<string, number>();
  for (const t of targets) if (SOURCE_ROOTS.some((r) => t.startsWith(r))) counts.set(path.posix.dirname(t), (counts.get(path.posix.dirname(t)) ?? 0) + 1);
  const best = [...counts].reduce<[string, number] | undefined>((a, b) => (!a || b[1] > a[1] ? b : a), undefined);
  return best ? `test/unit/${best[0]}/${base}` : undefined;
}

interface Plan {
  moves: Map<string, string>;
  inferred: string[];
  unmapped: string[];
}

function plan(files: string[]): Plan {
  const moves = new Map<string, string>();
  const inferred: string[] = [];
  const unmapped: string[] = [];
  const present = new Set(files);
  for (const [from, to] of Object.entries(TABLE)) if (present.has(from) && from !== to) moves.set(from, to);
  const loose = files.filter((f) => f.startsWith('test/') && /\.(ts|mts|mjs)$/.test(f) && !moves.has(f) && !SETTLED.some((s) => f.startsWith(s)));
  // Tests first, so a helper follows the tests that use it.
  for (const file of [...loose.filter((f) => f.endsWith('.test.ts')), ...loose.filter((f) => !f.endsWith('.test.ts'))]) {
    const to = rule(file, files, moves);
    if (to === file) continue; // a helper whose tests stay (unmapped) stays with them
    if (to) {
      moves.set(file, to);
      inferred.push(file);
    } else unmapped.push(file);
  }
  const targets = new Map<string, string>();
  for (const [from, to] of moves) {
    if (present.has(to)) throw new Error(`${from} -> ${to}: the target exists`);
    if (targets.has(to)) throw new Error(`${from} and ${targets.get(to)} both go to ${to}`);
    targets.set(to, from);
  }
  return { moves, inferred, unmapped };
}

/** The file system as it is after the moves, to resolve against before any file has moved (dry run). */
function after(files: string[], moves: Map<string, string>) {
  const set = new Set(files.filter((f) => !moves.has(f)));
  for (const to of moves.values()) set.add(to);
  const dirs = new Set<string>(['']);
  for (const f of set) for (let d = path.posix.dirname(f); d !== '.'; d = path.posix.dirname(d)) dirs.add(d);
  return (p: string) => {
    if (set.has(p) || dirs.has(p)) return true;
    if (moves.has(p)) return false;
    if (p.startsWith('test/') || p === 'test') return false;
    return existsSync(path.join(ROOT, p)) && !p.startsWith('..');
  };
}

/** A moved target as its new path; an old path the table knows counts as moved even if it moved in an earlier run. */
function forward(target: string, moves: Map<string, string>): string {
  return moves.get(target) ?? TABLE[target] ?? target;
}

function relativeFrom(dir: string, target: string, trailingSlash: boolean): string {
  let rel = path.posix.relative(dir, target);
  if (rel === '') rel = '.';
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return trailingSlash && !rel.endsWith('/') ? `${rel}/` : rel;
}

/**
 * Relative literals: a quote, then ./ or ../, up to the closing quote or a `${`. A bare '..' is
 * not taken: tests use it as data (a key segment, a forbidden path), and no test names its parent so.
 */
const LITERAL = /(['"`])(\.\.?\/[^'"`\n$]*)(?=['"`]|\$\{)/g;

function rewriteLiterals(oldFile: string, newFile: string, source: string, moves: Map<string, string>, exists: (p: string) => boolean, log: string[]): string {
  const oldDir = path.posix.dirname(oldFile);
  const newDir = path.posix.dirname(newFile);
  const moved = oldFile !== newFile;
  return source.replace(LITERAL, (whole, quote: string, literal: string) => {
    if (literal === './') return whole;
    const slash = literal.endsWith('/');
    const resolved = norm(path.posix.join(oldDir, literal));
    if (resolved.startsWith('..')) return whole;
    const target = forward(resolved, moves);
    if (!moved && target === resolved) return whole;
    if (!exists(target)) return whole;
    // In a file that stays, only a literal whose target is gone is rewritten.
    if (!moved && exists(resolved)) return whole;
    const next = relativeFrom(newDir, target, slash);
    if (next === literal) return whole;
    log.push(`  ${newFile}: ${literal} -> ${next}`);
    return quote + next;
  });
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Repository paths of moved files (and DIR_MENTIONS) in text; a path must start a word, or follow ./ or ../. */
function rewriteMentions(file: string, source: string, mentions: [string, string][], log: string[]): string {
  let text = source;
  for (const [from, to] of mentions) {
    const pattern = new RegExp(`(^|[^A-Za-z0-9_.\\-/]|\\.\\./|\\./)${escape(from)}(?![A-Za-z0-9_\\-]|\\.test|\\.ts)`, 'g');
    text = text.replace(pattern, (_whole, lead: string) => {
      log.push(`  ${file}: ${from} -> ${to}`);
      return lead + to;
    });
  }
  return text;
}

/** vitest.config.ts's ISOLATED: globs over folders that are gone. */
function rewriteIsolated(source: string, moves: Map<string, string>, files: string[], exists: (p: string) => boolean, log: string[]): string {
  const block = /const ISOLATED = \[\n([\s\S]*?)\n\];/.exec(source);
  if (!block) return source;
  const lines = (block[1] as string).split('\n');
  const entry = (line: string) => /^\s*'([^']+)',\s*$/.exec(line)?.[1];
  const globPrefix = (glob: string) => (glob.endsWith('/**/*.test.ts') ? glob.slice(0, -'**/*.test.ts'.length) : undefined);
  const entries = lines.map(entry).filter((e): e is string => e !== undefined);
  const matches = (pattern: string, file: string) => {
    const prefix = globPrefix(pattern);
    return prefix ? file.startsWith(prefix) && file.endsWith('.test.ts') : file === pattern;
  };
  const afterFiles = [...new Set([...files.filter((f) => !moves.has(f)), ...moves.values()])].filter((f) => f.endsWith('.test.ts'));
  // Every file isolated today, by its new path.
  const isolated = new Set(files.filter((f) => f.endsWith('.test.ts') && entries.some((e) => matches(e, f))).map((f) => forward(f, moves)));
  const kept = entries.filter((e) => exists(globPrefix(e)?.slice(0, -1) ?? forward(e, moves)) && globPrefix(e));
  const covered = (file: string) => kept.some((k) => matches(k, file));
  const out: string[] = [];
  for (const line of lines) {
    const e = entry(line);
    const prefix = e && globPrefix(e);
    if (!e || !prefix) {
      out.push(line);
      continue;
    }
    const stays = exists(prefix.slice(0, -1));
    // The files this glob isolated that have left its folder.
    const news = files
      .filter((f) => f.startsWith(prefix) && f.endsWith('.test.ts'))
      .map((f) => forward(f, moves))
      .filter((f) => !f.startsWith(prefix) && !covered(f));
    if (stays && news.length === 0) {
      out.push(line);
      continue;
    }
    const dirs = [...new Set(news.map((f) => path.posix.dirname(f)))];
    const indent = /^\s*/.exec(line)?.[0] ?? '';
    let replacement: string[];
    if (!stays && dirs.length === 1 && afterFiles.filter((f) => f.startsWith(`${dirs[0]}/`)).every((f) => isolated.has(f))) replacement = [`${indent}'${dirs[0]}/**/*.test.ts',`];
    else replacement = news.sort().map((f) => `${indent}'${f}',`);
    log.push(`  vitest.config.ts: ${e} -> ${[...(stays ? [e] : []), ...replacement.map((r) => r.trim())].join(' ') || '(covered by other entries)'}`);
    out.push(...(stays ? [line] : []), ...replacement);
  }
  // Named files now under a glob are listed twice: drop the name.
  const globs = out.map(entry).filter((e): e is string => e !== undefined && globPrefix(e) !== undefined);
  const deduped = out.filter((line) => {
    const e = entry(line);
    const target = e && !globPrefix(e) ? forward(e, moves) : undefined;
    const glob = target && globs.find((g) => matches(g, target));
    if (glob) {
      log.push(`  vitest.config.ts: ${e} (now under ${glob})`);
      return false;
    }
    return true;
  });
  return source.replace(block[0], `const ISOLATED = [\n${deduped.join('\n')}\n];`);
}

function main(): number {
  const args = new Set(process.argv.slice(2));
  const dryRun = args.has('--dry-run') || args.has('--check');
  const files = tracked();
  const { moves, inferred, unmapped } = plan(files);
  for (const [from, to] of moves) console.log(`${inferred.includes(from) ? 'rule ' : 'table'} ${from} -> ${to}`);
  for (const file of unmapped) console.error(`unmapped ${file}: add it to TABLE in ${SELF}`);
  if (unmapped.length > 0) return 1;
  if (args.has('--check')) return moves.size > 0 ? 1 : 0;

  const exists = after(files, moves);
  const log: string[] = [];
  const mentions: [string, string][] = [
    ...[...moves].filter(([from]) => from !== SELF),
    ...Object.entries(TABLE).filter(([from]) => !moves.has(from) && !exists(from)),
    ...Object.entries(DIR_MENTIONS).filter(([from]) => !exists(from.replace(/\/$/, ''))),
  ].sort((a, b) => b[0].length - a[0].length);
  const writes = new Map<string, string>();
  for (const file of files.filter((f) => TEXT.test(f) && f !== SELF && f !== 'package-lock.json')) {
    const source = read(file);
    const to = moves.get(file) ?? file;
    let text = /\.(ts|mts|mjs|js|cjs)$/.test(file) ? rewriteLiterals(file, to, source, moves, exists, log) : source;
    if (file === 'vitest.config.ts') text = rewriteIsolated(text, moves, files, exists, log);
    text = rewriteMentions(to, text, mentions, log);
    if (text !== source) writes.set(to, text);
  }
  console.log(log.join('\n'));
  console.log(`${moves.size} moves, ${writes.size} files rewritten${dryRun ? ' (dry run: nothing changed)' : ''}`);
  if (dryRun) return 0;
  for (const [from, to] of moves) {
    execFileSync('mkdir', ['-p', path.posix.dirname(to)], { cwd: ROOT });
    git('mv', from, to);
  }
  for (const [file, text] of writes) writeFileSync(path.join(ROOT, file), text);
  // git mv leaves the folders it emptied.
  for (const from of moves.keys()) {
    for (let dir = path.posix.dirname(from); dir !== '.' && dir !== 'test'; dir = path.posix.dirname(dir)) {
      const full = path.join(ROOT, dir);
      if (!existsSync(full) || readdirSync(full).length > 0) break;
      rmdirSync(full);
    }
  }
  return 0;
}

process.exitCode = main();
