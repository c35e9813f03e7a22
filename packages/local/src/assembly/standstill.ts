/**
 * A pause is not a timeout (issue 39, point 4). When the whole bridge stands
 * still (SIGSTOP, Ctrl-Z, a debugger, a host that starves it), its timers are
 * overdue when it goes on, and every function invocation in flight would end
 * `Sandbox.Timedout` at once, although its handler, stopped with it, had run
 * for no longer than before the pause. On AWS nothing of the kind happens: a
 * function's clock does not stop because the caller's does.
 *
 * So the local Lambda service measures time that counts: a ticker on the
 * bridge's event loop sees each gap between its ticks well beyond their
 * interval and adds it to the standstill total (a stopped process, or an
 * event loop blocked that long, which stalls the invocations' I/O as well);
 * a timeout is the invocation's Timeout of counted time. A real hang (a
 * handler that loops) still times out: the bridge's loop keeps ticking.
 * (CLOCK_MONOTONIC, which Node's timers use, does not advance while the
 * machine is suspended, so a closed lid needs nothing of this.)
 */
import { performance } from 'node:perf_hooks';

/** How often the ticker looks (ms). */
const TICK_MS = 250;
/** A gap longer than this between two ticks counts as standing still (ms): well above any ordinary stall. */
export const STANDSTILL_MS = 3_000;

export interface StandstillClock {
  /** Milliseconds of counted time (monotonic time less the standstills seen so far). */
  now(): number;
  /** Milliseconds the bridge stood still so far. */
  readonly stoodStill: number;
  /** Milliseconds held so far (pauseCountedTime), the pause under way included. */
  readonly held: number;
}

class Ticker implements StandstillClock {
  private last = performance.now();
  private total = 0;
  private timer: NodeJS.Timeout | undefined;
  private users = 0;
  /** Pauses under way (pauseCountedTime), and since when the first of them runs. */
  private pauses = 0;
  private pausedSince = 0;
  private heldTotal = 0;

  acquire(): void {
    if (this.users++ === 0) {
      this.last = performance.now();
      this.timer = setInterval(() => this.tick(), TICK_MS);
      // Never keeps the process alive by itself.
      this.timer.unref();
    }
  }

  release(): void {
    if (--this.users === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Also called before reading the clock, so a standstill that has just ended counts before its overdue timers decide. */
  tick(): void {
    const at = performance.now();
    const gap = at - this.last - TICK_MS;
    this.last = at;
    if (gap > STANDSTILL_MS) {
      this.total += gap;
      for (const listener of this.listeners) listener(gap);
    }
  }

  /** Listeners told of each standstill seen (while an invocation is timed: the ticker runs only then). */
  readonly listeners = new Set<(ms: number) => void>();

  now(): number {
    this.tick();
    return performance.now() - this.total - this.held;
  }

  get held(): number {
    return this.heldTotal + (this.pauses > 0 ? performance.now() - this.pausedSince : 0);
  }

  pause(): () => void {
    if (this.pauses++ === 0) this.pausedSince = performance.now();
    let resumed = false;
    return () => {
      if (resumed) return;
      resumed = true;
      if (--this.pauses === 0) this.heldTotal += performance.now() - this.pausedSince;
    };
  }

  get stoodStill(): number {
    this.tick();
    return this.total;
  }
}

/** One clock per process: every function of every bridge in it shares what stood still. */
const ticker = new Ticker();

/**
 * Calls `onTimeout` once `timeoutMs` of counted time have passed; returns the
 * function that cancels it. While the bridge stands still the deadline moves
 * with it.
 */
export function countedTimeout(timeoutMs: number, onTimeout: () => void): () => void {
  ticker.acquire();
  const deadline = ticker.now() + timeoutMs;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const arm = () => {
    const left = deadline - ticker.now();
    if (left <= 0) {
      done = true;
      ticker.release();
      onTimeout();
      return;
    }
    timer = setTimeout(arm, left);
  };
  arm();
  return () => {
    if (done) return;
    done = true;
    if (timer) clearTimeout(timer);
    ticker.release();
  };
}

/**
 * Stops counted time until the returned function is called (calls nest):
 * while the local S3 or DynamoDB hold a write because the state folder's disk
 * is full (disk-watch.ts), no invocation times out for the wait, as a
 * function on AWS, whose S3 and DynamoDB never run out of disk, would not.
 * Every invocation's deadline moves, not only the held one's: which
 * invocation waits on which held write is not known here, and a few seconds
 * more for the others are harmless.
 */
export function pauseCountedTime(): () => void {
  return ticker.pause();
}

/** The process's clock (tests, and the bridge's figures). */
export const standstillClock: StandstillClock = ticker;

/**
 * Calls `listener` with the length (ms) of each standstill seen while a
 * function invocation is timed; returns the function that stops it.
 */
export function onStandstill(listener: (ms: number) => void): () => void {
  ticker.listeners.add(listener);
  return () => ticker.listeners.delete(listener);
}
