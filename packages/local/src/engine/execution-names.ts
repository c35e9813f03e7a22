/**
 * The names of the local engine's executions, kept as Step Functions keeps
 * them (issue 37 point 4): "An execution can't use the name of another
 * execution for 90 days ... When the original execution is closed, the
 * ExecutionAlreadyExists message is returned regardless of input"
 * (docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html;
 * the 90 days are the retention of a Standard workflow's execution history,
 * docs.aws.amazon.com/step-functions/latest/dg/express-at-least-once-execution.html).
 *
 * Each name is recorded with its status and, once closed, its close time, in
 * a file of the bridge's state folder (one JSON line per change, appended
 * synchronously: a kill may come at any instant), so a restart forgets no
 * name. Loading folds the lines (the last one of a name wins), drops the names
 * closed more than NAME_RETENTION_MS ago, and rewrites the file compacted
 * (written aside, then renamed over it); the file is compacted again whenever
 * its lines outgrow twice the names it holds.
 *
 * A name recorded RUNNING when the file is loaded belonged to an execution
 * the last run of the bridge was running when it stopped. On AWS that
 * execution never stopped (a local restart is a local artifact): the engine
 * may resume it under its own name and input (`interrupted`; the input is
 * kept while an execution runs, dropped when it closes), and nobody may start
 * a new one with that name.
 *
 * A full disk (ENOSPC) loses no name: the names stay in memory, the file is
 * taken as stale, and it is rewritten whole (compacted) at the next change,
 * or once `whenFree` says space is back.
 */
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

/** How long a closed execution's name stays taken: 90 days (API_StartExecution, "name"). */
export const NAME_RETENTION_DAYS = 90;
export const NAME_RETENTION_MS = NAME_RETENTION_DAYS * 24 * 3_600_000;

/** The file, in the state folder, that keeps the names. */
export const EXECUTION_NAMES_FILE = 'execution-names.ndjson';

export type NameStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface NameEntry {
  name: string;
  status: NameStatus;
  startedAt: string;
  /** When its execution closed (absent while RUNNING). */
  closedAt?: string;
  /** Its input, kept while it runs only (to resume it after a stop of the bridge): the file stays the size of what runs. */
  input?: unknown;
}

export interface ExecutionNamesOptions {
  /** The file to keep the names in; without one they live in memory only (one engine's lifetime). */
  file?: string;
  /** The clock (tests move it past the 90 days). */
  now?: () => Date;
  /** Resolves true once the state folder's disk has space again after a write met ENOSPC (disk-watch.ts); the file is then rewritten. */
  whenFree?: () => Promise<boolean>;
}

export class ExecutionNames {
  private readonly entries = new Map<string, NameEntry>();
  /** Names the last run left RUNNING: the executions a stop of the bridge interrupted. */
  private readonly interrupted_ = new Set<string>();
  private readonly file: string | undefined;
  private readonly now: () => Date;
  private lines = 0;
  /** A write met a full disk: the file lacks names the memory holds, until it is rewritten whole. */
  private stale = false;
  private waitingForSpace = false;
  private readonly whenFree: (() => Promise<boolean>) | undefined;

  constructor(options: ExecutionNamesOptions = {}) {
    this.file = options.file;
    this.now = options.now ?? (() => new Date());
    this.whenFree = options.whenFree;
    if (this.file && existsSync(this.file)) this.load(this.file);
  }

  /** The entry of a name still taken (running, interrupted, or closed less than 90 days ago). */
  get(name: string): NameEntry | undefined {
    const entry = this.entries.get(name);
    if (entry && this.expired(entry)) {
      this.entries.delete(name);
      return undefined;
    }
    return entry;
  }

  /** May a new execution take this name? */
  isFree(name: string): boolean {
    return this.get(name) === undefined;
  }

  /** Was this name's execution running when the last run of the bridge stopped (and not resumed since)? */
  isInterrupted(name: string): boolean {
    return this.interrupted_.has(name);
  }

  /** The names the last run left running, not resumed yet. */
  interrupted(): string[] {
    return [...this.interrupted_];
  }

  /** An execution starts (or an interrupted one resumes) under this name. */
  started(name: string, startedAt: string, input: unknown): void {
    this.interrupted_.delete(name);
    this.record({ name, status: 'RUNNING', startedAt, ...(input === undefined ? {} : { input }) });
  }

  /** Its execution closed. */
  closed(name: string, status: Exclude<NameStatus, 'RUNNING'>, closedAt = this.now().toISOString()): void {
    const entry = this.entries.get(name);
    this.interrupted_.delete(name);
    this.record({ name, status, startedAt: entry?.startedAt ?? closedAt, closedAt });
  }

  /** Every name still taken. */
  all(): NameEntry[] {
    return [...this.entries.values()].filter((entry) => !this.expired(entry));
  }

  private expired(entry: NameEntry): boolean {
    if (entry.closedAt === undefined) return false;
    return this.now().getTime() - Date.parse(entry.closedAt) > NAME_RETENTION_MS;
  }

  private record(entry: NameEntry): void {
    this.entries.set(entry.name, entry);
    if (!this.file) return;
    if (this.stale || this.lines + 1 > Math.max(1_000, 2 * this.entries.size)) {
      this.compact(this.file);
      return;
    }
    try {
      appendFileSync(this.file, JSON.stringify(entry) + '\n');
      this.lines++;
    } catch (error) {
      // The state folder is gone (a closing bridge): nothing left to keep. A full disk: kept in memory (unsaved).
      this.unsaved(error);
    }
  }

  /** A write failed: on a full disk the file is stale (a half line may end it) until written whole again. */
  private unsaved(error: unknown): void {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') return;
    this.stale = true;
    if (!this.whenFree || this.waitingForSpace) return;
    this.waitingForSpace = true;
    void this.whenFree().then(
      (free) => {
        this.waitingForSpace = false;
        if (free && this.stale && this.file) this.compact(this.file);
      },
      () => (this.waitingForSpace = false),
    );
  }

  private load(file: string): void {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return;
    }
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      try {
        const entry = JSON.parse(line) as Partial<NameEntry>;
        if (typeof entry.name !== 'string' || typeof entry.status !== 'string' || typeof entry.startedAt !== 'string') continue;
        this.entries.set(entry.name, {
          name: entry.name,
          status: entry.status as NameStatus,
          startedAt: entry.startedAt,
          ...(typeof entry.closedAt === 'string' ? { closedAt: entry.closedAt } : { ...('input' in entry ? { input: entry.input } : {}) }),
        });
      } catch {
        // A line cut by a kill as it was written: the lines before it stand.
      }
    }
    for (const entry of [...this.entries.values()]) {
      if (this.expired(entry)) this.entries.delete(entry.name);
      else if (entry.status === 'RUNNING') this.interrupted_.add(entry.name);
    }
    this.compact(file);
  }

  /** Rewrites the file with one line a name still taken (aside, then renamed over it). */
  private compact(file: string): void {
    const kept = this.all();
    try {
      const aside = `${file}.${process.pid}.tmp`;
      writeFileSync(aside, kept.map((entry) => JSON.stringify(entry) + '\n').join(''));
      renameSync(aside, file);
      this.lines = kept.length;
      this.stale = false;
    } catch (error) {
      // The state folder is gone: nothing left to keep. A full disk: the file stays as it was, stale.
      this.unsaved(error);
    }
  }
}
