/**
 * Issue 23, done when: "`npm start` survives each of them with its other
 * jobs finishing", and "keep every state's output small whatever the input".
 * One long-running bridge in its own process, started as `mapflow-bridge
 * start` starts it (startLocalBridge with a state folder, prewarmed
 * functions, its own DynamoDB Local, the drop folder), gets the second
 * round's corpus (the first round's runs through local run in
 * hostile.test.ts) and two legitimate files copied into its drop folder at once:
 * every hostile file ends REJECTED with its code, the legitimate ones
 * SUCCEED, the bridge process never exits, and no state of any execution
 * outputs more than a quarter of Step Functions' 256 KiB.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STATE_PAYLOAD_LIMIT_BYTES } from '../../packages/local/src/engine/lambda.ts';
import type { HostileEntry } from '../../packages/bench/fixtures/hostile.ts';
import { writeRound2Corpus } from '../../packages/bench/fixtures/hostile-round2.ts';
import { sampleTreeRss } from '../support/rss.ts';
import { testTmp } from '../support/temp.ts';
import { ROOT, SAMPLES, squareAoi } from './helpers.ts';

interface Final {
  key: string;
  status: string;
  code: string | null;
}

/** Collects the bridge's stdout lines of one kind (`FINAL {...}`) as they come. */
function linesOf(child: ChildProcess): { wait(prefix: string, count: number): Promise<string[]>; text(): string } {
  let buffer = '';
  const waiters: (() => void)[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (const waiter of waiters.splice(0)) waiter();
  });
  const matching = (prefix: string) => buffer.split('\n').filter((line) => line.startsWith(`${prefix} `)).map((line) => line.slice(prefix.length + 1));
  return {
    text: () => buffer,
    wait: (prefix, count) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = matching(prefix);
          if (found.length >= count) resolve(found);
          else if (child.exitCode !== null || child.signalCode !== null) reject(new Error(`the bridge exited (${child.exitCode ?? child.signalCode}) with ${found.length} of ${count} ${prefix} lines`));
          else waiters.push(check);
        };
        child.once('exit', check);
        check();
      }),
  };
}

describe('a long-running bridge (npm start) given the second hostile corpus', () => {
  it('rejects every hostile file with its code, finishes the legitimate ones, stays alive, and keeps every state output small', { timeout: 1_500_000 }, async () => {
    // Prepare: both corpora and two legitimate files (a GeoJSON square, a small COG)
    const base = await mkdtemp(path.join(testTmp(), 'mfb-hostile-start-'));
    const corpus = path.join(base, 'corpus');
    const stateDir = path.join(base, 'state');
    await mkdir(stateDir);
    // The second round: the files of issue 23, which took a bridge down (the first round's go through local run in
    // hostile.test.ts; here they only cost minutes of the suite).
    const entries: HostileEntry[] = await writeRound2Corpus(corpus);
    const legitimate = ['good-square.geojson', 'good-cog.tif'];
    await writeFile(path.join(corpus, legitimate[0]!), squareAoi());
    await copyFile(path.join(SAMPLES, 'cogeo.tif'), path.join(corpus, legitimate[1]!));
    const script = path.join(base, 'bridge.mts');
    await writeFile(
      script,
      `import { startLocalBridge } from ${JSON.stringify(path.join(ROOT, 'packages/local/src/bridge.ts'))};\n` +
        `const largest = {};\n` +
        `const bridge = await startLocalBridge({\n` +
        `  stateDir: ${JSON.stringify(stateDir)}, command: 'mapflow-bridge start', prewarm: true,\n` +
        `  simulator: { processingSeconds: 1 }, dropStableMs: 300, log: () => undefined,\n` +
        `  onEvent: (event) => { const d = event.detail; if (['SUCCEEDED', 'FAILED', 'REJECTED'].includes(d.status)) console.log('FINAL ' + JSON.stringify({ key: d.input.key, status: d.status, code: d.error?.code ?? null })); },\n` +
        `  onStateOutput: ({ execution, state, bytes }) => { if (bytes > (largest[state]?.bytes ?? 0)) largest[state] = { bytes, execution }; },\n` +
        `});\n` +
        `console.log('READY ' + JSON.stringify({ dropDir: bridge.dropDir }));\n` +
        `process.stdin.on('data', () => console.log('OUTPUTS ' + JSON.stringify(largest)));\n` +
        `process.on('SIGTERM', () => void bridge.close().then(() => process.exit(0)));\n`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-8000)));
    const lines = linesOf(child);
    const exits: (number | string | null)[] = [];
    child.on('exit', (code, signal) => exits.push(code ?? signal));
    const [ready] = await lines.wait('READY', 1);
    const { dropDir } = JSON.parse(ready!) as { dropDir: string };
    const memory = sampleTreeRss(child.pid!);

    try {
      // Act: everything dropped at once, as a user copies a folder
      const names = [...entries.map((e) => e.file), ...legitimate];
      await Promise.all(names.map((name) => copyFile(path.join(corpus, name), path.join(dropDir, name))));
      const finals = (await lines.wait('FINAL', names.length)).map((line) => JSON.parse(line) as Final);
      const aliveAfterAll = child.exitCode === null && child.signalCode === null;
      child.stdin!.write('\n');
      const outputs = JSON.parse((await lines.wait('OUTPUTS', 1))[0]!) as Record<string, { bytes: number; execution: string }>;
      const rss = memory.stop();

      // Assess: each file's outcome, by its name under inbox/
      const outcomes = Object.fromEntries(finals.map((f) => [path.basename(f.key), `${f.status} ${f.code ?? ''}`.trim()]));
      const expected = {
        ...Object.fromEntries(entries.map((e) => [e.file, `REJECTED ${e.expectedCode}`])),
        ...Object.fromEntries(legitimate.map((name) => [name, 'SUCCEEDED'])),
      };
      expect(outcomes, stderr).toEqual(expected);
      // the bridge lived throughout
      expect(aliveAfterAll).toBe(true);
      expect(exits).toEqual([]);
      expect(stderr).not.toMatch(/heap out of memory|Maximum call stack|unhandled|FATAL/i);
      // every state's output small: the largest of each state, of all executions
      const largest = Math.max(...Object.values(outputs).map((o) => o.bytes));
      const worst = Object.entries(outputs).sort((a, b) => b[1].bytes - a[1].bytes)[0]!;
      expect(Object.keys(outputs).length).toBeGreaterThan(10);
      expect(largest, `${worst[0]} of ${worst[1].execution}`).toBeLessThan(STATE_PAYLOAD_LIMIT_BYTES / 4);
      console.log(
        `npm start with ${names.length} files: largest state output ${largest} bytes (${worst[0]}, ${worst[1].execution}); ` +
          `bridge + function environments peak RSS ${(rss.peakBytes / 1024 ** 2).toFixed(0)} MiB`,
      );
    } finally {
      memory.stop();
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    }
  });
});
