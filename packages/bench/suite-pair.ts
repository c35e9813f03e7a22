/**
 * The whole test suite of two commits, on clean clones, in pairs: how long
 * `CI=true bash .ci/run` (the README's `npm ci && npm test`) takes for a
 * candidate against a baseline, vitest's own Duration as the figure. This
 * machine's speed drifts by a quarter within the hour, so a single run of
 * the suite compared with one taken earlier says more about the hour than
 * about the tree; runs alternate (baseline first in odd pairs, the
 * candidate first in even ones) and the ratio is taken pair by pair.
 *
 *   node --import tsx packages/bench/suite-pair.ts --baseline <commit> [--candidate HEAD] [--pairs 2] [--logs <dir>]
 *
 * Each run takes as long as the suite (about ten minutes here); its whole
 * output goes to a log file, only the summary lines are read back.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs, stripVTControlCharacters } from 'node:util';
import { pairedRatio } from './paired.ts';

const REPOSITORY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** What one run of the suite printed that matters here. */
export interface SuiteFigures {
  /** vitest's `Duration`, in seconds (undefined when vitest printed none). */
  vitestSeconds?: number;
  /** vitest's `Tests` line: passed and failed counts. */
  passed?: number;
  failed?: number;
}

/** Reads vitest's closing summary from one line of its output (colours and all); undefined for any other line. */
export function summaryFigures(line: string): SuiteFigures | undefined {
  const plain = stripVTControlCharacters(line).trim();
  const duration = /^Duration\s+([\d.]+)(ms|s)\b/.exec(plain);
  if (duration) return { vitestSeconds: Number(duration[1]) / (duration[2] === 'ms' ? 1000 : 1) };
  const tests = /^Tests\s+(.*)$/.exec(plain);
  if (tests) {
    const count = (word: string) => Number(new RegExp(`(\\d+) ${word}`).exec(tests[1]!)?.[1] ?? 0);
    return { passed: count('passed'), failed: count('failed') };
  }
  return undefined;
}

/** `CI=true bash .ci/run` on a clean clone of `commit`: its figures, the wall seconds, the log's path. */
async function runSuite(commit: string, logs: string, label: string): Promise<SuiteFigures & { wallSeconds: number; exitCode: number | null; log: string }> {
  const work = mkdtempSync(path.join(tmpdir(), 'mfb-suite-pair-'));
  const log = path.join(logs, `${label}-${commit.slice(0, 12)}.log`);
  try {
    const clone = spawnSync('git', ['clone', '--quiet', '--no-checkout', REPOSITORY, work], { stdio: 'inherit' });
    const checkout = spawnSync('git', ['-C', work, 'checkout', '--quiet', commit], { stdio: 'inherit' });
    if (clone.status !== 0 || checkout.status !== 0) throw new Error(`could not check out ${commit} from ${REPOSITORY}`);
    const out = createWriteStream(log);
    const started = performance.now();
    const child = spawn('bash', ['.ci/run'], { cwd: work, env: { ...process.env, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const wallSeconds = (performance.now() - started) / 1000;
    await new Promise<void>((resolve) => out.end(resolve));
    const figures: SuiteFigures = {};
    for await (const line of createInterface({ input: createReadStream(log) })) Object.assign(figures, summaryFigures(line));
    return { ...figures, wallSeconds, exitCode, log };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export async function benchSuitePair(options: { baseline: string; candidate: string; pairs: number; logs: string; log?: (line: string) => void }): Promise<void> {
  const log = options.log ?? console.log;
  const resolve = (ref: string) => spawnSync('git', ['-C', REPOSITORY, 'rev-parse', '--verify', `${ref}^{commit}`], { encoding: 'utf8' }).stdout.trim();
  const baseline = resolve(options.baseline);
  const candidate = resolve(options.candidate);
  if (!baseline || !candidate) throw new Error(`not a commit of ${REPOSITORY}: ${!baseline ? options.baseline : options.candidate}`);
  const ratios: number[] = [];
  const describe = (run: Awaited<ReturnType<typeof runSuite>>) =>
    `${run.vitestSeconds?.toFixed(1) ?? '?'} s of vitest (${run.passed ?? '?'} passed, ${run.failed ?? '?'} failed, the whole run ${run.wallSeconds.toFixed(1)} s, exit ${run.exitCode})`;
  for (let pair = 1; pair <= options.pairs; pair++) {
    // Alternate which goes first, so that a machine growing busier or quieter favours neither.
    const order = pair % 2 === 1 ? [baseline, candidate] : [candidate, baseline];
    const runs = new Map<string, Awaited<ReturnType<typeof runSuite>>>();
    for (const commit of order) runs.set(commit, await runSuite(commit, options.logs, `pair${pair}-${commit === baseline ? 'baseline' : 'candidate'}`));
    const before = runs.get(baseline)!;
    const after = runs.get(candidate)!;
    log(`pair ${pair}: candidate ${candidate.slice(0, 7)} ${describe(after)}; baseline ${baseline.slice(0, 7)} ${describe(before)}`);
    if (after.vitestSeconds !== undefined && before.vitestSeconds !== undefined) {
      ratios.push(after.vitestSeconds / before.vitestSeconds);
      log(`pair ${pair}: ${(after.vitestSeconds / before.vitestSeconds).toFixed(3)}x the baseline's vitest time`);
    }
  }
  const { ratio, low, high, pairs } = pairedRatio(ratios, 1);
  log(`candidate ${candidate.slice(0, 7)} against baseline ${baseline.slice(0, 7)}, ${pairs} pairs: ${ratio.toFixed(3)}x the baseline's vitest time (95% interval ${low.toFixed(3)}-${high.toFixed(3)}); logs in ${options.logs}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { baseline: { type: 'string' }, candidate: { type: 'string', default: 'HEAD' }, pairs: { type: 'string', default: '2' }, logs: { type: 'string' } } });
  if (!values.baseline) {
    console.error('usage: node --import tsx packages/bench/suite-pair.ts --baseline <commit> [--candidate HEAD] [--pairs 2] [--logs <dir>]');
    process.exit(2);
  }
  const logs = values.logs ?? mkdtempSync(path.join(tmpdir(), 'mfb-suite-pair-logs-'));
  await benchSuitePair({ baseline: values.baseline, candidate: values.candidate, pairs: Number(values.pairs), logs });
}
