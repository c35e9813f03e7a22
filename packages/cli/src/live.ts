/**
 * What `start` prints while it runs. Every line starts with the time.
 *
 * - On a terminal: permanent lines (job events, messages) scroll as usual, and
 *   below them one live line per job in flight redraws in place (log-update),
 *   as npm, docker pull or cargo do.
 * - In a pipe, a file, CI, or with --verbose (the handlers' own logs would
 *   break a redrawn block), or a terminal of unknown width: plain lines only; a job's progress line is printed
 *   whenever it changes.
 */
import { createLogUpdate } from 'log-update';
import { clock } from './format.ts';

export { clock };

export interface LiveOutputOptions {
  /** Where the output goes (default process.stdout). */
  stream?: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number };
  /** Redraw live lines in place. Default: when the stream is a terminal. */
  live?: boolean;
  /** The clock (tests). */
  now?: () => Date;
}

export interface LiveOutput {
  /** True when live lines redraw in place. */
  readonly live: boolean;
  /** A permanent line; `at` is the time it shows (default now). */
  line(message: string, at?: Date): void;
  /** Sets the live line of a job in flight, or removes it with undefined. */
  progress(id: string, text: string | undefined): void;
  /** Leaves the live lines as they are and stops redrawing. */
  stop(): void;
}

export function createLiveOutput(options: LiveOutputOptions = {}): LiveOutput {
  const stream = options.stream ?? process.stdout;
  const now = options.now ?? (() => new Date());
  // A terminal that reports no width (a pty under `script`, some CI runners) would get
  // every character wrapped onto its own line: plain lines there.
  const live = options.live ?? (Boolean(stream.isTTY) && (stream.columns ?? 0) > 0);
  const stamp = (message: string, at: Date = now()) =>
    message
      .split('\n')
      .map((text) => `${clock(at)}  ${text}`)
      .join('\n');
  const lines = new Map<string, string>();

  if (!live) {
    return {
      live,
      line: (message, at) => {
        stream.write(`${stamp(message, at)}\n`);
      },
      progress: (id, text) => {
        if (text === undefined) {
          lines.delete(id);
          return;
        }
        if (lines.get(id) === text) return;
        lines.set(id, text);
        stream.write(`${stamp(text)}\n`);
      },
      stop: () => undefined,
    };
  }

  // showCursor: no cursor hiding, so nothing to restore if the process is killed.
  const update = createLogUpdate(stream as NodeJS.WriteStream, { showCursor: true });
  let stopped = false;
  const render = () => {
    if (stopped) return;
    const frame = [...lines.values()].map((text) => stamp(text)).join('\n');
    if (frame) update(frame);
    else update.clear();
  };
  return {
    live,
    line: (message, at) => {
      if (stopped) {
        stream.write(`${stamp(message, at)}\n`);
        return;
      }
      update.persist(stamp(message, at));
      render();
    },
    progress: (id, text) => {
      if (text === undefined) lines.delete(id);
      else lines.set(id, text);
      render();
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      update.done();
    },
  };
}
