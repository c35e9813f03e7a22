#!/usr/bin/env node
// Command-line entry: loads the TypeScript CLI through tsx so that
// `npx mapflow-bridge <command>` works straight after `npm ci`, no build step.
//
// The functions deploy on nodejs24.x, and local mode runs most of them in
// worker threads of this process: on another Node (a system Node 20 running
// this file directly), the command runs itself again on the Node 24 of the
// project's `node` devDependency, when it is installed, so that the
// functions meet locally the Node they meet on AWS. npm scripts and npx
// already put that Node first on PATH.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';

const LAMBDA_NODE_MAJOR = 24;

/** The `node` package's binary, if it is installed and is not the Node running now. */
function projectNode() {
  if (process.versions.node.split('.')[0] === String(LAMBDA_NODE_MAJOR) || process.env.MAPFLOW_BRIDGE_NODE_REEXEC === 'off') return undefined;
  try {
    const dir = path.dirname(createRequire(import.meta.url).resolve('node/package.json'));
    return [path.join(dir, 'bin', 'node'), path.join(dir, 'bin', 'node.exe')].find((file) => existsSync(file));
  } catch {
    return undefined;
  }
}

const node = projectNode();
if (node) {
  const child = spawn(node, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    // Once only: the child is Node 24, and would not come back here anyway.
    env: { ...process.env, MAPFLOW_BRIDGE_NODE_REEXEC: 'off' },
  });
  // Ctrl-C reaches the child from the terminal (same process group): this process only waits for it.
  // A signal sent to this process alone (kill <pid>, a supervisor) is passed on.
  process.on('SIGINT', () => undefined);
  for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
} else {
  // This process is the bridge (local mode embeds its engine, the simulator and the light steps' threads):
  // its own young generation stays near V8's first size, two semi-spaces of 1 MiB (a page or a few more now and then), instead of growing to
  // 2 x 32 MiB and staying there. Those 64 MiB and the dead Buffers that
  // waited a scavenge in them were the bridge's largest slack: on the hostile corpus its peak went from
  // 485-527 MB to 366-410 MB, for about 10% more CPU in this process (docs/local.md, "Memory by process").
  // The flag is read when the new space would grow, so setting it now holds; the functions' processes are
  // started with flags of their own, and their threads have a young generation of their own (resourceLimits).
  setFlagsFromString('--semi-space-growth-factor=1');
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('../src/main.ts');
  process.exitCode = await main(process.argv.slice(2));
}
