/**
 * Captures what a Powertools Logger prints. The logger writes through its own
 * `Console` bound to process.stdout/stderr, so the test spies on those streams.
 */
import { vi } from 'vitest';

export interface CapturedLogs {
  /** Everything written so far, one string per write. */
  readonly lines: string[];
  /** The lines parsed as JSON (non-JSON lines are skipped). */
  entries(): Record<string, unknown>[];
  text(): string;
  restore(): void;
}

export function captureLogs(): CapturedLogs {
  const lines: string[] = [];
  const capture = (chunk: unknown) => {
    lines.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture as typeof process.stdout.write);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture as typeof process.stderr.write);
  return {
    lines,
    entries: () =>
      lines.flatMap((line) =>
        line
          .split('\n')
          .filter((part) => part.trim().startsWith('{'))
          .map((part) => JSON.parse(part) as Record<string, unknown>),
      ),
    text: () => lines.join(''),
    restore: () => {
      out.mockRestore();
      err.mockRestore();
    },
  };
}
