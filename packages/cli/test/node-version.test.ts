/**
 * The command runs on Node 24, as the functions do on nodejs24.x (issue 37 point 10): started by another
 * Node (a system Node 20 running the bin file directly), it runs itself again on the project's `node`
 * devDependency. Local mode's functions run in its worker threads, so they meet the Node they meet on AWS.
 */
import { execFile } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../bin/mapflow-bridge.mjs', import.meta.url));

/** A Node on PATH other than the project's own and of another major version (the machine's system Node). */
async function otherNode(): Promise<string | undefined> {
  const candidates = (process.env.PATH ?? '').split(path.delimiter).filter((dir) => !dir.includes('node_modules')).map((dir) => path.join(dir, 'node'));
  for (const candidate of [...candidates, '/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate) || realpathSync(candidate) === realpathSync(process.execPath)) continue;
    const { stdout } = await run(candidate, ['--version']).catch(() => ({ stdout: '' }));
    if (stdout.trim() && !stdout.startsWith('v24.')) return candidate;
  }
  return undefined;
}

const other = await otherNode();

describe('the Node that runs the command', () => {
  it('is the pinned Node 24 under the test run (npm puts it first on PATH)', async () => {
    // Act
    const { stdout } = await run(process.execPath, [BIN, '--version']);
    // Assess
    expect(stdout).toMatch(/^mapflow-bridge \d+\.\d+\.\d+ \(Node\.js v24\./);
  });

  it.skipIf(!other)(`started by another Node (${other ?? 'none on this machine'}), the command runs itself again on Node 24`, async () => {
    // Act
    const { stdout: reexecuted } = await run(other!, [BIN, '--version']);
    const { stdout: asked } = await run(other!, [BIN, '--version'], { env: { ...process.env, MAPFLOW_BRIDGE_NODE_REEXEC: 'off' } });
    // Assess: on Node 24 though started by the other, which (asked not to) reports itself
    expect(reexecuted).toMatch(/\(Node\.js v24\./);
    expect(asked).not.toMatch(/\(Node\.js v24\./);
  });
});
