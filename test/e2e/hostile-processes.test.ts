/**
 * Issue 11: the local services do not outlive the bridge and do not listen
 * beyond loopback; `local run` leaves no temporary state behind unless asked.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, squareAoi } from './helpers.ts';
import { testTmp } from '../support/temp.ts';

const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

/** Resolves with the first line of `stream` that matches. */
function lineMatching(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const match = pattern.exec(buffer);
      if (match) {
        child[stream]!.off('data', onData);
        resolve(match);
      }
    };
    child[stream]!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited (${code}) before printing ${pattern}: ${buffer.slice(-2000)}`)));
  });
}

/** Every descendant pid of `pid`, from /proc. */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // the process ended meanwhile
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, ppid] of parents) if (ppid === parent) (found.push(child), queue.push(child));
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return state.slice(state.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function until(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Local addresses listening on `port` (from /proc/net/tcp and tcp6), as hex as the kernel writes them. */
function listeners(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A')
      .map((fields) => fields[1]!.split(':')[0]!),
  );
}
const LOOPBACK = new Set(['0100007F', '0000000000000000FFFF00000100007F', '00000000000000000000000001000000']);

describe('local processes', () => {
  it('DynamoDB Local listens on 127.0.0.1 only, and every child exits when the bridge is killed with -9', { timeout: 400_000 }, async () => {
    // Prepare: a bridge in its own process, as `npm start` runs it
    const script = path.join(await mkdtemp(path.join(testTmp(), 'mfb-kill9-')), 'bridge.mts');
    await writeFile(
      script,
      `import { startLocalBridge } from ${JSON.stringify(path.join(ROOT, 'packages/local/src/bridge.ts'))};\n` +
        `const bridge = await startLocalBridge({ dropFolder: false, reconcileIntervalMs: 0, log: () => undefined });\n` +
        `console.log('READY ' + JSON.stringify(bridge.endpoints));\n` +
        `setInterval(() => undefined, 60_000);\n`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const [, endpoints] = await lineMatching(child, 'stdout', /READY (\{.*\})\n/);
    const dynamodbPort = Number(new URL((JSON.parse(endpoints!) as { dynamodb: string }).dynamodb).port);
    const children = descendants(child.pid!);

    // Act
    const bound = listeners(dynamodbPort);
    child.kill('SIGKILL');
    await until(() => children.every((pid) => !alive(pid)), `children ${children.join(', ')} to exit`);

    // Assess
    expect(children.length).toBeGreaterThanOrEqual(2); // the JVM and the s3rver process
    expect(bound.length).toBeGreaterThan(0);
    expect(bound.filter((address) => !LOOPBACK.has(address))).toEqual([]);
    expect(children.filter(alive)).toEqual([]);
  });

  it('local run removes its temporary state when stopped with SIGTERM, and keeps it with --keep-state', { timeout: 600_000 }, async () => {
    // Prepare: a private temporary folder, to see what a run leaves in it
    const tmp = await mkdtemp(path.join(testTmp(), 'mfb-tmp-'));
    const aoi = path.join(tmp, 'area.geojson');
    await writeFile(aoi, squareAoi());
    const env = { ...process.env, TMPDIR: tmp };
    const stateFolders = () => readdirSync(tmp).filter((name) => name.startsWith('mapflow-bridge-') && !name.startsWith('mapflow-bridge-ddb-launcher-'));

    // Act: stopped while its job runs
    const stopped = spawn(process.execPath, [CLI, 'local', 'run', '--processing-seconds', '600', '--out', path.join(tmp, 'out'), aoi], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    await lineMatching(stopped, 'stderr', /dropped area\.geojson/);
    const during = stateFolders();
    const services = descendants(stopped.pid!);
    stopped.kill('SIGTERM');
    const stoppedCode = await new Promise<number | null>((resolve) => stopped.once('exit', (code) => resolve(code)));
    const after = stateFolders();
    await until(() => services.every((pid) => !alive(pid)), `the services of the stopped run (${services.join(', ')}) to exit`);

    // Act: kept on request
    const kept = spawn(process.execPath, [CLI, 'local', 'run', '--keep-state', '--processing-seconds', '1', '--out', path.join(tmp, 'out'), aoi], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const [, keptDir] = await lineMatching(kept, 'stderr', /state kept in (\S+)/);
    await new Promise((resolve) => kept.once('exit', resolve));

    // Assess
    expect(during).toHaveLength(1);
    expect(stoppedCode).toBe(143);
    expect(services.length).toBeGreaterThanOrEqual(2); // DynamoDB Local's JVM and the s3rver process
    expect(services.filter(alive)).toEqual([]);
    expect(after).toEqual([]);
    expect(existsSync(path.join(keptDir!, 'events.jsonl'))).toBe(true);
    expect(stateFolders()).toEqual([path.basename(keptDir!)]);
  });
});
