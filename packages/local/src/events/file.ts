/**
 * The local event bus: in local mode the runtime's publisher appends every
 * event to a JSON-lines file (BRIDGE_EVENTS_FILE) instead of calling
 * EventBridge. This module reads that file back — all at once, or followed
 * live for the start command's output.
 *
 * A line is an EventBridge entry. Both spellings are accepted, so the reader
 * does not depend on how the publisher names its fields: `detail-type` or
 * `DetailType`/`detailType`, and `detail` or `Detail` as an object or a JSON
 * string (PutEvents takes a string).
 */
import { open, readFile, stat, truncate } from 'node:fs/promises';
import type { JobEventDetail } from 'mapflow-bridge/functions/events/types.ts';

export interface LocalEvent {
  detailType: string;
  source?: string;
  time?: string;
  detail: JobEventDetail;
}

export function parseEventLine(line: string): LocalEvent | undefined {
  if (line.trim() === '') return undefined;
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const detailType = entry['detail-type'] ?? entry.DetailType ?? entry.detailType;
  let detail = entry.detail ?? entry.Detail;
  if (typeof detail === 'string') {
    try {
      detail = JSON.parse(detail);
    } catch {
      return undefined;
    }
  }
  if (typeof detailType !== 'string' || typeof detail !== 'object' || detail === null) return undefined;
  const source = entry.source ?? entry.Source;
  const time = entry.time ?? entry.Time;
  return {
    detailType,
    detail: detail as JobEventDetail,
    ...(typeof source === 'string' ? { source } : {}),
    ...(typeof time === 'string' ? { time } : {}),
  };
}

/** Every event in the file so far (none when it does not exist yet). */
export async function readEvents(file: string): Promise<LocalEvent[]> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  return text.split('\n').flatMap((line) => parseEventLine(line) ?? []);
}

/**
 * Cuts a half-written last line off the events file (what a stop in the
 * middle of an append leaves: no closing newline), so that the next event is
 * not glued onto it and lost with it. Run before anything appends (the state
 * folder is locked). Returns the bytes removed (0: the file was whole or is
 * missing).
 */
export async function repairEventsFile(file: string): Promise<number> {
  const handle = await open(file, 'r').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (!handle) return 0;
  let keep: number;
  let size: number;
  try {
    size = (await handle.stat()).size;
    // Read back from the end in blocks until the last newline: the tail after it is the torn line.
    const block = Buffer.alloc(64 * 1024);
    let end = size;
    keep = 0;
    while (end > 0) {
      const start = Math.max(0, end - block.length);
      const { bytesRead } = await handle.read(block, 0, end - start, start);
      const newline = block.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (newline >= 0) {
        keep = start + newline + 1;
        break;
      }
      end = start;
    }
  } finally {
    await handle.close();
  }
  if (keep === size) return 0;
  await truncate(file, keep);
  return size - keep;
}

export interface EventFollower {
  /** Reads what was appended since the last read (also run on a timer). */
  poll(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Calls onEvent for every event appended to the file. By default starts at the
 * current end (events of an earlier run are not replayed).
 */
export async function followEvents(
  file: string,
  onEvent: (event: LocalEvent) => void,
  options: { fromStart?: boolean; intervalMs?: number } = {},
): Promise<EventFollower> {
  let offset = options.fromStart ? 0 : await stat(file).then((s) => s.size, () => 0);
  let partial = '';
  let reading: Promise<void> | undefined;

  const readAppended = async (): Promise<void> => {
    const size = await stat(file).then((s) => s.size, () => 0);
    if (size < offset) offset = 0; // the file was reset
    if (size === offset) return;
    const handle = await open(file, 'r');
    try {
      const buffer = Buffer.alloc(size - offset);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      offset += bytesRead;
      const lines = (partial + buffer.subarray(0, bytesRead).toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const event = parseEventLine(line);
        if (event) onEvent(event);
      }
    } finally {
      await handle.close();
    }
  };
  const poll = (): Promise<void> => {
    reading ??= readAppended().finally(() => {
      reading = undefined;
    });
    return reading;
  };
  const timer = setInterval(() => void poll().catch(() => undefined), options.intervalMs ?? 250);
  timer.unref();
  return {
    poll,
    close: async () => {
      clearInterval(timer);
      await reading;
      await poll();
    },
  };
}
