import { describe, expect, it } from 'vitest';
import { formatError, progressBar, table } from '../src/format.ts';
import { javaMajorVersion } from '../src/java.ts';
import { checkNode } from '../src/preflight.ts';
import { formatJob, formatList } from '../src/jobs.ts';
import { runLocalCommand, summarise } from '../src/run.ts';
import { runStartCommand } from '../src/start.ts';
import { runJobsCommand } from '../src/jobs.ts';
import { describeParseError } from '../src/args.ts';
import { runCostsCommand } from '../src/costs.ts';
import { runDoctorCommand } from '../src/doctor.ts';
import { runConsoleCommand } from '../src/console/command.ts';
import { ledgerRow } from '../../../test/support/ledger-row.ts';

/** A job of the 'buildings' route that Mapflow failed. */
const row = ledgerRow({
  input: { ...ledgerRow().input, key: 'inbox/buildings/area.geojson' },
  routeName: 'buildings',
  status: 'FAILED',
  statusHistory: [...ledgerRow().statusHistory, { status: 'FAILED', at: '2025-01-01T00:10:00.000Z', note: 'PROCESSING_FAILED' }],
  processingId: 'p-1', estimatedCost: 2.5, actualCost: 2,
  error: { code: 'PROCESSING_FAILED', message: 'PROCESSING_FAILED: Mapflow could not read the imagery.' },
  reportKey: 'failed/buildings/area.geojson/report.json',
});

/** Runs the commands one after the other with console.error captured: their exit codes and what they printed there. */
async function usageErrors(commands: (() => Promise<number>)[]): Promise<{ codes: number[]; errors: string[] }> {
  const errors: string[] = [];
  const original = console.error;
  console.error = (message: string) => errors.push(message);
  const codes: number[] = [];
  try {
    for (const command of commands) codes.push(await command());
  } finally {
    console.error = original;
  }
  return { codes, errors };
}

describe('local command helpers', () => {
  it('draws a progress bar clamped to 0..100', () => {
    expect(progressBar(0, 10)).toBe('[----------]   0%');
    expect(progressBar(45, 10)).toBe('[#####-----]  45%');
    expect(progressBar(140, 10)).toBe('[##########] 100%');
  });

  it('reads the Java major version of old and new version strings', () => {
    expect(javaMajorVersion('openjdk version "17.0.15" 2025-04-15')).toBe(17);
    expect(javaMajorVersion('java version "1.8.0_392"')).toBe(8);
    expect(javaMajorVersion('openjdk version "21" 2023-09-19')).toBe(21);
    expect(javaMajorVersion('no java here')).toBeUndefined();
  });

  it('refuses Node below 22 with a message that says what to do', () => {
    expect(checkNode('24.1.0')).toEqual({ ok: true });
    const old = checkNode('20.11.1');
    expect(old.ok).toBe(false);
    expect(old.ok ? '' : old.message).toContain('Node.js 22');
  });

  it('formats errors without repeating the code, and aligns tables', () => {
    expect(formatError(row.error)).toBe('PROCESSING_FAILED: Mapflow could not read the imagery.');
    expect(table([['A', 'BB'], ['ccc', 'd']])).toBe('A    BB\nccc  d');
  });

  it('lists and shows ledger rows', () => {
    expect(formatList([])).toBe('No jobs.');
    expect(formatList([row])).toContain('buildings/area.geojson');
    const shown = formatJob(row);
    expect(shown).toContain('processing  p-1');
    expect(shown).toContain('report      s3://drop/failed/buildings/area.geojson/report.json');
    expect(shown).toContain('2025-01-01T00:10:00.000Z  FAILED  PROCESSING_FAILED');
  });

  it('summarises a final row, and an unfinished one as FAILED with the execution error', () => {
    // Act
    const final = summarise('/x/area.geojson', row.jobId, 'geojson', row, { results: [], report: '/out/report.json' });
    const unfinished = summarise('/x/area.geojson', row.jobId, 'geojson', { ...row, status: 'IN_PROGRESS' }, { results: [] }, {
      Error: 'States.Timeout',
      Cause: 'task timed out',
    });
    // Assess
    expect(final).toMatchObject({ status: 'FAILED', processingId: 'p-1', cost: 2, report: '/out/report.json', error: { code: 'PROCESSING_FAILED' } });
    expect(unfinished.status).toBe('FAILED');
    expect(unfinished.error?.code).toBe('NOT_FINISHED');
    expect(unfinished.error?.message).toContain('States.Timeout');
  });

  it('answers usage errors with exit code 2 before starting anything', async () => {
    // Act
    const { codes, errors } = await usageErrors([
      () => runLocalCommand(['run', '--processing-seconds', 'soon', 'a.geojson']),
      () => runLocalCommand(['run', '--mapflow-url', 'http://127.0.0.1:1/rest', 'a.geojson']),
      () => runLocalCommand(['run', '--bogus']),
      () => runLocalCommand(['walk']),
      () => runLocalCommand(['run', '--mapflow-wait', '5', 'a.geojson']),
      () => runStartCommand(['--mapflow-url', 'http://127.0.0.1:1/rest', '--token', 't', '--mapflow-wait', '0']),
      () => runLocalCommand(['run', '--ledger-table', 'mine', 'a.geojson']),
      () => runStartCommand(['--dynamodb-endpoint', 'http://127.0.0.1:1', '--ledger-table', 'a/b']),
    ]);
    // Assess
    expect(codes).toEqual([2, 2, 2, 2, 2, 2, 2, 2]);
    expect(errors.join('\n')).toMatch(/--processing-seconds must be a positive number/);
    expect(errors.join('\n')).toMatch(/--mapflow-url needs --token/);
    expect(errors.join('\n')).toMatch(/--mapflow-wait goes with --mapflow-url/);
    expect(errors.join('\n')).toMatch(/--mapflow-wait must be a positive number, not '0'/);
    expect(errors.join('\n')).toMatch(/--ledger-table goes with --dynamodb-endpoint/);
    expect(errors.join('\n')).toMatch(/--ledger-table: 'a\/b' is not a DynamoDB table name/);
  });

  it('answers a bad flag with the project\'s own one-line message and exit 2, not Node\'s parser text', async () => {
    // Act
    const { codes, errors } = await usageErrors([
      () => runStartCommand(['--bogus']),
      () => runStartCommand(['--s3-port']),
      () => runStartCommand(['--s3-port', 'ninety']),
      () => runLocalCommand(['run', '--bogus', 'a.geojson']),
      () => runLocalCommand(['run', '--json=yes', 'a.geojson']),
      () => runJobsCommand(['list', '--bogus']),
    ]);
    // Assess
    expect(codes).toEqual([2, 2, 2, 2, 2, 2]);
    expect(errors).toEqual([
      "mapflow-bridge start: unknown option --bogus. Run 'mapflow-bridge start --help' for the options.",
      "mapflow-bridge start: --s3-port needs a value. Run 'mapflow-bridge start --help' for the options.",
      "mapflow-bridge start: --s3-port must be a whole number from 0 to 65535, not 'ninety'. Run 'mapflow-bridge start --help' for the options.",
      "mapflow-bridge local run: unknown option --bogus. Run 'mapflow-bridge local run --help' for the options.",
      "mapflow-bridge local run: --json takes no value. Run 'mapflow-bridge local run --help' for the options.",
      "mapflow-bridge jobs: unknown option --bogus. Run 'mapflow-bridge jobs --help' for the options.",
    ]);
  });

  it('answers usage errors of costs, console, jobs and doctor with the same one line and exit 2, before reading any ledger', async () => {
    // Act
    const { codes, errors } = await usageErrors([
      () => runCostsCommand(['--bogus']),
      () => runCostsCommand(['--by', 'week']),
      () => runConsoleCommand(['--port', 'x']),
      () => runConsoleCommand(['--table']),
      () => runJobsCommand(['show']),
      () => runJobsCommand(['walk']),
      () => runDoctorCommand(['--local', '--region', 'eu-west-1']),
    ]);
    // Assess
    expect(codes).toEqual([2, 2, 2, 2, 2, 2, 2]);
    expect(errors).toEqual([
      "mapflow-bridge costs: unknown option --bogus. Run 'mapflow-bridge costs --help' for the options.",
      "mapflow-bridge costs: --by must be one of day, route, model. Run 'mapflow-bridge costs --help' for the options.",
      "mapflow-bridge console: --port must be a whole number from 0 to 65535, not 'x'. Run 'mapflow-bridge console --help' for the options.",
      "mapflow-bridge console: --table needs a value. Run 'mapflow-bridge console --help' for the options.",
      "mapflow-bridge jobs: show takes one job id (or a unique prefix of it, or the file's name). Run 'mapflow-bridge jobs --help' for the options.",
      "mapflow-bridge jobs: unknown subcommand 'walk'. Run 'mapflow-bridge jobs --help' for the options.",
      "mapflow-bridge doctor: --region only applies with --stack. Run 'mapflow-bridge doctor --help' for the options.",
    ]);
  });

  it('says what a value that looks like an option needs', () => {
    const error = Object.assign(new Error("Option '--token' argument is ambiguous.\nDid you forget to specify the option argument for '--token'?"), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
    expect(describeParseError(error)).toBe("--token needs a value (one that starts with '-' is written --token=<value>)");
  });

  it('words every parseArgs error itself', () => {
    const error = (code: string, message: string) => Object.assign(new Error(message), { code });
    expect(describeParseError(error('ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL', "Unexpected argument 'x'. This command does not take positional arguments"))).toBe(
      "unexpected argument 'x'",
    );
    expect(describeParseError(error('ERR_PARSE_ARGS_INVALID_OPTION_VALUE', "Option '--out <value>' argument missing"))).toBe('--out needs a value');
  });
});
