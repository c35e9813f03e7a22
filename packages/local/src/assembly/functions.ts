/**
 * The local Lambda service: runs each bridge function from its code asset in
 * the cloud assembly (the `index.mjs` that `cdk deploy` uploads), never from
 * the sources.
 *
 * Each execution environment is a worker thread (lambda-runtime.mjs), or a
 * child process for the functions that decode untrusted bytes (isolation
 * 'process': memory bounded heap and off-heap alike, see Environment), with:
 * - the template's Environment (resolved to the local resources), the
 *   per-service endpoint variables of the local services and the function's
 *   own credentials, as its whole `process.env`;
 * - the template's MemorySize as its heap limit (a thread's: at most
 *   THREAD_HEAP_LIMIT_MB, its heap being the bridge process's memory);
 * - one invocation at a time, kept warm afterwards for the next one, as
 *   Lambda keeps an execution environment; more environments start when
 *   invocations overlap, at most the function's reserved concurrency (or
 *   `maxEnvironments`), the others wait their turn;
 * - the template's Timeout: an invocation still running at its timeout is
 *   stopped (the environment is discarded) and fails with `Sandbox.Timedout`,
 *   as Lambda names it (a Task state may see it as `Lambda.Unknown`:
 *   asStepFunctionsReports);
 * - a handler's error answered as the Node.js runtime answers it,
 *   `{ errorType, errorMessage, trace }` (lambda-runtime.mjs, describe).
 * What the handlers print (logs, EMF metrics) goes to `<logDir>/<function>.log`,
 * CloudWatch Logs' place.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createWriteStream, existsSync, mkdirSync, readFileSync, type WriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import path from 'node:path';
import { totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { LambdaFunctionError } from '../engine/lambda.ts';
import type { AssemblyFunctionSpec } from './template.ts';
import { countedTimeout } from './standstill.ts';

const RUNTIME = fileURLToPath(new URL('./lambda-runtime.mjs', import.meta.url));

/** The Node.js major of the template's runtime (nodejs24.x, lib/private/defaults.ts). */
export const LAMBDA_NODE_MAJOR = 24;

let functionNode: string | undefined;

/**
 * The Node.js binary the functions' processes run on: the template's runtime
 * is nodejs24.x, whatever Node runs the bridge (a system Node 20 or 22). The
 * project pins it as its `node` devDependency (the npm package `node`, whose
 * bin/node is that release); resolved from where that package is installed.
 * Without it: this process's own binary, with a one-line warning unless it is
 * Node 24 itself. (Worker threads, the light steps, run in this process: on its Node.)
 */
export function functionNodePath(): string {
  functionNode ??= resolveFunctionNode(createRequire(import.meta.url).resolve, (line) => process.stderr.write(`${line}\n`));
  return functionNode;
}

/** functionNodePath's search, not cached: `resolve` finds a package's file, `warn` is told the fallback. */
export function resolveFunctionNode(resolve: (request: string) => string, warn: (line: string) => void): string {
  let found: string | undefined;
  try {
    const dir = path.dirname(resolve('node/package.json'));
    found = [path.join(dir, 'bin', 'node'), path.join(dir, 'bin', 'node.exe')].find((file) => existsSync(file));
  } catch {
    found = undefined;
  }
  if (!found && !process.version.startsWith(`v${LAMBDA_NODE_MAJOR}.`)) {
    warn(`local bridge: the decoding functions' processes run on this Node ${process.version}, not on Node ${LAMBDA_NODE_MAJOR} as nodejs${LAMBDA_NODE_MAJOR}.x does: the node@${LAMBDA_NODE_MAJOR} package is not installed (npm install --save-dev node@${LAMBDA_NODE_MAJOR})`);
  }
  return found ?? process.execPath;
}

/**
 * Environments of one function at once when the template reserves no
 * concurrency (the machine, not AWS, is the limit). Two: the steps are short
 * and mostly wait on I/O, so a third invocation waits a few milliseconds for
 * a warm environment rather than starting a cold one (a worker, its bundle,
 * its SDK clients: 0.15-0.3 s of CPU on this 2-core machine). With 8, the
 * e2e and reliability suites started 1,192 environments for 2,260
 * invocations and took 831 s of CPU; with 2, 976 for 2,326 and 769 s, and
 * the hostile corpus's bridge peaked at 417 MiB instead of 590 MiB (fewer
 * warm threads in a burst). A function of 1 GB or more (a decoding step) may
 * hold a parsed input of hundreds of MB in each of its environments, so a
 * batch of large files cannot add up past two either.
 */
export const DEFAULT_MAX_ENVIRONMENTS = 2;

/** How long an extra idle process environment is kept warm (the first one stays until close; a thread's extras go at once: give). */
const IDLE_MS = 60_000;

/**
 * What the environments of one bridge may hold at once, in MiB (issue 38):
 * each environment counts its function's MemorySize from the template while
 * it is invoked (a decoding function's child process: its resident memory,
 * held there by the watchdog; a light function's worker thread: its V8 heap,
 * held below it by resourceLimits, THREAD_HEAP_LIMIT_MB), and while it waits warm only what it may
 * keep then (IDLE_PROCESS_MB, IDLE_THREAD_MB: above those it is retired after
 * its invocation, not kept). So the tree of processes holds at most the
 * bridge's own process, plus the budget: a sum computed from the template,
 * not a sample. (A thread's Buffers, outside its heap, are the one thing not
 * bounded: the light functions hold none of size.)
 *
 * The default, defaultEnvironmentBudgetMb(): half the machine's memory, at
 * most DEFAULT_ENVIRONMENT_BUDGET_CAP_MB (4,096 MiB: two decoding processes
 * of 1,024 MiB invoked at once, as the 24 units of before allowed, and as
 * much again for the light steps), at least MIN_DEFAULT_ENVIRONMENT_BUDGET_MB
 * (2,048). `start` and `local run` take another with
 * `--memory-budget <MiB>` (or MAPFLOW_BRIDGE_MEMORY_BUDGET_MB).
 *
 * A share of it is the light steps' alone (issue 39): the decoding processes
 * together may hold at most the budget less lightReserveMb (default: half).
 * A Store Results waiting 45 s on Mapflow's result download holds its 1,024
 * MiB all along; before, two of them held the whole budget (24 units of 24),
 * and dispatch, polls and Finish Part queued behind them for minutes. Now
 * they hold the decoding share only, and the light steps go on in theirs.
 * The light steps may use the decoding share too while no decoding
 * environment waits for it: once one waits, the light ones stop growing past
 * their reserve, so the one waiting gets its room as they finish.
 *
 * Waiters are served in the order they came, within each share: a resumed
 * job's step that waits keeps its place before the steps that came after it
 * (a light one can pass a decoding one that waits for its share, never one
 * of its own kind). A new environment first lets idle ones go to make room
 * (the heaviest first; a decoding one only decoding ones, which is what its
 * share lacks); when every one is busy it waits for one to finish: no
 * invocation waits on another, so this cannot deadlock, as an account's
 * concurrency limit bounds them on AWS.
 *
 * Before (units, not MiB): 24 units, a decoding process 12 while invoked and
 * 4 while warm, a thread 1. The figures that chose them still hold in MiB: a
 * light step that evicted another function's warm thread cost about 1.9 s of
 * CPU per small job against 0.33 s with every light function warm (`npm run
 * bench -- --warm-jobs 6`), so idle environments weigh their idle bound only.
 */
export const DEFAULT_ENVIRONMENT_BUDGET_CAP_MB = 4096;

/** What a decoding function's process may hold while it waits warm, MiB: RETIRE_ABOVE_RSS_BYTES (a fresh one holds 60-90 MB). */
export const IDLE_PROCESS_MB = 128;
/** What a light function's thread may hold while it waits warm, MiB: RETIRE_THREAD_ABOVE_HEAP_BYTES (27-43 MB after a small job). */
export const IDLE_THREAD_MB = 64;

/**
 * The smallest default: a decoding function of 1,024 MiB in the decoding
 * half, and as much for the light steps (below it the template's functions
 * could not run at all).
 */
export const MIN_DEFAULT_ENVIRONMENT_BUDGET_MB = 2048;

/** The default budget on a machine of `totalBytes` of memory: half of it, at most DEFAULT_ENVIRONMENT_BUDGET_CAP_MB, at least MIN_DEFAULT_ENVIRONMENT_BUDGET_MB. */
export function defaultEnvironmentBudgetMb(totalBytes = totalmem()): number {
  return Math.max(MIN_DEFAULT_ENVIRONMENT_BUDGET_MB, Math.min(DEFAULT_ENVIRONMENT_BUDGET_CAP_MB, Math.floor(totalBytes / 1024 ** 2 / 2)));
}

/** The light steps' own share of a budget of `maxMb` by default: half. */
export function defaultLightReserveMb(maxMb: number): number {
  return Math.floor(maxMb / 2);
}

/** An owner of environments in a budget (a LocalFunction). */
interface BudgetOwner {
  /** Lets one idle environment go; the MiB it held (0: none was idle). */
  evictIdle(): number;
  /** MiB an idle environment of this owner holds (the heaviest are let go first). */
  readonly idleWeight: number;
  /** A decoding function's (process environments: the decoding share). */
  readonly heavy: boolean;
}

interface Waiter {
  weight: number;
  heavy: boolean;
  owner?: BudgetOwner;
  grant(): void;
  cancel(): void;
}

export class EnvironmentBudget {
  private live = 0;
  /** MiB held by process environments (the decoding share), invoked or warm. */
  private heavyLive = 0;
  /** MiB of environments let go whose exit has not released them yet (not to be let go twice over). */
  private evicting = 0;
  private evictingHeavy = 0;
  private peak_ = 0;
  private peakByProcesses_ = 0;
  private readonly waiters: Waiter[] = [];
  private readonly owners = new Set<BudgetOwner>();
  /** MiB only the light steps (threads) may hold: the decoding processes together hold at most max less this. */
  readonly lightReserve: number;

  /** `max` MiB; an environment holds its function's MemorySize while invoked, its idle bound while it waits warm. */
  constructor(
    readonly max = defaultEnvironmentBudgetMb(),
    lightReserve = defaultLightReserveMb(max),
  ) {
    if (!(Number.isInteger(max) && max > 0)) throw new RangeError(`the environments' memory budget must be a whole number of MiB above 0, not ${max}`);
    this.lightReserve = Math.max(0, Math.min(max, Math.floor(lightReserve)));
  }

  /** What the decoding processes may hold together, MiB. */
  get heavyShare(): number {
    return this.max - this.lightReserve;
  }

  register(owner: BudgetOwner): void {
    this.owners.add(owner);
  }

  /** `weight` MiB, once free, in turn (in order of arrival within its share); idle environments are let go to make room. */
  async acquire(weight: number, heavy = false, owner?: BudgetOwner): Promise<void> {
    if (this.tryAcquire(weight, heavy)) return;
    await new Promise<void>((grant, reject) => {
      const cancel = () => reject(new LambdaFunctionError('Lambda.ServiceException', 'the function was stopped while it waited for room in the memory budget'));
      this.waiters.push({ weight, heavy, grant, cancel, ...(owner ? { owner } : {}) });
      this.makeRoom();
    });
  }

  /** MiB held now, by environments invoked or waiting warm (tests). */
  get used(): number {
    return this.live;
  }

  /** MiB held now by process environments (tests). */
  get usedByProcesses(): number {
    return this.heavyLive;
  }

  /** MiB only when they are free now and no waiter of the same share came first (prewarming never lets another environment go). */
  tryAcquire(weight: number, heavy = false): boolean {
    if (this.waiters.some((waiter) => waiter.heavy === heavy)) return false;
    if (!this.fits(weight, heavy, this.waiters.some((waiter) => waiter.heavy))) return false;
    this.take(weight, heavy);
    return true;
  }

  /** `weight` MiB of an environment that stops now (its exit, or it waits warm with less); `evicted`: it was let go for room. */
  release(weight: number, heavy = false, evicted = false): void {
    this.live = Math.max(0, this.live - weight);
    if (heavy) this.heavyLive = Math.max(0, this.heavyLive - weight);
    if (evicted) this.evicting = Math.max(0, this.evicting - weight);
    if (evicted && heavy) this.evictingHeavy = Math.max(0, this.evictingHeavy - weight);
    this.serve();
  }

  /** An environment became idle: a waiter may now let it go. */
  idleNotice(): void {
    this.serve();
    this.makeRoom();
  }

  /** The waiters of `owner` give up (a function closing); the others keep their place. */
  cancel(owner: BudgetOwner): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i] as Waiter;
      if (waiter.owner !== owner) continue;
      this.waiters.splice(i, 1);
      waiter.cancel();
    }
    this.serve();
  }

  private take(weight: number, heavy: boolean): void {
    this.live += weight;
    if (heavy) this.heavyLive += weight;
    this.peak_ = Math.max(this.peak_, this.live);
    this.peakByProcesses_ = Math.max(this.peakByProcesses_, this.heavyLive);
  }

  /** The most MiB held at once so far (the bench's computed peak; tests). */
  get peak(): number {
    return this.peak_;
  }

  /** The most MiB held at once by process environments so far. */
  get peakByProcesses(): number {
    return this.peakByProcesses_;
  }

  /** Whether `weight` fits now: the whole budget, the decoding share, and (a light one while a decoding one waits) the light reserve. */
  private fits(weight: number, heavy: boolean, heavyWaiting: boolean): boolean {
    if (this.live + weight > this.max) return false;
    if (heavy) return this.heavyLive + weight <= this.heavyShare;
    // While a decoding environment waits, the light ones do not grow past their reserve (it gets its room as they finish).
    return !heavyWaiting || this.live - this.heavyLive + weight <= Math.max(this.lightReserve, weight);
  }

  /** Grants the waiters that fit, in order; one that does not fit holds back those of its share behind it, not the other share. */
  private serve(): void {
    const blocked = { heavy: false, light: false };
    for (let i = 0; i < this.waiters.length; ) {
      const waiter = this.waiters[i] as Waiter;
      const share = waiter.heavy ? 'heavy' : 'light';
      const heavyAhead = this.waiters.slice(0, i).some((w) => w.heavy);
      if (!blocked[share] && this.fits(waiter.weight, waiter.heavy, heavyAhead)) {
        this.waiters.splice(i, 1);
        this.take(waiter.weight, waiter.heavy);
        waiter.grant();
        continue;
      }
      blocked[share] = true;
      i++;
    }
  }

  /**
   * Lets idle environments go for the first waiter of each share, as many as
   * it lacks (those already let go and not yet exited counted), the heaviest
   * first: for a decoding one whose share is short, decoding ones only; for a
   * light one held to its reserve, light ones only.
   */
  private makeRoom(): void {
    for (const heavy of [true, false]) {
      const at = this.waiters.findIndex((waiter) => waiter.heavy === heavy);
      if (at < 0) continue;
      const { weight } = this.waiters[at] as Waiter;
      const heavyAhead = this.waiters.slice(0, at).some((waiter) => waiter.heavy);
      const lightLive = this.live - this.heavyLive;
      const lightEvicting = this.evicting - this.evictingHeavy;
      let short = this.live - this.evicting + weight - this.max;
      let shortShare = heavy
        ? this.heavyLive - this.evictingHeavy + weight - this.heavyShare
        : heavyAhead
          ? lightLive - lightEvicting + weight - Math.max(this.lightReserve, weight)
          : 0;
      for (const owner of [...this.owners].sort((x, y) => y.idleWeight - x.idleWeight)) {
        if (shortShare > 0 ? owner.heavy !== heavy : short <= 0) continue;
        for (let freed = 1; (short > 0 || shortShare > 0) && freed > 0; ) {
          freed = owner.evictIdle();
          this.evicting += freed;
          if (owner.heavy) this.evictingHeavy += freed;
          short -= freed;
          if (owner.heavy === heavy) shortShare -= freed;
        }
      }
    }
  }
}

export interface LocalFunctionOptions {
  spec: AssemblyFunctionSpec;
  /** The whole environment of the function's process (template + endpoints + credentials). */
  environment: Record<string, string>;
  /** Where the function's output goes (omitted: discarded). */
  logDir?: string;
  /** Told once when the function's log file cannot be written (a full disk): the bridge goes on without it. */
  onLogError?: (message: string) => void;
  /** Also hands the function's output here (`local run --verbose`: stderr). */
  output?: (chunk: Buffer) => void;
  /** V8's compile cache for the bundles (cheaper cold starts); omitted: none. */
  compileCacheDir?: string;
  maxEnvironments?: number;
  /** Shared by the functions of one bridge (default: one of its own). */
  budget?: EnvironmentBudget;
  /** Told when an invocation runs once more because its process was killed from outside (one line). */
  onOutsideKill?: (message: string) => void;
  /** Told when an invocation starts; the function it returns when it ends (the steps in flight, packages/local/src/crash-resumes.ts). */
  onInvoke?: (event: unknown, bridgeFunction: string) => () => void;
  /** 'process': each environment a child process with its memory bounded (the functions that decode untrusted bytes); default 'thread'. */
  isolation?: 'thread' | 'process';
  /**
   * Who holds a process environment's resident memory to its MemorySize:
   * 'proc', this process reading the child's /proc status (Linux); 'self',
   * the child itself, from a watchdog thread of its own (any platform).
   * Default: 'proc' where /proc can be read, else 'self' (see memoryWatchOf).
   */
  memoryWatch?: MemoryWatch;
}

export type MemoryWatch = 'proc' | 'self';

/**
 * How a process environment's memory is watched on this machine: from here
 * through /proc on Linux (nothing added to the child); elsewhere (macOS,
 * Windows: no /proc) by the child itself, a watchdog thread that reads
 * process.memoryUsage.rss() (the whole process's resident memory, whichever
 * thread asks; libuv reads it from the kernel on every platform) and kills
 * its own process above the limit. A thread, because a decode blocks its
 * process's main thread; not on Linux as well, because it costs each
 * environment about 18 MB (measured: Node 24, x64).
 */
export function memoryWatchOf(requested?: MemoryWatch): MemoryWatch {
  return requested ?? (residentBytes(process.pid) === undefined ? 'self' : 'proc');
}

/** The line a process environment's own watchdog writes to its stderr before it kills the process (lambda-runtime.mjs). */
export const SELF_WATCH_MARKER = 'mapflow-bridge: resident memory above MemorySize:';

interface Pending {
  resolve(payload: string): void;
  reject(error: Error): void;
}

/**
 * How often a process environment's resident memory is read against its
 * MemorySize, ms. An allocation outruns it by what it can touch in this time
 * (a few hundred MB at most); the kernel's own limits stay the last resort.
 */
export const RSS_WATCH_INTERVAL_MS = 50;

/**
 * A process environment whose resident memory is above this after an
 * invocation is not kept warm: V8 and the allocator keep what a large input
 * grew, and only a new process gives it back. A fresh one holds 60-90 MB
 * (Node and one bundle); at 256 MB the hostile corpus's tree of processes
 * peaked at 938 MiB in one run, against the suite's bound of 1 GiB.
 */
export const RETIRE_ABOVE_RSS_BYTES = 128 * 1024 * 1024;

/**
 * The same for a thread environment, from its isolate's heap and external
 * memory after an invocation: one that handled a large state keeps what it
 * grew, in this process, while it waits idle. A light function's isolate
 * holds 27-43 MB after a small job (V8's total heap size, reserved pages
 * included, with today's bundles; 19-22 MB in the command's process, whose
 * young generation stays at its first size: packages/cli/bin): at 32 MB, Create Processing, Finish Job
 * and Dispatch were retired after nearly every invocation, and each small
 * job after the first cost 1.6-2.4 s of CPU instead of 0.38 s
 * (`npx tsx packages/bench/warm-jobs.ts 4`). (The hostile corpus through local run,
 * with up to 8 environments per function: the bridge's peak 595-639 MiB
 * with threads kept up to 48 MB, 500-533 MiB up to 16 MB.)
 */
export const RETIRE_THREAD_ABOVE_HEAP_BYTES = 64 * 1024 * 1024;

/**
 * A thread environment's young generation, MB: V8's default semi-spaces
 * (16 MB each on 64-bit) stay resident in every isolate once touched, and
 * warm idle threads (as many as the memory budget keeps warm) would keep
 * them all; the light functions allocate little per invocation.
 */
export const THREAD_YOUNG_GENERATION_MB = 4;

/**
 * The most V8 heap (old generation) a thread environment may hold, MiB: its
 * function's MemorySize, but never more than this. A thread's heap is the
 * bridge's own process's memory (issue 38: that process stays under 512 MB),
 * and the default budget lets four to eight light steps of 512 MiB run at once: with
 * MemorySize as their limit, a hostile input could grow them to 2-4 GB in it.
 * The light functions hold small state: the largest measured is Create
 * Processing sending an AOI of the most positions accepted (MAX_POSITIONS, a
 * 99,999-vertex circle), 49 MB of heap; idle ones hold 19-22 MB. A thread
 * that needs more ends its invocation with Runtime.OutOfMemory
 * (ERR_WORKER_OUT_OF_MEMORY), the bridge goes on and the job ends with its
 * report, as a process environment past its MemorySize does.
 */
export const THREAD_HEAP_LIMIT_MB = 128;

/** The flags that load a module before the program: `--import x`, `--import=x`, and the CommonJS and loader forms. */
const PRELOAD_FLAGS: ReadonlySet<string> = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);

/** tsx, by its package name or a path into its folder. */
function isTsx(specifier: string): boolean {
  return specifier === 'tsx' || specifier.startsWith('tsx/') || /[\\/]node_modules[\\/]tsx[\\/]/.test(specifier);
}

/**
 * This process's Node flags for a thread environment, without tsx's loader,
 * or undefined when there is none to take out (the thread then inherits them
 * all, as by default: a user's instrumentation, a test's module recorder). A
 * bridge run as `node --import tsx` handed tsx to every thread: the bundles
 * are JavaScript, and tsx's hooks were a fifth of each cold start (one
 * GeoJSON job: 8.8 s of CPU against 11.6 s, docs/local.md).
 */
export function threadExecArgv(execArgv: readonly string[] = process.execArgv): string[] | undefined {
  const kept: string[] = [];
  for (let index = 0; index < execArgv.length; index++) {
    const flag = execArgv[index]!;
    const equals = flag.indexOf('=');
    const name = equals === -1 ? flag : flag.slice(0, equals);
    if (PRELOAD_FLAGS.has(name)) {
      const value = equals === -1 ? execArgv[index + 1] : flag.slice(equals + 1);
      if (value !== undefined && isTsx(value)) {
        if (equals === -1) index++;
        continue;
      }
    }
    kept.push(flag);
  }
  return kept.length === execArgv.length ? undefined : kept;
}

/**
 * A Worker with these flags; with this process's own if Node refuses them.
 * An explicit list may not hold V8 or process-wide options (--stack-size,
 * --max-old-space-size), which an inherited one may.
 */
function workerWithFlags(entry: string, execArgv: string[] | undefined, options: WorkerOptions): Worker {
  if (execArgv) {
    try {
      return new Worker(entry, { ...options, execArgv });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw error;
    }
  }
  return new Worker(entry, options);
}

/** A thread environment's old-generation limit for a function of `memoryMb` (THREAD_HEAP_LIMIT_MB). */
export function threadHeapLimitMb(memoryMb: number): number {
  return Math.max(1, Math.min(Math.floor(memoryMb), THREAD_HEAP_LIMIT_MB));
}

type Message = { type: string; id?: number; payload?: string; error?: { errorType: string; errorMessage: string; trace?: string[] }; rss?: number };

/** Resident memory of a process, bytes, from the kernel (undefined when unknown: not Linux, or it has exited). */
export function residentBytes(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One execution environment: a worker thread that imported the bundle, or
 * (options.isolation 'process') a child process. A worker's heap is limited
 * (resourceLimits) but what it allocates outside the heap (Buffers,
 * ArrayBuffers, a decoder's tables) is not, and V8 may abort the whole
 * process when a worker's heap overflows at once. A child process is bounded
 * as a Lambda sandbox is: its heap by --max-old-space-size, its resident
 * memory (heap and off-heap alike) by a watchdog at the template's
 * MemorySize (this process reading /proc on Linux, the child's own thread
 * elsewhere: memoryWatchOf), and whatever ends it (the watchdog, a native abort, the
 * kernel) ends only it: the invocation fails with Runtime.OutOfMemory or
 * Runtime.ExitError, and the bridge goes on.
 */
class Environment {
  private readonly worker?: Worker;
  private readonly child?: ChildProcess;
  readonly ready: Promise<void>;
  private pending?: Pending & { id: number };
  private exited_ = false;
  private exitReason?: Error;
  /** Resolves when the environment has exited (terminated, crashed or stopped). */
  readonly exited: Promise<void>;
  private nextId = 0;
  private watchdog?: NodeJS.Timeout;
  /** A process environment's resident memory as it reported it with its last answer (bytes; read where /proc is not). */
  private reportedRss?: number;
  /** Who reads a process environment's memory (memoryWatchOf). */
  private readonly watch: MemoryWatch;
  /** The end of what the process wrote to stderr (V8's fatal errors name the heap). */
  private stderrTail = '';
  /** Stopped from here (let go, retired, closed, timed out): not a death from outside. */
  private stopping = false;
  /** MiB of the budget this environment holds now: its function's MemorySize while invoked, its idle bound while it waits warm. */
  units = 0;

  constructor(private readonly options: LocalFunctionOptions, log?: WriteStream) {
    const output = options.output;
    const { spec } = options;
    const settings = {
      modulePath: moduleOf(spec),
      exportName: spec.exportName,
      functionName: spec.functionName,
      functionArn: spec.arn,
      memoryMb: spec.memoryMb,
      logGroupName: `/aws/lambda/${spec.functionName}`,
      compileCacheDir: options.compileCacheDir,
    };
    let stdout: Readable;
    let stderr: Readable;
    const watch = (this.watch = memoryWatchOf(options.memoryWatch));
    if (options.isolation === 'process') {
      const limit = spec.memoryMb * 1024 * 1024;
      const selfWatch = watch === 'self' ? { limitBytes: limit, intervalMs: RSS_WATCH_INTERVAL_MS, marker: SELF_WATCH_MARKER } : undefined;
      this.child = fork(RUNTIME, [JSON.stringify({ ...settings, selfWatch })], {
        env: options.environment,
        // The template's runtime, nodejs24.x, whatever Node runs the bridge.
        execPath: functionNodePath(),
        // Not this process's flags (a loader, --import): only the heap limit, as the Lambda runtime sets it from MemorySize.
        execArgv: [`--max-old-space-size=${spec.memoryMb}`],
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        serialization: 'advanced',
      });
      stdout = this.child.stdout as Readable;
      stderr = this.child.stderr as Readable;
      const pid = this.child.pid;
      if (watch === 'proc') {
        this.watchdog = setInterval(() => {
          const rss = residentBytes(pid);
          if (rss === undefined || rss <= limit || this.exited_) return;
          this.exitReason = outOfMemory(spec.memoryMb, `resident memory ${Math.round(rss / 1024 ** 2)} MB`);
          this.child?.kill('SIGKILL');
        }, RSS_WATCH_INTERVAL_MS);
        this.watchdog.unref();
      }
      stderr.on('data', (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4096);
      });
    } else {
      this.worker = workerWithFlags(RUNTIME, threadExecArgv(), {
        env: options.environment,
        resourceLimits: { maxOldGenerationSizeMb: threadHeapLimitMb(spec.memoryMb), maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB },
        stdout: true,
        stderr: true,
        workerData: settings,
      });
      stdout = this.worker.stdout;
      stderr = this.worker.stderr;
    }
    if (log || output) {
      // Written, not piped: a pipe per environment would pile listeners on the one log stream.
      const write = (chunk: Buffer) => {
        log?.write(chunk);
        output?.(chunk);
      };
      stdout.on('data', write);
      stderr.on('data', write);
    } else {
      stdout.resume();
      if (!this.child) stderr.resume();
    }
    const events = (this.worker ?? this.child) as NodeJS.EventEmitter;
    // A child's end is 'close': after its exit AND its stdio's end, so the last lines it wrote (V8's fatal error, its own watchdog's) are read.
    const ended = this.child ? 'close' : 'exit';
    this.exited = new Promise<void>((resolve) => events.once(ended, () => resolve()));
    this.ready = new Promise<void>((resolve, reject) => {
      events.on('message', (message: Message) => {
        if (message.type === 'ready') resolve();
        else if (message.type === 'init-error') reject(new LambdaFunctionError(message.error?.errorType ?? 'Runtime.ImportModuleError', message.error?.errorMessage ?? ''));
        else if (this.pending && message.id === this.pending.id) {
          if (typeof message.rss === 'number') this.reportedRss = message.rss;
          const pending = this.pending;
          this.pending = undefined;
          if (message.type === 'result') pending.resolve(message.payload ?? 'null');
          else pending.reject(new LambdaFunctionError(message.error?.errorType ?? 'Error', message.error?.errorMessage ?? '', message.error?.trace ? { trace: message.error.trace } : undefined));
        }
      });
      events.on('error', (error: Error & { code?: string }) => {
        this.exitReason ??=
          error.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? outOfMemory(threadHeapLimitMb(spec.memoryMb), `heap: a local thread environment's limit, within its MemorySize of ${spec.memoryMb} MB`, error)
            : new LambdaFunctionError('Runtime.ExitError', `Runtime exited with error: ${error.name}: ${error.message}`, { cause: error });
      });
      events.on(ended, (code: number | null, signal?: NodeJS.Signals | null) => {
        this.exited_ = true;
        clearInterval(this.watchdog);
        const selfWatched = this.stderrTail.lastIndexOf(SELF_WATCH_MARKER);
        if (!this.exitReason && selfWatched >= 0) {
          const bytes = Number(/^\s*(\d+)/.exec(this.stderrTail.slice(selfWatched + SELF_WATCH_MARKER.length))?.[1]);
          this.exitReason = outOfMemory(spec.memoryMb, `resident memory ${Number.isFinite(bytes) ? Math.round(bytes / 1024 ** 2) : '?'} MB, measured by the process itself`);
        }
        if (!this.exitReason && /heap out of memory|Reached heap limit|Allocation failed/i.test(this.stderrTail)) this.exitReason = outOfMemory(spec.memoryMb, 'heap');
        const status = signal ? `signal: ${signal}` : `exit status ${code}`;
        const reason = this.exitReason ?? new LambdaFunctionError('Runtime.ExitError', `Runtime exited with error: ${status}`);
        if (!this.exitReason && this.child && !this.stopping) noteKilledFromOutside(reason, signal);
        reject(reason);
        this.pending?.reject(reason);
        this.pending = undefined;
      });
    });
    this.ready.catch(() => undefined);
  }

  /** A thread environment's isolate: heap and external memory, bytes (undefined for a process, or when it has exited). */
  async heapBytes(): Promise<number | undefined> {
    if (!this.worker || this.exited_) return undefined;
    const heap = await this.worker.getHeapStatistics();
    return heap.total_heap_size + heap.external_memory;
  }

  /** Resident memory of a process environment, bytes: from /proc, else as it reported it after its last invocation (undefined for a thread: it shares this process's). */
  get residentBytes(): number | undefined {
    if (!this.child || this.exited_) return undefined;
    return this.watch === 'proc' ? residentBytes(this.child.pid) : this.reportedRss;
  }

  get alive(): boolean {
    return !this.exited_;
  }

  invoke(event: unknown, requestId: string): Promise<string> {
    const timeoutMs = this.options.spec.timeoutSeconds * 1000;
    const deadline = Date.now() + timeoutMs;
    const id = ++this.nextId;
    return new Promise<string>((resolve, reject) => {
      // Counted time: a bridge that stood still (SIGSTOP, Ctrl-Z) does not time its invocations out for it (standstill.ts).
      const cancelTimeout = countedTimeout(timeoutMs, () => {
        // As on AWS: the invocation's sandbox is stopped, the next invocation gets a fresh one.
        this.exitReason = new LambdaFunctionError('Sandbox.Timedout', `Task timed out after ${this.options.spec.timeoutSeconds.toFixed(2)} seconds`);
        void this.stop();
      });
      const settle = <T>(work: (value: T) => void) => (value: T) => {
        cancelTimeout();
        work(value);
      };
      this.pending = { id, resolve: settle(resolve), reject: settle(reject) };
      const message = { id, requestId, event, deadline };
      if (this.worker) this.worker.postMessage(message);
      else this.child?.send(message);
    });
  }

  /** A process environment's pid (undefined for a thread). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.exited_) return;
    if (this.worker) await this.worker.terminate();
    else {
      this.child?.kill('SIGKILL');
      await this.exited;
    }
  }
}

/**
 * Signals a process gets from outside, never raises itself: a kill -9 above
 * all (a process environment ignores SIGINT, SIGHUP and SIGTERM, which a
 * Ctrl-C or a closed terminal sends the whole process group: the bridge
 * stops its environments itself, lambda-runtime.mjs). What a process raises
 * itself is not among them (V8's fatal errors and native aborts: SIGABRT,
 * SIGTRAP, SIGSEGV, SIGBUS, SIGILL, SIGFPE), nor are the kills of this
 * bridge's own watchdog or its own self-watch (they set the reason first:
 * Runtime.OutOfMemory), its timeout (Sandbox.Timedout) or its stops.
 * The kernel's out-of-memory killer also sends SIGKILL, which cannot be told
 * from a kill -9: it gets its one retry too, and a second death fails the step.
 */
const OUTSIDE_SIGNALS: ReadonlySet<string> = new Set(['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT']);

const killedFromOutside = new WeakSet<Error>();

/** Marks a process environment's exit error as a death from outside when its signal is one of OUTSIDE_SIGNALS. */
function noteKilledFromOutside(reason: Error, signal: NodeJS.Signals | null | undefined): void {
  if (signal && OUTSIDE_SIGNALS.has(signal)) killedFromOutside.add(reason);
}

/** An invocation's error is the death of its process from outside (noteKilledFromOutside), which one retry may heal. */
export function wasKilledFromOutside(error: unknown): error is LambdaFunctionError {
  return error instanceof LambdaFunctionError && killedFromOutside.has(error);
}

/** Set to 1: Task states see timeouts and out-of-memory as Lambda.Unknown (asStepFunctionsReports). */
export const LAMBDA_UNKNOWN_ENV = 'MAPFLOW_BRIDGE_LAMBDA_UNKNOWN';

/**
 * What a Task state sees of a failed invocation. Step Functions reports
 * unhandled Lambda errors as `Lambda.Unknown`, "out-of-memory errors and
 * function timeouts" among them
 * (docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html),
 * with a plain-text cause that quotes what Lambda returned, where Lambda's
 * runtime names them Runtime.OutOfMemory and Sandbox.Timedout. With
 * `lambdaUnknown`, those two become that Lambda.Unknown (a timeout's payload
 * has no errorType, as Lambda's); every other error, and both without it,
 * stay as the local runtime names them.
 */
export function asStepFunctionsReports(error: unknown, lambdaUnknown: boolean): unknown {
  if (!lambdaUnknown || !(error instanceof LambdaFunctionError)) return error;
  if (error.errorType !== 'Sandbox.Timedout' && error.errorType !== 'Runtime.OutOfMemory') return error;
  const payload = error.errorType === 'Sandbox.Timedout' ? { errorMessage: error.errorMessage } : { errorType: error.errorType, errorMessage: error.errorMessage };
  return new LambdaFunctionError('Lambda.Unknown', error.errorMessage, {
    causeText: `The cause could not be determined because Lambda did not return an error type. Returned payload: ${JSON.stringify(payload)}`,
  });
}

/** The error Lambda reports when a function outgrows its memory. */
function outOfMemory(memoryMb: number, what: string, cause?: Error): LambdaFunctionError {
  return new LambdaFunctionError('Runtime.OutOfMemory', `Runtime exited: the function used more than its ${memoryMb} MB (${what})`, cause ? { cause } : undefined);
}

export class LocalFunction {
  readonly spec: AssemblyFunctionSpec;
  private readonly idle: Environment[] = [];
  private readonly all = new Set<Environment>();
  /** Invocations waiting for a place of this function: handed a warm environment, or woken (undefined) to look again. */
  private readonly queue: ((environment?: Environment) => void)[] = [];
  private readonly max: number;
  private readonly log?: WriteStream;
  private invocations = 0;
  /** Invocations waiting on the budget for a new environment of this function. */
  private starting = 0;
  /** Invocations waiting on the budget to take an idle environment of this function back to its full weight. */
  private upgrading = 0;
  private coldStarts_ = 0;
  private closed = false;
  /** Environments invoked now. */
  private readonly busy = new Set<Environment>();
  /** Environments let go for the budget's room, until their exit releases it. */
  private readonly evicted = new WeakSet<Environment>();
  private readonly budget: EnvironmentBudget;
  /** MiB of the budget an environment of this function takes while it is invoked: the template's MemorySize. */
  readonly weight: number;
  /** MiB it keeps while it waits warm (IDLE_THREAD_MB, IDLE_PROCESS_MB: above those it is retired, not kept). */
  readonly idleWeight: number;
  /** A decoding function's process environments: the budget's decoding share. */
  readonly heavy: boolean;

  constructor(private readonly options: LocalFunctionOptions) {
    this.spec = options.spec;
    this.budget = options.budget ?? new EnvironmentBudget();
    this.heavy = options.isolation === 'process';
    this.weight = Math.max(1, Math.ceil(options.spec.memoryMb));
    // An environment heavier than what its share may hold would wait for room forever.
    const room = this.heavy ? this.budget.heavyShare : this.budget.max;
    if (this.weight > room) {
      throw new RangeError(
        `${options.spec.functionName}: an environment holds up to ${this.weight} MiB (its MemorySize), but the ${this.heavy ? "decoding processes' share of the " : ''}memory budget is ${room} MiB; ` +
          `give a budget of at least ${this.heavy ? this.weight * 2 : this.weight} MiB (--memory-budget)`,
      );
    }
    this.idleWeight = Math.min(this.weight, this.heavy ? IDLE_PROCESS_MB : IDLE_THREAD_MB);
    this.budget.register(this);
    this.max = Math.max(1, options.spec.reservedConcurrency ?? options.maxEnvironments ?? DEFAULT_MAX_ENVIRONMENTS);
    if (options.logDir) {
      mkdirSync(options.logDir, { recursive: true });
      const file = path.join(options.logDir, `${options.spec.functionName}.log`);
      this.log = createWriteStream(file, { flags: 'a' });
      // A full disk (ENOSPC) or a removed folder must not crash the bridge with an unhandled 'error' event:
      // say it once, and the function goes on without its log (CloudWatch Logs would drop nothing, but this is a file).
      let told = false;
      this.log.on('error', (error: NodeJS.ErrnoException) => {
        if (told) return;
        told = true;
        const why = error.code === 'ENOSPC' ? 'the disk is full: free some space' : `${error.code ?? 'error'}: ${error.message}`;
        options.onLogError?.(`local bridge: cannot write ${file} (${why}); ${options.spec.functionName} goes on without its log file`);
      });
    }
  }

  /** The budget this function's environments count against (shared by the functions of one bridge; the bench reads its peak). */
  get memoryBudget(): EnvironmentBudget {
    return this.budget;
  }

  /** Environments running now (tests: warm reuse, the concurrency limit). */
  get environments(): number {
    return this.all.size;
  }

  /** Environments waiting warm now (tests). */
  get idleEnvironments(): number {
    return this.idle.length;
  }

  /** Environments started so far, each a cold start (tests: warm reuse across jobs). */
  get coldStarts(): number {
    return this.coldStarts_;
  }

  /**
   * Starts one execution environment ahead of the first invocation (as
   * provisioned concurrency would) and keeps it warm; a no-op when one exists.
   * Resolves when it is ready (or failed: the invocation will say why).
   */
  async prewarm(): Promise<void> {
    if (this.closed || this.all.size > 0 || !this.budget.tryAcquire(this.idleWeight, this.heavy)) return;
    const environment = this.start(this.idleWeight);
    this.idle.push(environment);
    await environment.ready.catch(() => undefined);
  }

  /** Lets one idle environment go (the budget needs room); the units it held, 0 when none is idle. */
  evictIdle(): number {
    // Not one that an invocation of this function waits to take back (take: its units are coming).
    if (this.idle.length <= this.upgrading) return 0;
    const environment = this.idle.shift();
    if (!environment) return 0;
    this.evicted.add(environment);
    this.stopEnvironment(environment);
    return environment.units;
  }

  /** A new environment holding `units` of the budget (already acquired) until it stops. */
  private start(units: number): Environment {
    this.coldStarts_++;
    const environment = new Environment(this.options, this.log);
    environment.units = units;
    this.all.add(environment);
    let released = false;
    void environment.exited.then(() => {
      if (released) return;
      released = true;
      this.all.delete(environment);
      this.budget.release(environment.units, this.heavy, this.evicted.delete(environment));
      // An invocation of this function may be waiting for one of its own places (take): an
      // environment let go for the budget or retired ends here, not in give.
      this.queue.shift()?.();
    });
    return environment;
  }

  private stopEnvironment(environment: Environment): void {
    void environment.stop();
  }

  /**
   * Invokes the function synchronously (RequestResponse) with a JSON event:
   * resolves with the parsed result, rejects with a LambdaFunctionError
   * (the handler's error, Sandbox.Timedout, Runtime.*).
   */
  async invoke(event: unknown): Promise<unknown> {
    return this.invokeRetryingOutsideKills(event);
  }

  /**
   * One invocation, and once more on a fresh environment when its process was
   * killed from outside (wasKilledFromOutside: a kill -9, a SIGTERM of the
   * process alone), issue 39: the steps that run in processes are safe to
   * repeat (they read, or create only after looking for an earlier attempt:
   * docs/reliability.md), and a death the input did not cause must not fail a
   * good job. A second death is the invocation's error, as before.
   */
  private async invokeRetryingOutsideKills(event: unknown): Promise<unknown> {
    try {
      return await this.invokeOnce(event);
    } catch (error) {
      if (this.closed || !wasKilledFromOutside(error)) throw error;
      this.options.onOutsideKill?.(
        `local bridge: ${this.spec.functionName}'s process was killed from outside (${error.errorType}: ${error.errorMessage}); its invocation runs once more on a fresh environment (docs/reliability.md)`,
      );
      return await this.invokeOnce(event);
    }
  }

  /** The pids of this function's process environments invoked now (tests: a kill of one from outside). */
  get busyProcessIds(): number[] {
    return [...this.busy].map((environment) => environment.pid).filter((pid): pid is number => pid !== undefined);
  }

  private async invokeOnce(event: unknown): Promise<unknown> {
    if (this.closed) throw new LambdaFunctionError('Lambda.ServiceException', `${this.spec.functionName} is stopped`);
    const environment = await this.take();
    this.busy.add(environment);
    let healthy = true;
    const ended = this.options.onInvoke?.(event, this.spec.bridgeFunction);
    try {
      await environment.ready;
      const payload = await environment.invoke(JSON.parse(JSON.stringify(event ?? null)) as unknown, `local-${this.spec.bridgeFunction}-${++this.invocations}`);
      return JSON.parse(payload) as unknown;
    } catch (error) {
      healthy = environment.alive && !(error instanceof LambdaFunctionError && error.errorType.startsWith('Runtime.'));
      throw error;
    } finally {
      this.busy.delete(environment);
      ended?.();
      // A thread environment stays warm while it and this process are small (a process environment: its own RSS, in give).
      const heap = healthy ? await environment.heapBytes().catch(() => undefined) : undefined;
      const keep = heap === undefined || heap <= RETIRE_THREAD_ABOVE_HEAP_BYTES;
      this.give(environment, healthy && keep);
    }
  }

  private async take(): Promise<Environment> {
    for (;;) {
      if (this.closed) throw new LambdaFunctionError('Lambda.ServiceException', `${this.spec.functionName} is stopped`);
      const warm = this.idle.at(-1);
      if (warm) {
        if (!warm.alive) {
          this.idle.pop();
          this.all.delete(warm);
          continue;
        }
        // A warm process takes its full weight back before it decodes again: at once when the
        // units are free, else it waits for them as a new environment would (idle environments
        // may be let go meanwhile, but not the ones this function's waiters will take: evictIdle).
        const extra = this.weight - this.idleWeight;
        if (extra === 0 || this.budget.tryAcquire(extra, this.heavy)) return this.takeIdle(warm);
        this.upgrading++;
        try {
          await this.budget.acquire(extra, this.heavy, this);
        } finally {
          this.upgrading--;
        }
        const still = this.idle.at(-1);
        if (still?.alive && !this.closed) return this.takeIdle(still);
        // Let go or taken meanwhile: look again from the start.
        this.budget.release(extra, this.heavy);
        continue;
      }
      // Places being acquired count too: two invocations waiting on the budget at once must not both start one past max.
      if (this.all.size + this.starting < this.max) {
        this.starting++;
        try {
          await this.budget.acquire(this.weight, this.heavy, this);
        } finally {
          this.starting--;
        }
        if (this.closed) {
          this.budget.release(this.weight, this.heavy);
          continue;
        }
        return this.start(this.weight);
      }
      const handed = await new Promise<Environment | undefined>((resolve) => this.queue.push(resolve));
      if (handed) return handed;
    }
  }

  /** An idle environment, now holding its full weight (the caller acquired what it lacked). */
  private takeIdle(environment: Environment): Environment {
    this.idle.splice(this.idle.indexOf(environment), 1);
    environment.units = this.weight;
    return environment;
  }

  private give(environment: Environment, healthy: boolean): void {
    if (!healthy || !environment.alive || this.closed || (environment.residentBytes ?? 0) > RETIRE_ABOVE_RSS_BYTES) {
      // Its exit frees the place and wakes a waiting invocation (start).
      this.stopEnvironment(environment);
    } else if (this.queue.length > 0) {
      // Straight to the next invocation of this function: never idle, so the budget cannot let it go
      // (a burst of files would otherwise cold-start a new environment for nearly every invocation).
      this.queue.shift()?.(environment);
    } else if (!this.heavy && this.idle.length > 0) {
      // A light function keeps one thread warm, not one per environment a burst started: each waits in
      // the bridge's own process (20-25 MB), so the threads waiting warm are at most one per light
      // function (issue 38: on the hostile corpus the bridge's peak held 9-11 threads, 3 of them extras).
      this.stopEnvironment(environment);
    } else {
      // Waiting warm, a process keeps only its idle weight: the rest of its units go back now.
      const spare = environment.units - this.idleWeight;
      environment.units = this.idleWeight;
      this.idle.push(environment);
      if (spare > 0) this.budget.release(spare, this.heavy);
      this.budget.idleNotice();
      // Extra process environments are let go after a quiet minute; one stays warm.
      if (this.idle.length > 1) {
        setTimeout(() => {
          const at = this.idle.indexOf(environment);
          if (at >= 0 && this.idle.length > 1) {
            this.idle.splice(at, 1);
            this.stopEnvironment(environment);
          }
        }, IDLE_MS).unref();
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    // Invocations still waiting for room or for a place give up at once.
    this.budget.cancel(this);
    for (const waiter of this.queue.splice(0)) waiter();
    await Promise.all([...this.all].map((environment) => environment.stop()));
    this.idle.length = 0;
    if (this.log) await new Promise<void>((resolve) => (this.log as WriteStream).end(() => resolve()));
  }
}

function moduleOf(spec: AssemblyFunctionSpec): string {
  // The Node.js runtime looks for <file>.mjs, .cjs, then .js.
  const candidates = ['.mjs', '.cjs', '.js'].map((extension) => path.join(spec.assetDir, `${spec.moduleFile}${extension}`));
  return candidates.find((file) => existsSync(file)) ?? (candidates[0] as string);
}
