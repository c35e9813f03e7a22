/**
 * Where the simulator decodes what it is sent: uploaded GeoTIFFs (inspected,
 * sampled, previewed) and AOI geometries (validity). By default in a child
 * process of its own, with a heap limit, so that neither the memory nor the
 * time of a decode is the embedding process's: the local bridge runs the
 * simulator inside its own process, which must stay small and responsive
 * whatever a file holds (issue 38: two valid GeoTIFFs of nine 64 MiB tiles
 * took the bridge's process to 2 GB and blocked it 20 s; a 99k-vertex AOI
 * stalled every job for 43 s).
 *
 * 'inline' decodes in this process (the simulator's Lambda, which is one
 * process by construction and a sandbox of its own).
 *
 * The child is started on the first task and stopped once idle: it holds
 * nothing between tasks (the file is on disk, the answer goes back whole).
 * Its heap is limited (DECODER_HEAP_MB), and the process as a whole is
 * killed above DECODER_RSS_LIMIT_MB of resident memory: the upload is then
 * answered FileOpenError, as the live service fails an upload it cannot read.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import jpeg from 'jpeg-js';
import type { AoiGeometry } from './geometry.ts';
import { placeholderPixels } from './placeholder.ts';
import type { RasterInfo } from './raster-file.ts';

/** A file the data API refuses: the live service's detail code, message and parameters. */
export class DecodeRejection extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly parameters: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'DecodeRejection';
  }
}

/** What geometry validity found (geometry.ts validityOf), with the work it took. */
export interface GeometryVerdict {
  valid: boolean;
  reason?: string;
  /** Segment pairs the sweep compared (a bound on the work: no worse than n log n plus the crossings). */
  comparisons: number;
}

export interface Decoder {
  /** The data API's reading of an upload, or DecodeRejection. */
  inspect(path: string, limits: { maxPixelCount: number }): Promise<RasterInfo>;
  /** A JPEG preview (a placeholder when the pixels cannot be read within bounds). */
  preview(path: string, size: number): Promise<Buffer>;
  /** OGC validity of an AOI, each polygon on its own. */
  geometry(geometry: AoiGeometry): Promise<GeometryVerdict>;
  /** Counts for tests and the bench: tasks run, the pids that ran them, processes started. */
  stats(): DecoderStats;
  close(): Promise<void>;
}

export interface DecoderStats {
  mode: 'process' | 'inline';
  tasks: number;
  /** The pid of every process that ran a task (this process's in 'inline' mode). */
  pids: number[];
  starts: number;
  /** Tasks lost to a child that died (its heap limit, a kill). */
  crashes: number;
}

/** Heap limit of the decoding process, MiB: ample for the largest block the bounds let through (raster-bounds.ts). */
export const DECODER_HEAP_MB = 512;
/** A child with no task for this long is stopped (its heap goes with it). */
export const DECODER_IDLE_MS = 2_000;
/**
 * Resident memory at which a decoding process is killed, MiB: the heap limit
 * does not count what lives outside V8's heap (the typed arrays a decoder
 * fills), so the process as a whole is read from /proc while it has work.
 */
export const DECODER_RSS_LIMIT_MB = 1_024;
const RSS_WATCH_MS = 100;

const ENTRY = fileURLToPath(new URL('./decoder-child.mjs', import.meta.url));

type Task = { task: 'inspect'; path: string; limits: { maxPixelCount: number } } | { task: 'preview'; path: string; size: number } | { task: 'geometry'; geometry: AoiGeometry };
type Answer = { id: number; pid: number; result?: unknown; rejected?: { code: string; message: string; parameters: Record<string, unknown> }; error?: string };

/** The decoder the options ask for. */
export function createDecoder(mode: 'process' | 'inline' = 'process', limits: { heapMb?: number; rssLimitMb?: number; idleMs?: number } = {}): Decoder {
  return mode === 'inline' ? inlineDecoder() : new ProcessDecoder(limits.heapMb ?? DECODER_HEAP_MB, limits.rssLimitMb ?? DECODER_RSS_LIMIT_MB, limits.idleMs ?? DECODER_IDLE_MS);
}

class ProcessDecoder implements Decoder {
  private child: ChildProcess | undefined;
  private nextId = 0;
  /** Tasks sent and not answered, with the child each went to (a child stopped while idle may report its exit after a new one has work). */
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void; child: ChildProcess }>();
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private watchdog: NodeJS.Timeout | undefined;
  /** Why the child was killed, when it was (its memory). */
  private killedFor: string | undefined;
  private readonly counts: DecoderStats = { mode: 'process', tasks: 0, pids: [], starts: 0, crashes: 0 };

  constructor(
    private readonly heapMb: number,
    private readonly rssLimitMb: number,
    private readonly idleMs: number,
  ) {}

  async inspect(path: string, limits: { maxPixelCount: number }): Promise<RasterInfo> {
    try {
      return (await this.run({ task: 'inspect', path, limits })) as RasterInfo;
    } catch (error) {
      if (error instanceof ChildDied) {
        throw new DecodeRejection('FileOpenError', 'The image pixel data cannot be read', { reason: `decoding it outgrew the decoding process (${error.message})` });
      }
      throw error;
    }
  }

  async preview(path: string, size: number): Promise<Buffer> {
    try {
      return Buffer.from((await this.run({ task: 'preview', path, size })) as Uint8Array);
    } catch (error) {
      if (error instanceof ChildDied) return placeholderJpeg(size);
      throw error;
    }
  }

  async geometry(geometry: AoiGeometry): Promise<GeometryVerdict> {
    return (await this.run({ task: 'geometry', geometry })) as GeometryVerdict;
  }

  stats(): DecoderStats {
    return { ...this.counts, pids: [...this.counts.pids] };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stop();
  }

  private run(task: Task): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('the simulator is closed'));
    const child = this.ensureChild();
    clearTimeout(this.idleTimer);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, child });
      child.send({ id, ...task });
      this.watchMemory();
    });
  }

  /** Kills the child above rssLimitMb of resident memory, read now and then every RSS_WATCH_MS while it has work (Linux: /proc). */
  private watchMemory(): void {
    const check = () => {
      const child = this.child;
      if (!child?.pid || this.pending.size === 0) {
        clearInterval(this.watchdog);
        this.watchdog = undefined;
        return;
      }
      const rss = residentMb(child.pid);
      if (rss !== undefined && rss > this.rssLimitMb) {
        this.killedFor = `resident memory ${Math.round(rss)} MB over ${this.rssLimitMb} MB`;
        child.kill('SIGKILL');
      }
    };
    check();
    this.watchdog ??= setInterval(check, RSS_WATCH_MS);
  }

  private ensureChild(): ChildProcess {
    if (this.child) return this.child;
    const child = fork(ENTRY, [], {
      // Only the heap limit: not this process's flags (a loader, an inspector).
      execArgv: [`--max-old-space-size=${this.heapMb}`],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    this.counts.starts++;
    this.child = child;
    child.stderr?.resume();
    child.on('message', (answer: Answer) => {
      const waiter = this.pending.get(answer.id);
      if (!waiter) return;
      this.pending.delete(answer.id);
      this.counts.tasks++;
      if (!this.counts.pids.includes(answer.pid)) this.counts.pids.push(answer.pid);
      if (answer.rejected) waiter.reject(new DecodeRejection(answer.rejected.code, answer.rejected.message, answer.rejected.parameters));
      else if (answer.error !== undefined) waiter.reject(new Error(answer.error));
      else waiter.resolve(answer.result);
      this.settle();
    });
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      const lost = [...this.pending].filter(([, waiter]) => waiter.child === child);
      for (const [id] of lost) this.pending.delete(id);
      if (lost.length > 0) this.counts.crashes += lost.length;
      const why = this.killedFor ?? (signal ? `killed by ${signal}` : `exit code ${code}`);
      this.killedFor = undefined;
      for (const [, waiter] of lost) waiter.reject(new ChildDied(why));
      this.settle();
    });
    child.on('error', () => undefined); // 'exit' follows and answers the waiters
    this.settle();
    return child;
  }

  /** A child with work keeps the process alive; an idle one does not, and is stopped after DECODER_IDLE_MS. */
  private settle(): void {
    const child = this.child;
    if (!child) return;
    const channel = child.channel as { ref?(): void; unref?(): void } | null | undefined;
    if (this.pending.size > 0) {
      child.ref();
      channel?.ref?.();
      return;
    }
    child.unref();
    channel?.unref?.();
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.pending.size === 0) this.stop();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private stop(): void {
    clearTimeout(this.idleTimer);
    clearInterval(this.watchdog);
    this.watchdog = undefined;
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** Resident memory of a process, MiB, or undefined where /proc cannot be read. */
function residentMb(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

class ChildDied extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChildDied';
  }
}

/** Decodes in this process (the simulator's Lambda). */
function inlineDecoder(): Decoder {
  const counts: DecoderStats = { mode: 'inline', tasks: 0, pids: [process.pid], starts: 0, crashes: 0 };
  return {
    async inspect(path, limits) {
      const { inspectRaster, RasterRejected } = await import('./raster-file.ts');
      counts.tasks++;
      try {
        return await inspectRaster(path, limits);
      } catch (error) {
        if (error instanceof RasterRejected) throw new DecodeRejection(error.code, error.message, error.parameters);
        throw error;
      }
    },
    async preview(path, size) {
      const { renderPreview } = await import('./raster-file.ts');
      counts.tasks++;
      return renderPreview(path, size);
    },
    async geometry(geometry) {
      const { validityOf } = await import('./geometry.ts');
      counts.tasks++;
      return validityOf(geometry);
    },
    stats: () => ({ ...counts, pids: [...counts.pids] }),
    close: async () => undefined,
  };
}

/** A grey gradient JPEG, for an image whose pixels could not be read. */
function placeholderJpeg(size: number): Buffer {
  return jpeg.encode({ data: placeholderPixels(size), width: size, height: size }, 80).data as Buffer;
}
