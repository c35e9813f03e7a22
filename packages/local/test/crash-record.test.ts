/**
 * The crash record (issue 39, point 1): a bridge that dies of an error no code
 * caught writes, as it dies, which jobs had an input-decoding step running; a
 * process killed from outside writes nothing. The next start reads it once.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CRASH_RECORD_FILE, takeCrashRecord } from '../src/crash-resumes.ts';
import { testTmp } from '../../../test/support/temp.ts';

const MODULE = fileURLToPath(new URL('../src/crash-resumes.ts', import.meta.url));
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A Node process that records crashes for job-1, then either throws or sleeps (to be killed). */
async function dyingProcess(stateDir: string, how: 'throw' | 'sleep'): Promise<ReturnType<typeof spawn>> {
  const script = `
    const { recordCrashes } = await import(${JSON.stringify(MODULE)});
    recordCrashes(${JSON.stringify(stateDir)}, () => ['job-1']);
    ${how === 'throw' ? "setTimeout(() => { throw new RangeError('Invalid typed array length' + String.fromCharCode(10) + 'at a stack line'); }, 10);" : "console.log('ready'); setInterval(() => {}, 1000);"}
  `;
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
}

describe('the crash record', () => {
  it('is written by a process that dies of an uncaught error, with the jobs mid-step and the error in one line', async () => {
    // Prepare
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-crash-'));
    dirs.push(stateDir);

    // Act
    const child = await dyingProcess(stateDir, 'throw');
    const [code] = (await once(child, 'exit')) as [number | null];
    const record = takeCrashRecord(stateDir);

    // Assess: the process still died as it would have; the record is read once
    expect(code).not.toBe(0);
    expect(record).toMatchObject({ jobs: ['job-1'], reason: 'RangeError: Invalid typed array length' });
    expect(existsSync(path.join(stateDir, CRASH_RECORD_FILE))).toBe(false);
    expect(takeCrashRecord(stateDir)).toBeUndefined();
  });

  it('is not written by a process killed from outside (kill -9)', async () => {
    // Prepare
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-crash-'));
    dirs.push(stateDir);
    const child = await dyingProcess(stateDir, 'sleep');
    await once(child.stdout!, 'data');

    // Act
    child.kill('SIGKILL');
    await once(child, 'exit');

    // Assess
    expect(takeCrashRecord(stateDir)).toBeUndefined();
  });
});
