/**
 * CPU-heavy checks in worker threads, in local mode. On AWS each step is its
 * own Lambda; locally every handler shares the bridge's event loop, so
 * parsing, validating and dissolving a large GeoJSON (seconds) or inspecting
 * a GeoTIFF would stall the other jobs and the progress display. Each call
 * runs in a fresh worker (cpu-worker.mjs) with its own heap limit, so a file
 * that still went wrong costs that worker, not the bridge.
 *
 * The GeoTIFF's ranged reads stay in this thread (the source is an S3 client
 * or a file): the worker asks for byte ranges over a MessagePort.
 */
import { availableParallelism } from 'node:os';
import { MessageChannel, Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { parseAoi, useAoiParser, type ParsedAoi, type ParseAoiOptions } from '../../functions/aoi/index.ts';
import { useGeoTiffInspector, type GeoTiffInfo, type InspectOptions, type RangeSource } from '../../functions/geotiff/index.ts';
import { InputRejected, parseCodedMessage } from '../../functions/core/errors.ts';

const ENTRY = fileURLToPath(new URL('./cpu-worker.mjs', import.meta.url));

/** Heap limit of one worker, MiB: the largest accepted input needs well under half of it (bench/hostile.ts). */
export const WORKER_HEAP_LIMIT_MB = 512;

/**
 * Workers running at once; the others queue. Each holds a parsed file (a
 * 20 MiB GeoJSON is a few hundred MiB of objects), so many at once would
 * add up: a corpus of 49 hostile files took the bridge to 1.1 GB without this.
 * One core is left to the bridge's own loop.
 */
export const WORKER_CONCURRENCY = Math.max(1, Math.min(2, availableParallelism() - 1));

/**
 * A GeoJSON this small is parsed in this thread: starting a worker (a fresh
 * isolate loading the aoi module) costs far more than parsing it, and with one
 * worker at a time a batch of small files queued behind each other's start-up
 * (measured: 200 one-polygon files, Register Job -> Admit Job 160 s median on a
 * loaded machine, bench/admission.ts). Only big inputs can stall the loop.
 */
export const IN_THREAD_AOI_BYTES = 64 * 1024;

let running = 0;
const queue: (() => void)[] = [];

/** Runs `work` when a worker slot is free; a finished call hands its slot straight to the next in line. */
async function slot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= WORKER_CONCURRENCY) await new Promise<void>((resolve) => queue.push(resolve));
  else running++;
  try {
    return await work();
  } finally {
    const next = queue.shift();
    if (next) next();
    else running--;
  }
}

let installed = false;

/** Routes parseAoiOffThread and inspectGeoTiff through worker threads (idempotent). */
export function installCpuWorkers(): void {
  if (installed) return;
  installed = true;
  useAoiParser(async (file: string | Uint8Array, options: ParseAoiOptions) =>
    (typeof file === 'string' ? file.length * 3 : file.byteLength) <= IN_THREAD_AOI_BYTES
      ? parseAoi(file, options)
      : runTask<ParsedAoi>('parseAoi', { file, options }),
  );
  useGeoTiffInspector((source: RangeSource, options: InspectOptions) => runTask<GeoTiffInfo>('inspectGeoTiff', { size: source.size, options }, source));
}

/** Back to in-thread checks (tests). */
export function uninstallCpuWorkers(): void {
  installed = false;
  useAoiParser(undefined);
  useGeoTiffInspector(undefined);
}

interface WorkerError {
  name: string;
  message: string;
  code?: string;
  details?: Record<string, unknown>;
}

function runTask<T>(task: string, args: Record<string, unknown>, source?: RangeSource): Promise<T> {
  return slot(() => runWorker<T>(task, args, source));
}

function runWorker<T>(task: string, args: Record<string, unknown>, source?: RangeSource): Promise<T> {
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(ENTRY, {
    workerData: { task, args, port: port2 },
    transferList: [port2],
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_LIMIT_MB },
  });
  if (source) {
    port1.on('message', ({ id, offset, length }: { id: number; offset: number; length: number }) => {
      source.read(offset, length).then(
        (data) => port1.postMessage({ id, data }),
        (error: unknown) => port1.postMessage({ id, error: { name: (error as Error)?.name ?? 'Error', message: (error as Error)?.message ?? String(error) } }),
      );
    });
  }
  return new Promise<T>((resolve, reject) => {
    worker.once('message', (message: { ok: true; result: T } | { ok: false; error: WorkerError }) => {
      if (message.ok) resolve(message.result);
      else reject(rebuild(message.error));
    });
    worker.once('error', (error) => reject(error));
    worker.once('exit', (code) => reject(new Error(`the ${task} worker stopped (exit code ${code}) before answering`)));
  }).finally(() => {
    port1.close();
    void worker.terminate();
  });
}

/** The worker's error as the same class in this thread (InputRejected keeps its code and details). */
function rebuild(error: WorkerError): Error {
  if (error.name === 'InputRejected' && error.code) {
    return new InputRejected(error.code, parseCodedMessage(error.message).text, error.details ? { details: error.details } : undefined);
  }
  const rebuilt = new Error(error.message);
  rebuilt.name = error.name;
  return rebuilt;
}
