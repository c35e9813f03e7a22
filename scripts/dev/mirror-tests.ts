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
const SELF = 'scripts/dev/mirror-tests.ts';

/** Current path -> new path, one line per file. Files not named here stay where they are unless RULE moves them. */
export const TABLE: Readonly<Record<string, string>> = {
  // functions/aoi
  'test/aoi/crossings.test.ts': 'test/unit/functions/aoi/crossings.test.ts',
  'test/aoi/hostile.test.ts': 'test/unit/functions/aoi/hostile.test.ts',
  'test/aoi/not-json.test.ts': 'test/unit/functions/aoi/not-json.test.ts',
  'test/aoi/parse-aoi.test.ts': 'test/unit/functions/aoi/parse-aoi.test.ts',
  // local/auth; the two that start a bridge are end-to-end
  'test/auth/actions.test.ts': 'packages/local/test/auth/actions.test.ts',
  'test/auth/credentials.test.ts': 'packages/local/test/auth/credentials.test.ts',
  'test/auth/evaluate.test.ts': 'packages/local/test/auth/evaluate.test.ts',
  'test/auth/gate-endpoints.test.ts': 'packages/local/test/auth/gate-endpoints.test.ts',
  'test/auth/sigv4.test.ts': 'packages/local/test/auth/sigv4.test.ts',
  'test/auth/bridge-gate.test.ts': 'test/e2e/auth-bridge-gate.test.ts',
  'test/auth/role-enforced.test.ts': 'test/e2e/auth-role-enforced.test.ts',
  // lib/: a module's own functions are unit tests; test/cdk stays the suite of the synthesized stack
  'test/cdk/history-budget.test.ts': 'test/unit/lib/history-budget.test.ts',
  'test/cdk/local-definition.test.ts': 'packages/local/test/assembly/local-definition.test.ts',
  'test/cdk/validation.test.ts': 'test/unit/lib/validation.test.ts',
  'test/dispatch/permissions.test.ts': 'test/cdk/dispatch-permissions.test.ts',
  'test/events/registry.test.ts': 'test/cdk/event-registry.test.ts',
  'test/operators/alarms.test.ts': 'test/cdk/alarms.test.ts',
  // functions/handlers
  'test/dispatch/dispatch.test.ts': 'test/unit/functions/handlers/dispatch.test.ts',
  'test/dispatch/eventbridge-keys.test.ts': 'test/unit/functions/handlers/dispatch-eventbridge-keys.test.ts',
  'test/dispatch/listbucket.test.ts': 'test/unit/functions/handlers/dispatch-listbucket.test.ts',
  'test/dispatch/reconcile.test.ts': 'test/unit/functions/handlers/reconcile.test.ts',
  'test/dispatch/reconcile-sweep.test.ts': 'test/unit/functions/handlers/reconcile-sweep.test.ts',
  // functions/events; the schema validator serves unit and end-to-end tests
  'test/events/publisher.test.ts': 'test/unit/functions/events/publisher.test.ts',
  'test/events/schemas.test.ts': 'test/unit/functions/events/schemas.test.ts',
  'test/events/validate.ts': 'test/support/validate-events.ts',
  'test/events/e2e-events.test.ts': 'test/e2e/events.test.ts',
  'test/events/subscriber.test.ts': 'test/unit/examples/subscriber/subscriber.test.ts',
  // functions/geotiff
  'test/geotiff/bad-inputs.test.ts': 'test/unit/functions/geotiff/bad-inputs.test.ts',
  'test/geotiff/checks.test.ts': 'test/unit/functions/geotiff/checks.test.ts',
  'test/geotiff/crs-areas.test.ts': 'test/unit/functions/geotiff/crs-areas.test.ts',
  'test/geotiff/hostile-corpus.test.ts': 'test/unit/functions/geotiff/hostile-corpus.test.ts',
  'test/geotiff/hostile-round2.test.ts': 'test/unit/functions/geotiff/hostile-round2.test.ts',
  'test/geotiff/hostile.test.ts': 'test/unit/functions/geotiff/hostile.test.ts',
  'test/geotiff/inspect.test.ts': 'test/unit/functions/geotiff/inspect.test.ts',
  // functions/jobs (the steps and the workflow) and functions/polling; the harness also serves test/reliability
  'test/handlers/harness.ts': 'test/support/workflow-harness.ts',
  'test/handlers/fidelity-units.test.ts': 'test/unit/functions/jobs/steps/fidelity-units.test.ts',
  'test/handlers/helpers.test.ts': 'test/unit/functions/jobs/steps/helpers.test.ts',
  'test/handlers/poll-step.test.ts': 'test/unit/functions/jobs/steps/poll-step.test.ts',
  'test/handlers/live-fidelity.test.ts': 'test/unit/functions/jobs/live-fidelity.test.ts',
  'test/handlers/workflow.test.ts': 'test/unit/functions/jobs/workflow.test.ts',
  'test/handlers/poll-config.test.ts': 'test/unit/functions/polling/poll-config.test.ts',
  'test/handlers/poll-estimator.test.ts': 'test/unit/functions/polling/poll-estimator.test.ts',
  'test/handlers/poll-policy.test.ts': 'test/unit/functions/polling/poll-policy.test.ts',
  'test/imagery/live-catalog.test.ts': 'test/unit/functions/jobs/steps/imagery-live-catalog.test.ts',
  'test/imagery/pick.test.ts': 'test/unit/functions/jobs/steps/imagery-pick.test.ts',
  'test/imagery/catalog-e2e.test.ts': 'test/e2e/imagery-catalog.test.ts',
  // functions/ledger
  'test/ledger/admission.test.ts': 'test/unit/functions/ledger/admission.test.ts',
  'test/ledger/dynamodb-local.test.ts': 'test/unit/functions/ledger/dynamodb-local.test.ts',
  'test/ledger/ledger-retention.test.ts': 'test/unit/functions/ledger/ledger-retention.test.ts',
  'test/ledger/ledger.test.ts': 'test/unit/functions/ledger/ledger.test.ts',
  'test/ledger/slots.test.ts': 'test/unit/functions/ledger/slots.test.ts',
  // local/: unit tests by room; a bridge started and watched is end-to-end, a bridge made to fail is reliability
  'test/local/assembly-services.test.ts': 'packages/local/test/assembly/services.test.ts',
  'test/local/cli.test.ts': 'packages/cli/test/cli.test.ts',
  'test/local/jobs-list.test.ts': 'packages/cli/test/jobs-list.test.ts',
  'test/local/live.test.ts': 'packages/cli/test/live.test.ts',
  'test/local/preflight-mapflow.test.ts': 'packages/cli/test/preflight-mapflow.test.ts',
  'test/perf/local-run-timeout.test.ts': 'packages/cli/test/run-timeout.test.ts',
  'test/local/engine.test.ts': 'packages/local/test/engine/engine.test.ts',
  'test/local/events.test.ts': 'packages/local/test/events/file.test.ts',
  'test/local/drop-folder.test.ts': 'packages/local/test/s3/drop-folder.test.ts',
  'test/local/s3-atomic.test.ts': 'packages/local/test/s3/s3-atomic.test.ts',
  'test/local/s3-guard.test.ts': 'packages/local/test/s3/s3-guard.test.ts',
  'test/local/s3.test.ts': 'packages/local/test/s3/s3.test.ts',
  'test/local/poll-policy.test.ts': 'packages/local/test/poll-policy.test.ts',
  'test/local/state-lock.test.ts': 'packages/local/test/state-lock.test.ts',
  'test/local/quiet-metrics.test.ts': 'test/unit/functions/runtime/quiet-metrics.test.ts',
  'test/local/crash-resumes.test.ts': 'test/reliability/crash-resumes.test.ts',
  'test/local/degraded-start.test.ts': 'test/reliability/degraded-start.test.ts',
  'test/local/output-level.test.ts': 'test/e2e/output-level.test.ts',
  'test/doctor/doctor.test.ts': 'test/e2e/doctor.test.ts',
  'test/console/console.test.ts': 'test/e2e/console.test.ts',
  'test/operators/cli.test.ts': 'test/e2e/operators-cli.test.ts',
  'test/operators/truth.test.ts': 'test/e2e/operators-truth.test.ts',
  'test/results/flatgeobuf-e2e.test.ts': 'test/e2e/flatgeobuf.test.ts',
  // functions/mapflow (the client) with its helpers
  'test/mapflow/helpers.ts': 'test/unit/functions/mapflow/helpers.ts',
  'test/mapflow/auth.test.ts': 'test/unit/functions/mapflow/auth.test.ts',
  'test/mapflow/errors.test.ts': 'test/unit/functions/mapflow/errors.test.ts',
  'test/mapflow/fidelity.test.ts': 'test/unit/functions/mapflow/fidelity.test.ts',
  'test/mapflow/live-shapes.test.ts': 'test/unit/functions/mapflow/live-shapes.test.ts',
  'test/mapflow/live-steps.test.ts': 'test/unit/functions/mapflow/live-steps.test.ts',
  'test/mapflow/node-http.test.ts': 'test/unit/functions/mapflow/node-http.test.ts',
  'test/mapflow/redaction.test.ts': 'test/unit/functions/mapflow/redaction.test.ts',
  'test/mapflow/resilience.test.ts': 'test/unit/functions/mapflow/resilience.test.ts',
  'test/mapflow/retry-policy.test.ts': 'test/unit/functions/mapflow/retry-policy.test.ts',
  'test/mapflow/shapes.test.ts': 'test/unit/functions/mapflow/shapes.test.ts',
  'test/mapflow/streaming.test.ts': 'test/unit/functions/mapflow/streaming.test.ts',
  // functions/quicklook, results, routing, runtime, storage
  'test/operators/quicklook.test.ts': 'test/unit/functions/quicklook/quicklook.test.ts',
  'test/results/flatgeobuf.test.ts': 'test/unit/functions/results/flatgeobuf.test.ts',
  'test/routing/keys.test.ts': 'test/unit/functions/routing/keys.test.ts',
  'test/routing/routes.test.ts': 'test/unit/functions/routing/routes.test.ts',
  'test/runtime/config.test.ts': 'test/unit/functions/runtime/config.test.ts',
  'test/runtime/mapflow-credentials.test.ts': 'test/unit/functions/runtime/mapflow-credentials.test.ts',
  'test/runtime/metrics.test.ts': 'test/unit/functions/runtime/metrics.test.ts',
  'test/runtime/redaction.test.ts': 'test/unit/functions/runtime/redaction.test.ts',
  'test/runtime/rotating-client.test.ts': 'test/unit/functions/runtime/rotating-client.test.ts',
  'test/storage/describe.test.ts': 'test/unit/functions/storage/describe.test.ts',
  'test/storage/s3.test.ts': 'test/unit/functions/storage/s3.test.ts',
  // local/simulator with its helpers; its Lambda adapter too
  'test/simulator/helpers.ts': 'packages/simulator/test/helpers.ts',
  'test/simulator/account.test.ts': 'packages/simulator/test/account.test.ts',
  'test/simulator/catalog.test.ts': 'packages/simulator/test/catalog.test.ts',
  'test/simulator/cli.test.ts': 'packages/simulator/test/cli.test.ts',
  'test/simulator/faults.test.ts': 'packages/simulator/test/faults.test.ts',
  'test/simulator/live-account-run.test.ts': 'packages/simulator/test/live-account-run.test.ts',
  'test/simulator/live-fidelity.test.ts': 'packages/simulator/test/live-fidelity.test.ts',
  'test/simulator/live-shapes.test.ts': 'packages/simulator/test/live-shapes.test.ts',
  'test/simulator/persistence.test.ts': 'packages/simulator/test/persistence.test.ts',
  'test/simulator/processings.test.ts': 'packages/simulator/test/processings.test.ts',
  'test/simulator/rasters.test.ts': 'packages/simulator/test/rasters.test.ts',
  'test/simulator/shapes.test.ts': 'packages/simulator/test/shapes.test.ts',
  'test/simulator/uneven-progress.test.ts': 'packages/simulator/test/uneven-progress.test.ts',
  'test/simulator/upload-stream.test.ts': 'packages/simulator/test/upload-stream.test.ts',
  'test/integ/simulator-lambda.test.ts': 'packages/simulator/test/lambda.test.ts',
  // the simulator against a client written from the spec alone: a contract, beside client-vs-simulator
  'test/spec-client/spec-client.test.ts': 'test/contract/spec-client.test.ts',
  // bench/'s own logic (not a measurement)
  'test/perf/bench-disk.test.ts': 'packages/local/test/bench/bench-disk.test.ts',
  'test/perf/paired-ratio.test.ts': 'packages/local/test/bench/paired-ratio.test.ts',
  // audits of the source by reading it
  'test/perf/import-cycles.test.ts': 'test/architecture/import-cycles.test.ts',
  'test/local/test-timeouts.test.ts': 'test/architecture/test-timeouts.test.ts',
  'test/docs/self-contained.test.ts': 'test/architecture/self-contained.test.ts',
  // fixture generators bench/ and the tests share (bench/ imports nothing from test/); the one TIFF writer among them
  'test/fixtures/hostile/tiff-writer.ts': 'packages/bench/fixtures/tiff.ts',
  'test/fixtures/hostile/make-hostile.ts': 'packages/bench/fixtures/hostile.ts',
  'test/fixtures/hostile/round2.ts': 'packages/bench/fixtures/hostile-round2.ts',
  'bench/synthetic-geotiff.ts': 'packages/bench/fixtures/synthetic-geotiff.ts',
};

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
  'test/simulator/': 'packages/simulator/test/',
  'test/spec-client/': 'test/contract/',
};

/** Folder names in text (docs, scripts) that are gone, and what names their tests now. */
const DIR_MENTIONS: Readonly<Record<string, string>> = {
  'test/mapflow/': 'test/unit/functions/mapflow/',
  'test/simulator/': 'packages/simulator/test/',
  'test/local/': 'packages/local/test/',
  'test/console': 'test/e2e/console.test.ts',
};

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
 *  2. a test that starts a bridge (imports packages/local/src/bridge.ts or test/e2e/helpers.ts) goes to test/e2e/;
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
  if (targets.some((t) => t === 'packages/local/src/bridge.ts' || t === 'test/e2e/helpers.ts')) return `test/e2e/${base}`;
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
