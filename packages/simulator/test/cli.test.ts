/**
 * The command line: `mapflow-bridge sim` prints its base URL on one line once
 * it accepts requests, serves until SIGTERM, then exits cleanly; bad
 * arguments are refused with a clear message.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');

function runCli(args: string[]): ChildProcess {
  // process.execPath is the pinned Node (tests run through npx vitest).
  return spawn(process.execPath, ['packages/cli/bin/mapflow-bridge.mjs', 'sim', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
}

async function firstLine(child: ChildProcess): Promise<string> {
  const lines = createInterface({ input: child.stdout! });
  const [line] = (await once(lines, 'line')) as [string];
  return line;
}

async function finish(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}

describe('mapflow-bridge sim', () => {
  it('prints its URL on one line, serves the API, and exits 0 on SIGTERM', async () => {
    // Prepare
    const child = runCli(['--port', '0', '--token', 'cli-token', '--email', 'cli@example.com', '--processing-seconds', '2', '--seed', '3', '--real-shapes']);
    const exited = finish(child);
    try {
      // Act
      const url = await firstLine(child);
      const status = await fetch(`${url}/user/status`, { headers: { authorization: 'Bearer cli-token' } });
      const memory = await fetch(`${url}/rasters/memory`, { headers: { authorization: 'Bearer cli-token' } });
      child.kill('SIGTERM');
      const { code, stderr } = await exited;
      // Assess
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rest$/);
      expect(status.status).toBe(200);
      expect(await memory.json()).toHaveProperty('memoryLimit');
      expect(code).toBe(0);
      expect(stderr).not.toContain('cli-token');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it.each([
    [['--token', 't', '--email', 'a@b.c'], '--port is required'],
    [['--port', '0', '--email', 'a@b.c'], '--token is required'],
    [['--port', '0', '--token', 't', '--email', 'not-an-email'], '--email must be an e-mail address'],
    [['--port', 'x', '--token', 't', '--email', 'a@b.c'], '--port must be an integer'],
    [['--port', '0', '--token', 't', '--email', 'a@b.c', '--fault-rate', '2'], '--fault-rate must be a number from 0 to 1'],
    [['--port', '0', '--token', 't', '--email', 'a@b.c', '--drop-after-commit=-1'], '--drop-after-commit must be a number from 0 to 1'],
    [['--port', '0', '--token', 't', '--email', 'a@b.c', '--processing-seconds', 'soon'], '--processing-seconds must be'],
    [['--port', '0', '--token', 't', '--email', 'a@b.c', '--colour', 'blue'], "Unknown option '--colour'"],
  ])('refuses %j with exit code 2', async (args, expected) => {
    // Act
    const { code, stderr } = await finish(runCli(args));
    // Assess
    expect(code).toBe(2);
    expect(stderr).toContain(expected);
  });
});
