/**
 * The bridge's own process bounds its young generation (issue 38): local mode runs the engine, the
 * simulator and the light steps' threads in the process of the command, and V8's default new space (two
 * semi-spaces growing to 32 MiB each) was the largest slack of its peak. The command's process does not
 * let the semi-spaces double: after the same churn its new space is 2 MiB in most runs, and V8 still adds
 * a page or a few now and then (3 to 8.25 MiB seen, the most on a loaded machine), against 64 MiB in a
 * plain process.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../bin/mapflow-bridge.mjs', import.meta.url));
const MiB = 1024 ** 2;
const work = await mkdtemp(path.join(tmpdir(), 'mfb-young-'));
afterAll(() => rm(work, { recursive: true, force: true }));

/**
 * Runs `args` under `node --import <probe>`: as the process exits, the probe allocates 200 MB of
 * short-lived objects (what grows a default new space to its largest) and writes the new space's size.
 */
async function newSpaceAfterChurn(args: string[]): Promise<number> {
  const probe = path.join(work, 'new-space.mjs');
  const out = path.join(work, `new-space-${args.length}.txt`);
  await writeFile(
    probe,
    `import { writeFileSync } from 'node:fs';\n` +
      `import { getHeapSpaceStatistics } from 'node:v8';\n` +
      `process.on('exit', () => {\n` +
      `  let keep = [];\n` +
      `  for (let i = 0; i < 2e6; i++) { keep.push({ i, text: 'x' + i }); if (keep.length > 50000) keep = []; }\n` +
      `  writeFileSync(${JSON.stringify(out)}, String(getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size));\n` +
      `});\n`,
  );
  await run(process.execPath, ['--import', probe, ...args]);
  return Number(await readFile(out, 'utf8'));
}

describe("the bridge process's young generation", () => {
  it('stays at a few MiB in the command, where a plain Node process grows it to 64 MiB', async () => {
    // Act
    const command = await newSpaceAfterChurn([BIN, '--version']);
    const plain = await newSpaceAfterChurn(['-e', '']);

    // Assess
    expect(plain).toBeGreaterThan(32 * MiB);
    // A quarter of the plain process's at most: never the doubling, whatever the page V8 adds under load.
    expect(command).toBeLessThanOrEqual(16 * MiB);
  });
});
