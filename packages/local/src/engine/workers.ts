/**
 * CPU-heavy checks in worker threads, in local mode. On AWS each step is its
 * own Lambda; locally every handler shares the bridge's event loop, so
 * parsing, validating and dissolving a large GeoJSON (seconds) or inspecting
 * a GeoTIFF would stall the other jobs and the progress display. Each call
 * runs in a worker (cpu-worker.mjs, kept for the next call) with a heap limit
 * and a time limit: a file that still went wrong costs that worker, and its
 * job ends REJECTED (INPUT_TOO_COMPLEX), not the bridge. (V8 can still abort
 * the whole process when one allocation outgrows a worker's heap at once:
 * the checks themselves bound their sizes before building anything.)
 *
 * The GeoTIFF's ranged reads stay in this thread (the source is an S3 client
 * or a file): the worker asks for byte ranges over a MessagePort.
 */
import { availableParallelism } from 'node:os';
import { MessageChannel, Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { useAoiParser, type ParsedAoi, type ParseAoiOptions } from 'mapflow-bridge/functions/aoi/index.ts';
import { useGeoTiffInspector, type GeoTiffInfo, type InspectOptions, type RangeSource } from 'mapflow-bridge/functions/geotiff/index.ts';
import { InputRejected, parseCodedMessage } from 'mapflow-bridge/functions/core/errors.ts';

const ENTRY = fileURLToPath(new URL('./cpu-worker.mjs', import.meta.url));

/** Heap limit of one worker, MiB: the largest accepted input needs well under half of it (packages/bench/hostile.ts). */
export const WORKER_HEAP_LIMIT_MB = 512;

/**
 * Workers running at once; the others queue. Each holds a parsed file (a
 * 20 MiB GeoJSON is a few hundred MiB of objects), so many at once would
 * add up: a corpus of 49 hostile files took the bridge to 1.1 GB without this.
 * One core is left to the bridge's own loop.
 */
export const WORKER_CONCURRENCY = Math.max(1, Math.min(2, availableParallelism() - 1));

/**
 * Longest one check may run in a worker, ms: the Lambda timeout of the
 * functions that run these checks on AWS (120 s). A check that overruns is
 * stopped (the worker is terminated mid-task) and its job REJECTED.
 */
export const WORKER_TIME_LIMIT_MS = 120_000;

/**
 * A worker is kept for the next task only after an input this small: V8
 * keeps the heap a big parse grew (two kept workers after the hostile corpus
 * held the bridge at 1.19 GB), and only small files need the saved start-up.
 */
export const REUSE_AFTER_INPUT_BYTES = 1024 * 1024;

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
let timeLimitMs = WORKER_TIME_LIMIT_MS;

/**
 * Routes parseAoiOffThread and inspectGeoTiff through worker threads
 * (idempotent). Every GeoJSON goes to a worker, small ones too (issue 23: a
 * 65 KB file of two interlocking combs held the bridge's loop for 38 s); the
 * workers are kept and reused, so a small file pays a message round trip,
 * not a worker's start.
 */
export function installCpuWorkers(options: { timeLimitMs?: number } = {}): void {
  timeLimitMs = options.timeLimitMs ?? WORKER_TIME_LIMIT_MS;
  if (installed) return;
  installed = true;
  useAoiParser(async (file: string | Uint8Array, options: ParseAoiOptions) => runTask<ParsedAoi>('parseAoi', { file, options }));
  useGeoTiffInspector((source: RangeSource, options: InspectOptions) => runTask<GeoTiffInfo>('inspectGeoTiff', { size: source.size, options }, source));
}

/** Back to in-thread checks, and the idle workers stopped (tests). */
export function uninstallCpuWorkers(): void {
  installed = false;
  useAoiParser(undefined);
  useGeoTiffInspector(undefined);
  for (const worker of idle.splice(0)) void worker.terminate();
}

interface WorkerError {
  name: string;
  message: string;
  code?: string;
  details?: Record<string, unknown>;
}

type Answer<T> = { id: number; ok: true; result: T } | { id: number; ok: false; error: WorkerError };

/** Workers waiting for their next task (at most WORKER_CONCURRENCY). */
const idle: Worker[] = [];
let nextTaskId = 0;

function runTask<T>(task: string, args: Record<string, unknown>, source?: RangeSource): Promise<T> {
  const file = args.file as string | Uint8Array | undefined;
  const inputBytes = source ? source.size : typeof file === 'string' ? file.length * 3 : (file?.byteLength ?? 0);
  return slot(() => runInWorker<T>(task, args, source, inputBytes <= REUSE_AFTER_INPUT_BYTES));
}

function startWorker(): Worker {
  // workerData must be an object: web-worker (a geotiff.js dependency) destructures it when loaded in a worker.
  const worker = new Worker(ENTRY, { workerData: { role: 'mapflow-bridge cpu worker' }, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_LIMIT_MB } });
  worker.unref(); // an idle worker does not keep the process alive
  return worker;
}

/**
 * One task in an idle worker (or a new one). The worker goes back to the
 * idle list when it answers; one that overran its time is terminated, one
 * that died (out of memory) is dropped, and the task is rejected with
 * INPUT_TOO_COMPLEX: the job ends REJECTED, the bridge goes on.
 */
function runInWorker<T>(task: string, args: Record<string, unknown>, source: RangeSource | undefined, keep: boolean): Promise<T> {
  const worker = idle.pop() ?? startWorker();
  const id = nextTaskId++;
  const { port1, port2 } = new MessageChannel();
  if (source) {
    port1.on('message', ({ id: readId, offset, length }: { id: number; offset: number; length: number }) => {
      source.read(offset, length).then(
        (data) => port1.postMessage({ id: readId, data }),
        (error: unknown) => port1.postMessage({ id: readId, error: { name: (error as Error)?.name ?? 'Error', message: (error as Error)?.message ?? String(error) } }),
      );
    });
  }
  let reusable = false;
  let timer: NodeJS.Timeout | undefined;
  let detach = () => undefined as void;
  return new Promise<T>((resolve, reject) => {
    const onMessage = (message: Answer<T>) => {
      if (message.id !== id) return;
      reusable = true;
      if (message.ok) resolve(message.result);
      else reject(rebuild(message.error));
    };
    const onError = (error: Error) => reject(overrun(task, (error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : undefined, error));
    const onExit = (code: number) => reject(overrun(task, 'memory', new Error(`the ${task} worker stopped (exit code ${code}) before answering`)));
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
    timer = setTimeout(() => reject(overrun(task, 'time')), timeLimitMs);
    worker.postMessage({ id, task, args, port: port2 }, [port2]);
    // This task's listeners go whatever the outcome, so the worker can serve the next one.
    detach = () => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
  }).finally(() => {
    clearTimeout(timer);
    detach();
    port1.close();
    if (reusable && keep && idle.length < WORKER_CONCURRENCY) idle.push(worker);
    else void worker.terminate();
  });
}

/** A check stopped for its time or memory: the file's fault, so a rejection with a code, not a crash. */
function overrun(task: string, what: 'time' | 'memory' | undefined, cause?: Error): InputRejected {
  const check = task === 'parseAoi' ? 'validating and merging the polygons' : 'checking the image';
  const limit =
    what === 'time'
      ? `took longer than ${timeLimitMs / 1000} s`
      : what === 'memory'
        ? `needed more than ${WORKER_HEAP_LIMIT_MB} MiB of memory`
        : `failed (${cause?.message ?? 'the worker stopped'})`;
  const fix = task === 'parseAoi' ? 'simplify the polygons or merge them in a GIS first, or split the file' : 'export the image again from a GIS (e.g. gdal_translate -co COMPRESS=DEFLATE -co TILED=YES)';
  return new InputRejected('INPUT_TOO_COMPLEX', `${check} ${limit}, the bridge's limit for one file: ${fix}`, {
    ...(cause && { cause }),
    details: { task, limit: what ?? 'error', timeLimitMs, heapLimitMb: WORKER_HEAP_LIMIT_MB },
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
