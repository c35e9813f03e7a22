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
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('../src/main.ts');
  process.exitCode = await main(process.argv.slice(2));
}
