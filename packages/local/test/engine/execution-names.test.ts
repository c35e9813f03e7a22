/**
 * Execution names are kept as Step Functions keeps them (issue 37 point 4,
 * API_StartExecution: a name is taken for 90 days after its execution
 * closes, whatever its status): across a restart of the engine over the same
 * state folder, until 90 days have passed (an injected clock), and an
 * execution the bridge was running when it stopped resumes under its own
 * name, the continuation of the same execution.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { afterEach, describe, expect, it } from 'vitest';
import { startStepFunctionsEndpoint } from '../../src/assembly/services.ts';
import { LocalEngine } from '../../src/engine/engine.ts';
import { EXECUTION_NAMES_FILE, ExecutionNames, NAME_RETENTION_DAYS } from '../../src/engine/execution-names.ts';

const DAY_MS = 24 * 3_600_000;

/** Register Job waits on `gate` (when given), then the job succeeds, or fails when `fail` says so. */
function engineOver(file: string, options: { now?: () => Date; gate?: Promise<void>; fail?: boolean; seen?: unknown[] } = {}) {
  const definition = {
    StartAt: 'Register Job',
    States: {
      'Register Job': { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:000000000000:function:register-job', End: true },
    },
  };
  return new LocalEngine({
    definition,
    taskResources: {
      'Register Job': async (input) => {
        options.seen?.push(input);
        await options.gate;
        if (options.fail) throw new Error('boom');
        return { done: true };
      },
    },
    executionNames: new ExecutionNames({ file, ...(options.now ? { now: options.now } : {}) }),
  });
}

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function namesFile(): Promise<string> {
  dir = await mkdtemp(path.join(tmpdir(), 'execution-names-'));
  return path.join(dir, EXECUTION_NAMES_FILE);
}

describe('execution names kept 90 days after their execution closed', () => {
  it('refuses a succeeded name after a restart of the engine over the same state folder', async () => {
    // Prepare: job-1 succeeds, the engine stops
    const file = await namesFile();
    const first = engineOver(file);
    expect(await first.start('job-1', { jobId: 'job-1' })).toBe('started');
    expect((await first.waitFor('job-1'))?.status).toBe('SUCCEEDED');
    await first.close();

    // Act: a new engine over the same file
    const second = engineOver(file);
    const outcome = await second.start('job-1', { jobId: 'job-1' });

    // Assess: refused (ExecutionAlreadyExists on AWS), and DescribeExecution still answers
    expect(outcome).toBe('duplicate');
    expect(second.describe('job-1')).toMatchObject({ status: 'SUCCEEDED', arn: second.executionArn('job-1') });
    expect(second.resumeExecution('job-1').outcome).toBe('refused');
    await second.close();
  });

  it('refuses a failed name for 90 days after it closed, and takes it again after 91 (injected clock)', async () => {
    // Prepare: job-2 fails now (its close time is the execution's stop date, as DescribeExecution gives it)
    const file = await namesFile();
    let now = new Date();
    const clock = () => now;
    const first = engineOver(file, { now: clock, fail: true });
    await first.start('job-2', { jobId: 'job-2' });
    expect((await first.waitFor('job-2'))?.status).toBe('FAILED');
    await first.close();

    // Act / Assess: 89 days later, across a restart, still taken
    now = new Date(Date.now() + (NAME_RETENTION_DAYS - 1) * DAY_MS);
    const later = engineOver(file, { now: clock });
    expect(await later.start('job-2', { jobId: 'job-2' })).toBe('duplicate');
    await later.close();

    // Act / Assess: 91 days later, free again; the file no longer holds it
    now = new Date(Date.now() + (NAME_RETENTION_DAYS + 1) * DAY_MS);
    const much = engineOver(file, { now: clock });
    expect(await readFile(file, 'utf8')).not.toContain('"job-2"');
    expect(await much.start('job-2', { jobId: 'job-2' })).toBe('started');
    expect((await much.waitFor('job-2'))?.status).toBe('SUCCEEDED');
    await much.close();
  });

  it('resumes an execution the bridge stopped mid-way under its own name, start date and input; a new start of it is refused', async () => {
    // Prepare: job-3 runs when the engine closes (the bridge stopping: on AWS it would go on)
    const file = await namesFile();
    let release!: () => void;
    const first = engineOver(file, { gate: new Promise<void>((resolve) => (release = resolve)) });
    await first.start('job-3', { jobId: 'job-3', input: { key: 'inbox/a.geojson' } });
    const startedAt = first.describe('job-3')?.startedAt;
    const closing = first.close();
    release();
    await closing;
    const seen: unknown[] = [];
    const second = engineOver(file, { seen });

    // Act
    const started = await second.start('job-3', { jobId: 'job-3', input: { key: 'inbox/other.geojson' } });
    const stillRunning = second.describe('job-3')?.status;
    const resumed = second.resumeExecution('job-3');
    const again = second.resumeExecution('job-3');
    const never = second.resumeExecution('job-never-started');

    // Assess
    expect(started).toBe('duplicate');
    expect(stillRunning).toBe('RUNNING');
    expect(resumed.outcome).toBe('resumed');
    expect(resumed.execution?.startedAt).toBe(startedAt);
    expect(again.outcome).toBe('refused');
    expect(never.outcome).toBe('refused');
    expect((await second.waitFor('job-3'))?.status).toBe('SUCCEEDED');
    expect(seen).toEqual([{ jobId: 'job-3', input: { key: 'inbox/a.geojson' } }]);
    await second.close();
  });

  it('keeps the names of a run killed mid-write (a cut last line), and closes ABORTED the interrupted ones not resumed', async () => {
    // Prepare: a run killed while job-4 ran, its last line cut
    const file = await namesFile();
    let release!: () => void;
    const first = engineOver(file, { gate: new Promise<void>((resolve) => (release = resolve)) });
    await first.start('job-4', { jobId: 'job-4' });
    await writeFile(file, (await readFile(file, 'utf8')) + '{"name":"job-cut","sta', { flag: 'w' });
    const second = engineOver(file);

    // Act
    const abandoned = second.abandonInterrupted();

    // Assess
    expect(abandoned).toEqual(['job-4']);
    expect(second.describe('job-4')?.status).toBe('ABORTED');
    expect(second.resumeExecution('job-4').outcome).toBe('refused');
    expect(await second.start('job-4', { jobId: 'job-4' })).toBe('duplicate');
    expect(await second.start('job-cut', { jobId: 'job-cut' })).toBe('started');
    await second.close();
    const closing = first.close();
    release();
    await closing;
  });

  it('keeps its file bounded: compacted as it grows within a run, and pruned of names closed over 90 days ago when loaded', async () => {
    // Prepare
    const file = await namesFile();
    let now = new Date('2026-01-01T00:00:00Z');
    const names = new ExecutionNames({ file, now: () => now });

    // Act: 20 names started and closed 100 times each (4,000 changes), then a load 91 days later
    for (let round = 0; round < 100; round++) {
      for (let i = 0; i < 20; i++) {
        names.started(`job-${i}`, now.toISOString(), { i });
        names.closed(`job-${i}`, 'SUCCEEDED', now.toISOString());
      }
    }
    const linesInRun = (await readFile(file, 'utf8')).split('\n').filter(Boolean).length;
    const kept = names.get('job-3');
    now = new Date(now.getTime() + (NAME_RETENTION_DAYS + 1) * DAY_MS);
    const reloaded = new ExecutionNames({ file, now: () => now });

    // Assess: at most one compaction's worth of lines; nothing left after 91 days; a closed name keeps no input
    expect(linesInRun).toBeLessThanOrEqual(1_000);
    expect(kept).toEqual({ name: 'job-3', status: 'SUCCEEDED', startedAt: '2026-01-01T00:00:00.000Z', closedAt: '2026-01-01T00:00:00.000Z' });
    expect(reloaded.all()).toEqual([]);
    expect(await readFile(file, 'utf8')).toBe('');
  });

  it('answers StartExecution after a restart as AWS does: a closed name ExecutionAlreadyExists whatever the input, a running one its ARN for the same input', async () => {
    // Prepare: job-f failed and job-r was running when the first engine stopped
    const file = await namesFile();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = engineOver(file, { fail: true });
    await first.start('job-f', { n: 1 });
    await first.waitFor('job-f');
    const blocked = engineOver(file, { gate });
    await blocked.start('job-r', { n: 2 });
    const closing = blocked.close();
    release();
    await closing;
    await first.close();
    const second = engineOver(file, { gate: new Promise(() => undefined) });
    const endpoint = await startStepFunctionsEndpoint({ engine: second, taskTokens: second.taskTokens });
    const sfn = new SFNClient({ region: 'us-east-1', endpoint: endpoint.endpoint, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const start = (name: string, input: unknown) => sfn.send(new StartExecutionCommand({ stateMachineArn: second.stateMachineArn, name, input: JSON.stringify(input) })).then((answer) => answer.executionArn, (error: Error) => error.name);

    try {
      // Act
      const closedSame = await start('job-f', { n: 1 });
      const described = await sfn.send(new DescribeExecutionCommand({ executionArn: second.executionArn('job-f') }));
      const runningSame = await start('job-r', { n: 2 });
      const runningOther = await start('job-r', { n: 3 });

      // Assess
      expect(closedSame).toBe('ExecutionAlreadyExists');
      expect(described).toMatchObject({ name: 'job-f', status: 'FAILED' });
      expect(described.stopDate).toBeInstanceOf(Date);
      expect(runningSame).toBe(second.executionArn('job-r'));
      expect(runningOther).toBe('ExecutionAlreadyExists');
    } finally {
      await endpoint.close();
    }
  });
});
