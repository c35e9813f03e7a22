/**
 * What `npm start` shows while jobs run: on a terminal one live line per job
 * in flight, redrawn in place; in a pipe plain lines; a time on every line.
 * The terminal is a small emulator of the escape sequences log-update writes
 * (cursor up/down, column 1, erase line), so the test reads the screen a user
 * would see.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { LedgerRow } from '../../../functions/core/model.ts';
import { createLiveOutput } from '../src/live.ts';
import { JobProgress } from '../src/start.ts';
import type { LocalEvent } from '../../local/src/events/file.ts';

/** A terminal: applies text and the CSI sequences log-update uses; `screen` is what shows. */
class FakeTerminal extends Writable {
  readonly isTTY = true;
  readonly columns = 120;
  readonly rows = 40;
  readonly screen: string[] = [''];
  private row = 0;
  private col = 0;

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.apply(chunk.toString());
    done();
  }

  private apply(text: string): void {
    const pattern = /\u001B\[(\??)(\d*)([A-Za-z])|\n|\r|[^\u001B\n\r]+/g;
    for (const match of text.matchAll(pattern)) {
      const [token, privateMode, number, command] = match;
      if (token === '\n') {
        this.row++;
        this.col = 0;
        while (this.screen.length <= this.row) this.screen.push('');
      } else if (token === '\r') {
        this.col = 0;
      } else if (command) {
        if (privateMode) continue; // cursor visibility, synchronized output
        const n = number ? Number(number) : 1;
        if (command === 'A') this.row = Math.max(0, this.row - n);
        else if (command === 'B') this.row += n;
        else if (command === 'G') this.col = 0;
        else if (command === 'K' && number === '2') this.screen[this.row] = '';
        else if (command === 'K') this.screen[this.row] = (this.screen[this.row] ?? '').slice(0, this.col);
        while (this.screen.length <= this.row) this.screen.push('');
      } else {
        const line = (this.screen[this.row] ?? '').padEnd(this.col);
        this.screen[this.row] = line.slice(0, this.col) + token + line.slice(this.col + token.length);
        this.col += token.length;
      }
    }
  }

  lines(): string[] {
    return this.screen.filter((line) => line.trim() !== '');
  }
}

/** A pipe: collects plain text. */
class FakePipe extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

const TIME = /^\d\d:\d\d:\d\d {2}/;

function event(jobId: string, status: LedgerRow['status'], detailType: string): LocalEvent {
  return {
    time: '2026-11-23T10:00:00.000Z',
    detailType,
    detail: { jobId, status, at: '2026-11-23T10:00:00.000Z', input: { bucket: 'b', key: `inbox/${jobId}.geojson`, etag: 'e', size: 1 } },
  } as unknown as LocalEvent;
}

/** A ledger that answers the progress the test sets. */
function fakeLedger(rows: Map<string, Partial<LedgerRow>>) {
  return {
    ledger: { get: async (jobId: string) => rows.get(jobId) as LedgerRow | undefined },
    s3: {},
    bucket: 'b',
  } as unknown as Parameters<JobProgress['attach']>[0];
}

describe('live output of npm start', () => {
  it('on a terminal, keeps one live line per job in flight and redraws it in place', async () => {
    // Prepare
    const terminal = new FakeTerminal();
    const out = createLiveOutput({ stream: terminal as unknown as NodeJS.WriteStream });
    const rows = new Map<string, Partial<LedgerRow>>();
    const progress = new JobProgress(out, '/tmp/out');
    progress.attach(fakeLedger(rows));
    progress.stop(); // no timer: the test polls by hand
    // Act: two jobs start; one moves 10% -> 40% -> 70%
    progress.onEvent(event('alpha', 'RECEIVED', 'Job Received'));
    progress.onEvent(event('beta', 'RECEIVED', 'Job Received'));
    rows.set('beta', { status: 'RECEIVED' });
    for (const percent of [10, 40, 70]) {
      rows.set('alpha', { status: 'IN_PROGRESS', percentCompleted: percent, estimatedCost: 5 });
      await progress.poll();
    }
    out.line('a message from the bridge');
    // Assess
    const screen = terminal.lines();
    expect(out.live).toBe(true);
    expect(screen.filter((line) => line.includes('alpha.geojson  IN_PROGRESS'))).toHaveLength(1);
    expect(screen.find((line) => line.includes('alpha.geojson  IN_PROGRESS'))).toContain(' 70%');
    expect(screen.filter((line) => line.includes('beta.geojson  RECEIVED'))).toHaveLength(1);
    expect(screen.filter((line) => line.includes('Job Received'))).toHaveLength(2);
    // The message scrolls above the live lines, which stay at the bottom.
    expect(screen.slice(-2).every((line) => /(alpha|beta)\.geojson {2}(IN_PROGRESS|RECEIVED)/.test(line))).toBe(true);
    for (const line of screen) expect(line).toMatch(TIME);
    out.stop();
  });

  it('drops a job’s live line when the job is final', async () => {
    // Prepare
    const terminal = new FakeTerminal();
    const out = createLiveOutput({ stream: terminal as unknown as NodeJS.WriteStream });
    const progress = new JobProgress(out, '/tmp/out');
    // Act
    progress.onEvent(event('gamma', 'RECEIVED', 'Job Received'));
    progress.onEvent(event('gamma', 'REJECTED', 'Job Rejected'));
    // Assess
    expect(terminal.lines().some((line) => line.includes('gamma.geojson  RECEIVED'))).toBe(false);
    expect(terminal.lines().filter((line) => line.includes('Job Rejected'))).toHaveLength(1);
    out.stop();
  });

  it('prints plain lines on a terminal that reports no width (a pty under script), not one character per line', () => {
    // Prepare
    const terminal = Object.assign(new FakePipe(), { isTTY: true, columns: 0 });
    const out = createLiveOutput({ stream: terminal as unknown as NodeJS.WriteStream });
    // Act
    out.progress('job', 'area.geojson  IN_PROGRESS');
    // Assess
    expect(out.live).toBe(false);
    expect(terminal.text).toMatch(/^\d\d:\d\d:\d\d {2}area\.geojson {2}IN_PROGRESS\n$/);
  });

  it('in a pipe, prints plain lines (no escape sequences), each with a time', async () => {
    // Prepare
    const pipe = new FakePipe();
    const out = createLiveOutput({ stream: pipe as unknown as NodeJS.WriteStream });
    const rows = new Map<string, Partial<LedgerRow>>();
    const progress = new JobProgress(out, '/tmp/out');
    progress.attach(fakeLedger(rows));
    progress.stop();
    // Act
    progress.onEvent(event('delta', 'RECEIVED', 'Job Received'));
    rows.set('delta', { status: 'IN_PROGRESS', percentCompleted: 50 });
    await progress.poll();
    await progress.poll();
    out.line('two\nlines');
    // Assess
    const lines = pipe.text.trimEnd().split('\n');
    expect(out.live).toBe(false);
    expect(pipe.text).not.toContain('\u001B');
    expect(lines.filter((line) => line.includes('delta.geojson  IN_PROGRESS'))).toHaveLength(1);
    for (const line of lines) expect(line).toMatch(TIME);
  });
});
