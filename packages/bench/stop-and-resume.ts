/**
 * Ctrl-C and the restart with slow result downloads, through `mapflow-bridge
 * start` (issue 39, point 2): two jobs reach Store Results while a gate in
 * front of the simulator holds their result downloads (result-gate.ts: the
 * live service takes 45 s or more before the first byte); Ctrl-C is sent to
 * the bridge's process group, as a terminal does; a new start on the same
 * state resumes both into Store Results (held again); a file is dropped, and
 * the time to its Job Received is measured; then the downloads go through
 * and every job must end SUCCEEDED. Prints the two delays.
 *
 *   npx tsx packages/bench/stop-and-resume.ts
 *   STOP_RESUME_DEBUG=1 npx tsx packages/bench/stop-and-resume.ts     (also the starts' lines around the drop)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readEvents } from '@mapflow-bridge/local/events/file';
import { startSimulator } from '@mapflow-bridge/simulator';
import { squareAoiText } from './fault-suite.ts';
import { startResultGate } from './result-gate.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

export interface StopAndResume {
  /** From Ctrl-C to the start's exit, two result downloads held, ms. */
  stopMs: number;
  /** From a file written to the drop folder to its Job Received, after the restart with two resumed Store Results waiting, ms. */
  receivedMs: number;
  /** Of which: from the drop to the start's "uploaded inbox/..." line (the drop folder's stability window and the upload), ms. */
  uploadedMs: number;
  /** The result downloads the gate had let through when that Job Received came (0: before any slow one finished). */
  releasedAtReceived: number;
  finalStatuses: string[];
}

export async function measureStopAndResume(): Promise<StopAndResume> {
  const work = await mkdtemp(path.join(tmpdir(), 'mfb-stop-resume-'));
  const stateDir = path.join(work, 'state');
  const dropDir = path.join(stateDir, 'drop');
  await mkdir(dropDir, { recursive: true });
  const eventsFile = path.join(stateDir, 'events.jsonl');
  const token = `stop-${randomBytes(12).toString('hex')}`;
  const email = 'stop@mapflow-bridge.invalid';
  const simulator = await startSimulator({ token, email, processingSeconds: 1, seed: 3, dataDir: path.join(work, 'simulator') });
  const gate = await startResultGate(simulator.url);
  const args = [
    CLI, 'start', '--state-dir', stateDir, '--out', path.join(work, 'out'),
    '--mapflow-url', gate.url, '--token', token, '--email', email, '--s3-port', '0',
    '--poll-policy', '{"initialSeconds":1,"maxSeconds":2,"maxJobSeconds":3600,"nearEndSeconds":1}',
    '--drop-stable-seconds', '0.2', '--no-samples', '--no-console', '--memory-budget', '4096',
  ];
  let child: ChildProcess | undefined;
  /** Each line the starts printed, with when. */
  const lines: { at: number; line: string }[] = [];
  const start = () => {
    const proc = spawn(process.execPath, args, { cwd: work, detached: true, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR', NO_COLOR: '1' } });
    createInterface({ input: proc.stdout! }).on('line', (line) => lines.push({ at: Date.now(), line }));
    child = proc;
    return { proc, exited: new Promise<void>((resolve) => proc.once('exit', () => resolve())) };
  };
  /** Ctrl-C as a terminal sends it: to the whole process group. */
  const ctrlC = (proc: ChildProcess) => process.kill(-(proc.pid as number), 'SIGINT');
  const eventOf = async (name: string, type: string) => {
    for (;;) {
      const events = await readEvents(eventsFile).catch(() => []);
      const found = events.find((event) => event.detailType === type && event.detail.input.key === `inbox/${name}`);
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  try {
    const first = start();
    for (const [index, name] of ['slow-a.geojson', 'slow-b.geojson'].entries()) {
      await writeFile(path.join(dropDir, name), squareAoiText(name, 8.54 + index * 0.01, 47.37));
    }
    await gate.arrivals(2);
    const stopAt = Date.now();
    ctrlC(first.proc);
    await first.exited;
    const stopMs = Date.now() - stopAt;

    const second = start();
    await gate.arrivals(4);
    const droppedAt = Date.now();
    await writeFile(path.join(dropDir, 'late.geojson'), squareAoiText('late', 8.6, 47.4));
    await eventOf('late.geojson', 'Job Received');
    const receivedMs = Date.now() - droppedAt;
    const uploaded = lines.find((entry) => entry.at >= droppedAt && /uploaded inbox\/late\.geojson/.test(entry.line));
    const uploadedMs = uploaded ? uploaded.at - droppedAt : Number.NaN;
    if (process.env.STOP_RESUME_DEBUG) for (const entry of lines.filter((e) => e.at >= droppedAt - 15_000)) console.log(`  [+${entry.at - droppedAt} ms] ${entry.line}`);
    const releasedAtReceived = gate.released;

    gate.open();
    const finalStatuses: string[] = [];
    for (const name of ['slow-a.geojson', 'slow-b.geojson', 'late.geojson']) {
      for (;;) {
        const events = await readEvents(eventsFile).catch(() => []);
        const final = events.find((event) => event.detail.input.key === `inbox/${name}` && ['Job Succeeded', 'Job Failed', 'Job Rejected'].includes(event.detailType));
        if (final) {
          finalStatuses.push(final.detailType);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    ctrlC(second.proc);
    await second.exited;
    return { stopMs, receivedMs, uploadedMs, releasedAtReceived, finalStatuses };
  } finally {
    if (child && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // gone
      }
    }
    await gate.close();
    await simulator.close();
    await rm(work, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const m = await measureStopAndResume();
  console.log(`stop and resume (issue 39): Ctrl-C with two result downloads held took ${(m.stopMs / 1000).toFixed(2)} s`);
  console.log(
    `  after the restart, two resumed Store Results waiting: a dropped file got its Job Received after ${(m.receivedMs / 1000).toFixed(2)} s ` +
      `(${(m.uploadedMs / 1000).toFixed(2)} s of it to its upload from the drop folder), ${m.releasedAtReceived} slow download(s) answered by then`,
  );
  console.log(`  final events: ${m.finalStatuses.join(', ')}`);
  process.exitCode = m.finalStatuses.every((status) => status === 'Job Succeeded') && m.releasedAtReceived === 0 ? 0 : 1;
}
