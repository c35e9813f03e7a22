/**
 * The services' supervisor (packages/local/src/supervisor.ts): a real child
 * process stands in for DynamoDB Local or s3rver. Its death is named in one
 * line and it is started again; past the bound on restarts, or when a
 * restart fails, the bridge is told to stop, with the command to run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { supervise, type ServiceExitInfo } from '../src/supervisor.ts';

/** A child that sleeps until killed, as a service runs until it is stopped. */
function sleeper(onExit: (exit: ServiceExitInfo) => void): Promise<{ child: ChildProcess; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  let closing = false;
  child.once('exit', (code, signal) => {
    if (!closing) onExit({ pid: child.pid, code, signal });
  });
  return new Promise((resolve, reject) => {
    child.once('spawn', () =>
      resolve({
        child,
        close: async () => {
          closing = true;
          if (child.exitCode !== null || child.signalCode !== null) return;
          const gone = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await gone;
        },
      }),
    );
    child.once('error', reject);
  });
}

describe('supervise', () => {
  it('names a killed service in one line, starts it again and says when it is back', async () => {
    // Prepare
    const lines: string[] = [];
    let back!: () => void;
    const isBack = new Promise<void>((resolve) => (back = resolve));
    const supervised = await supervise({
      name: 'the test service',
      where: (s) => `pid ${s.child.pid}`,
      start: sleeper,
      log: (line) => {
        lines.push(line);
        if (/is back/.test(line)) back();
      },
      onGiveUp: (message) => lines.push(`GAVE UP ${message}`),
    });
    const first = supervised.current().child.pid;
    try {
      // Act
      process.kill(first!, 'SIGKILL');
      await isBack;
      // Assess
      expect(lines[0]).toMatch(new RegExp(`^local bridge: the test service \\(pid ${first}\\) killed by SIGKILL; jobs wait while it restarts on the same state \\(pid ${first}\\), attempt 1 of 3$`));
      expect(lines[1]).toMatch(/^local bridge: the test service is back \(pid \d+\) after [\d.]+ s; jobs go on$/);
      expect(supervised.current().child.pid).not.toBe(first);
      expect(supervised.restarts).toBe(1);
      expect(supervised.down()).toBe(false);
    } finally {
      await supervised.close();
    }
  });

  it('past its bound on restarts, tells the bridge to stop and names the command to run', async () => {
    // Prepare: one restart allowed
    const lines: string[] = [];
    let gaveUp!: (message: string) => void;
    const givenUp = new Promise<string>((resolve) => (gaveUp = resolve));
    let back!: () => void;
    const isBack = new Promise<void>((resolve) => (back = resolve));
    const supervised = await supervise({
      name: 'the test service',
      where: () => 'here',
      start: sleeper,
      log: (line) => {
        lines.push(line);
        if (/is back/.test(line)) back();
      },
      onGiveUp: gaveUp,
      maxRestarts: 1,
      restartCommand: 'npx mapflow-bridge start --state-dir ./state',
    });
    try {
      // Act: killed twice
      process.kill(supervised.current().child.pid!, 'SIGKILL');
      await isBack;
      const second = supervised.current().child.pid!;
      process.kill(second, 'SIGKILL');
      const message = await givenUp;
      // Assess
      expect(message).toBe(
        `local bridge: the test service (pid ${second}) killed by SIGKILL: 2 deaths within 10 minutes, so it is not restarted again; stopping the bridge. ` +
          'Run `npx mapflow-bridge start --state-dir ./state` to start again: jobs in flight resume where they stopped.',
      );
      expect(supervised.down()).toBe(true);
      expect(supervised.restarts).toBe(1);
    } finally {
      await supervised.close();
    }
  });

  it('a restart that fails tells the bridge to stop, with the reason', async () => {
    // Prepare: the second start fails (its port taken, say)
    let starts = 0;
    let gaveUp!: (message: string) => void;
    const givenUp = new Promise<string>((resolve) => (gaveUp = resolve));
    const supervised = await supervise({
      name: 'the test service',
      where: () => 'here',
      start: (onExit) => (++starts === 1 ? sleeper(onExit) : Promise.reject(new Error('port 4568 is taken'))),
      log: () => undefined,
      onGiveUp: gaveUp,
      restartCommand: 'npx mapflow-bridge start --state-dir ./state',
    });
    const pid = supervised.current().child.pid!;
    // Act
    process.kill(pid, 'SIGKILL');
    const message = await givenUp;
    // Assess
    expect(message).toBe(
      `local bridge: the test service killed by SIGKILL and did not start again: port 4568 is taken; stopping the bridge. ` +
        'Run `npx mapflow-bridge start --state-dir ./state` to start again: jobs in flight resume where they stopped.',
    );
    await supervised.close();
  });
});
