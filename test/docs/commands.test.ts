/**
 * Every command the README shows runs as written from the root of a fresh
 * clone (issue 8): each `npx mapflow-bridge …` and `npm …` line names a real
 * command, flags that command accepts, npm scripts that exist and paths that
 * exist in the repository (or that an earlier line of the same block
 * creates). The quick `local run` examples of the Quick start are run end to
 * end.
 */
import { execFile } from 'node:child_process';
import { existsSync, globSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../e2e/helpers.ts';
import { testTmp } from '../support/temp.ts';
import { partNameFor, reportKey, resultKeys, resultPrefix } from '../../functions/routing/keys.ts';
import { DOCTOR_EXIT_CODES } from '../../packages/cli/src/doctor.ts';
import { RUN_EXIT_CODES } from '../../packages/cli/src/run.ts';
import { START_EXIT_CODES } from '../../packages/cli/src/start.ts';

const run = promisify(execFile);
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');
const HELP_BATCH = path.join(ROOT, 'test/support/cli-help.ts');
const SCRIPTS = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
/** The scripts of a workspace package, by its name (`npm test -w @mapflow-bridge/simulator`). */
function workspaceScripts(name: string): Record<string, string> {
  const manifest = readdirSync(path.join(ROOT, 'packages'))
    .map((dir) => JSON.parse(read(`packages/${dir}/package.json`)) as { name: string; scripts?: Record<string, string> })
    .find((pkg) => pkg.name === name);
  expect(manifest, `no workspace package named ${name}`).toBeDefined();
  return manifest!.scripts ?? {};
}
const DOCS = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
/** Flags whose value is a folder the command creates, or a key in the bucket (--prefix), not an input. */
const OUTPUT_FLAGS = new Set(['--out', '--state-dir', '--data-dir', '--prefix']);

interface Command {
  file: string;
  line: number;
  /** One simple command: `npx mapflow-bridge …` or `npm …`, comment and `$ ` stripped. */
  text: string;
  /** The whole code block it stands in (where earlier lines may create files); '' for inline code. */
  block: string;
  /** A synopsis such as `local run [--json] [--out <dir>]`: checked, never run. */
  synopsis: boolean;
  section: string;
}

function commandsOf(file: string): Command[] {
  const markdown = read(file);
  const lineOf = (index: number) => markdown.slice(0, index).split('\n').length;
  const sectionAt = (index: number) => [...markdown.slice(0, index).matchAll(/^#{1,4} (.+)$/gm)].at(-1)?.[1] ?? '';
  const found: Command[] = [];
  const add = (raw: string, index: number, block: string) => {
    const withoutComment = raw.replace(/\s+#\s.*$/, '').replace(/^\s*\$\s+/, '').trim();
    for (const part of withoutComment.split(/\s*(?:&&|\|\||;|\|)\s*/)) {
      const text = part.replace(/^\(+|\)+$/g, '').trim();
      if (!/^(npx mapflow-bridge|npm)(\s|$)/.test(text)) continue;
      found.push({ file, line: lineOf(index), text, block, synopsis: /[[<]|\.\.\.|…/.test(text), section: sectionAt(index) });
    }
  };
  // Every fenced block, whatever its language, so that a closing fence is never taken for an opening one;
  // the shell blocks (no language, or a shell's) are read.
  for (const match of markdown.matchAll(/```([a-z]*)\n([\s\S]*?)```/g)) {
    if (!['', 'sh', 'bash', 'shell', 'console'].includes(match[1]!)) continue;
    let offset = match.index + match[0].indexOf('\n') + 1;
    for (const line of match[2]!.split('\n')) {
      add(line, offset, match[2]!);
      offset += line.length + 1;
    }
  }
  const prose = markdown.replace(/```[\s\S]*?```/g, (block) => ' '.repeat(block.length));
  for (const match of prose.matchAll(/`((?:npx mapflow-bridge|npm) [^`\n]+)`/g)) add(match[1]!, match.index, '');
  return found;
}

/** Splits a command line into words, keeping quoted strings whole. */
const words = (text: string) => [...text.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);

/** The command words before the first flag or argument: `local run`, `jobs list`, `sim`. */
function cliCommand(argv: string[]): string[] {
  const command: string[] = [];
  for (const word of argv) {
    if (command.length === 2 || !/^[a-z][a-z-]*$/.test(word)) break;
    command.push(word);
  }
  return command;
}

/** What an `npm …` or `npx mapflow-bridge …` line hands to the CLI, if anything. */
function cliArgs(command: Command): string[] | undefined {
  const argv = words(command.text);
  if (argv[0] === 'npx') return argv.slice(2);
  // A workspace's own script (`npm start -w @mapflow-bridge/simulator`): its package's tests run it.
  if (argv.includes('-w')) return undefined;
  if (argv[1] === 'start') return ['start', ...argv.slice(argv.indexOf('--') + 1 || argv.length)];
  if (argv[1] === 'run' && argv[2] === 'bench') return ['bench', ...(argv.includes('--') ? argv.slice(argv.indexOf('--') + 1) : [])];
  return undefined;
}

/** Words that name files: a slash or a data-file extension, not a URL, flag, placeholder or output folder. */
function pathsOf(argv: string[]): string[] {
  // `local run`'s KEY=FILE: the key is the bucket's, the FILE a path.
  const files = argv.map((word) => (!word.startsWith('-') && !word.includes('://') && word.includes('=') ? word.slice(word.indexOf('=') + 1) : word));
  return files.filter((word, i) => {
    if (word.startsWith('-') || word.includes('://') || /[<>[\]{}$]|\.\.\.|…/.test(word)) return false;
    if (OUTPUT_FLAGS.has(argv[i - 1] ?? '')) return false;
    return word.includes('/') || /\.(geojson|json|tiff?|md|txt|ts)$/i.test(word);
  });
}

/**
 * Every command's `--help`, asked in one Node process (test/support/cli-help.ts
 * runs the CLI's main for each, as packages/cli/bin/mapflow-bridge.mjs does): one process
 * start and one module load for all of them, instead of one per command.
 */
let helps: Promise<Record<string, { code: number; output: string }>> | undefined;
async function helpOf(command: string[]): Promise<string> {
  helps ??= (async () => {
    const names = [...new Map(commands.flatMap((c) => (cliArgs(c) ? [cliCommand(cliArgs(c)!)] : [])).map((n) => [n.join(' '), n])).values()];
    const { stdout } = await run(process.execPath, [HELP_BATCH, JSON.stringify(names)], { cwd: ROOT, timeout: 120_000, maxBuffer: 16 << 20 });
    return JSON.parse(stdout) as Record<string, { code: number; output: string }>;
  })();
  const answer = (await helps)[command.join(' ')];
  if (!answer) throw new Error(`no --help answer for '${command.join(' ')}'`);
  // As a spawned `mapflow-bridge ... --help` would have to: exit 0.
  if (answer.code !== 0) throw new Error(`'mapflow-bridge ${command.join(' ')} --help' exited ${answer.code}:\n${answer.output}`);
  return answer.output;
}

/** One check per distinct command of a file (`npm start` is named a dozen times in prose). */
const commands = DOCS.flatMap(commandsOf).filter((c, i, all) => all.findIndex((o) => o.file === c.file && o.text === c.text) === i);
const readmeCommands = commands.filter((c) => c.file === 'README.md');
const label = (c: Command) => `${c.file}:${c.line} ${c.text}`;

describe('README and docs commands', () => {
  it('finds the commands it is meant to check', () => {
    // Assess: the Quick start's two commands and its local run examples are seen
    const texts = readmeCommands.map((c) => c.text);
    expect(texts).toEqual(expect.arrayContaining(['npm ci', 'npm start', 'npm test']));
    expect(readmeCommands.filter((c) => c.section === 'Quick start' && c.text.startsWith('npx mapflow-bridge local run')).length).toBeGreaterThanOrEqual(2);
  });

  it.each(commands.filter((c) => c.text.startsWith('npm ')).map((c) => [label(c), c] as const))('%s uses an npm command or script that exists', (_label, command) => {
    // Prepare: `-w <workspace>` runs that package's script, not the root's
    const argv = words(command.text);
    const [, verb] = argv;
    const workspace = argv[argv.indexOf('-w') + 1];
    const scripts = argv.includes('-w') ? workspaceScripts(workspace!) : SCRIPTS;
    const script = argv.slice(2).find((word) => !word.startsWith('-') && word !== workspace);

    // Assess: built-in verbs, or a script of package.json
    if (verb === 'run') expect(Object.keys(scripts)).toContain(script);
    else if (verb === 'start' || verb === 'test') expect(scripts[verb!], `${workspace ?? 'the root'} has no "${verb}" script`).toBeDefined();
    else expect(['ci', 'install', 'exec', 'pack', 'view']).toContain(verb);
  });

  it.each(commands.filter((c) => cliArgs(c)).map((c) => [label(c), c] as const))('%s names a real command, its flags and existing paths', async (_label, command) => {
    // Prepare
    const argv = cliArgs(command)!;
    const name = cliCommand(argv);

    // Act
    const help = await helpOf(name);

    // Assess: the command answers --help, knows every flag shown, and every path exists
    expect(help, `'mapflow-bridge ${name.join(' ')} --help'`).toMatch(/Usage:/);
    for (const flag of argv.filter((w) => /^--[a-z]/.test(w)).map((w) => w.split('=')[0]!)) {
      expect(help, `${flag} is not in 'mapflow-bridge ${name.join(' ')} --help'`).toContain(flag);
    }
    for (const file of pathsOf(argv)) {
      if (path.isAbsolute(file)) {
        expect(command.block, `${file} is neither in the repository nor created earlier in the block`).toMatch(new RegExp(`(>|cp .*|mkdir .*)\\s*${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      } else {
        // A clone has nothing beside it: a path that leaves the repository cannot work
        expect(path.relative(ROOT, path.resolve(ROOT, file)), `${file} is outside the repository`).not.toMatch(/^\.\./);
        expect(globSync(file, { cwd: ROOT }).length, `${file} does not exist in the repository`).toBeGreaterThan(0);
      }
    }
  }, 90_000);
});

describe('Quick start local run examples, run as written', () => {
  const outputs: string[] = [];
  afterAll(async () => {
    await Promise.all(outputs.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  const examples = readmeCommands.filter((c) => c.section === 'Quick start' && !c.synopsis && c.text.startsWith('npx mapflow-bridge local run'));

  it.each(examples.map((c) => [label(c), c] as const))('%s succeeds from the repository root', async (_label, command) => {
    // Prepare: results go to a temporary folder instead of ./mapflow-output
    const out = await mkdtemp(path.join(testTmp(), 'readme-run-'));
    outputs.push(out);
    const argv = [...cliArgs(command)!, '--out', out];

    // Act
    const { stdout } = await run(process.execPath, [CLI, ...argv], { cwd: ROOT, timeout: 280_000, maxBuffer: 64 << 20 });

    // Assess: exit 0 (execFile throws otherwise), every file SUCCEEDED, results copied
    if (argv.includes('--json')) {
      const summary = JSON.parse(stdout) as { jobs: { status: string }[] };
      expect(summary.jobs.length).toBe(pathsOf(cliArgs(command)!).length);
      expect(summary.jobs.map((j) => j.status)).toEqual(summary.jobs.map(() => 'SUCCEEDED'));
    } else {
      expect(stdout).toMatch(/(\d+) of \1 job\(s\) succeeded/);
    }
    expect(globSync('*/results/**/job.json', { cwd: out }).length).toBeGreaterThan(0);
    expect(existsSync(out)).toBe(true);
  }, 300_000);
});

/**
 * What --help and docs/local.md say a command does, against what it does:
 * the exit statuses each command returns (its exported table of codes, which
 * the code returns and test/e2e/newcomer.test.ts observes), and the output
 * paths (functions/routing/keys.ts, the one place the layout lives).
 */
describe('--help and docs/local.md against what the commands do', () => {
  const EXITS: Record<string, { codes: Record<string, number>; docsSection?: string }> = {
    start: { codes: START_EXIT_CODES, docsSection: '## `npm start`' },
    'local run': { codes: RUN_EXIT_CODES, docsSection: '## `mapflow-bridge local run`' },
    doctor: { codes: DOCTOR_EXIT_CODES },
  };
  let answers: Promise<Record<string, { code: number; output: string }>> | undefined;
  const helpText = async (command: string) => {
    answers ??= run(process.execPath, [HELP_BATCH, JSON.stringify(Object.keys(EXITS).map((name) => name.split(' ')))], { cwd: ROOT, timeout: 120_000, maxBuffer: 16 << 20 }).then(
      ({ stdout }) => JSON.parse(stdout) as Record<string, { code: number; output: string }>,
    );
    return (await answers)[command]!.output;
  };
  /** The exit codes an "Exit status: ..." paragraph names (up to its blank line). */
  const codesIn = (text: string) => {
    const paragraphs = [...text.matchAll(/Exit status:[\s\S]*?(?:\n\s*\n|$)/g)].map((m) => m[0]);
    expect(paragraphs.length, `no "Exit status:" in:\n${text.slice(0, 400)}`).toBeGreaterThan(0);
    return [...new Set(paragraphs.join(' ').match(/\b\d{1,3}\b/g)!.map(Number))].sort((a, b) => a - b);
  };
  const sorted = (codes: Record<string, number>) => [...new Set(Object.values(codes))].sort((a, b) => a - b);

  it.each(Object.keys(EXITS))("'%s --help' names exactly the exit statuses the command returns", async (command) => {
    // Act
    const help = await helpText(command);
    // Assess
    expect(codesIn(help)).toEqual(sorted(EXITS[command]!.codes));
  }, 120_000);

  it.each(Object.keys(EXITS).filter((c) => EXITS[c]!.docsSection))("docs/local.md's section on '%s' names exactly the exit statuses the command returns", (command) => {
    // Prepare: the command's section, up to the next level-2 heading
    const markdown = read('docs/local.md');
    const start = markdown.indexOf(EXITS[command]!.docsSection!);
    const section = markdown.slice(start, markdown.indexOf('\n## ', start + 1));
    // Act
    const codes = codesIn(section.replaceAll('**', ''));
    // Assess
    expect(start).toBeGreaterThanOrEqual(0);
    expect(codes).toEqual(sorted(EXITS[command]!.codes));
  });

  it("every results/ and failed/ path docs/local.md and 'local run --help' show is where the bridge writes", async () => {
    // Prepare: each pattern with its placeholders filled, and the keys the bridge derives for the same input
    const texts = [read('docs/local.md'), await helpText('local run')];
    const patterns = [...new Set(texts.flatMap((text) => [...text.matchAll(/(?:results|failed)\/<[^`\s)]*/g)].map((m) => m[0])))];
    const prefixes = { inbox: 'inbox/', results: 'results/', failed: 'failed/', work: 'work/' };
    const written = (key: string) => {
      const { resultKey, jobJsonKey } = resultKeys(prefixes, key, partNameFor(key));
      return [resultKey, jobJsonKey, resultPrefix(prefixes, key), reportKey(prefixes, key)];
    };
    // Act
    const wrong = patterns.filter((pattern) => {
      // A pattern without <path> is a file at the inbox root.
      const key = pattern.includes('<path>') ? 'inbox/buildings/cogeo.tif' : 'inbox/cogeo.tif';
      const filled = pattern.replaceAll('<path>', 'buildings').replaceAll('<name>', 'cogeo.tif').replaceAll('<file>', 'cogeo.tif').replaceAll('<part>', 'cogeo');
      return !written(key).includes(filled);
    });
    // Assess
    expect(patterns.length).toBeGreaterThanOrEqual(4);
    expect(wrong).toEqual([]);
  }, 120_000);
});
