/**
 * The time a decode of the input may take inside its step (issue 23: an
 * overrun is a REJECTED job, never a killed function and a FAILED one).
 *
 * A Lambda stopped at its Timeout (`Sandbox.Timedout`, on AWS and locally)
 * tells nobody why: a crafted file and a slow Mapflow look the same, so the
 * job could only end FAILED. The steps that decode the input before any
 * processing is created (Inspect GeoTIFF, Plan Processing) therefore give
 * their decode a deadline of their own, from the Lambda context's
 * getRemainingTimeInMillis() when the decode starts, less a reserve for the
 * step's work after it (Mapflow calls, S3 writes, the answer). The decode's
 * loops check it between bounded units of work (a window of GeoTIFF blocks,
 * a batch of polygons merged) and throw DecodeTimedOut, a typed rejection
 * that keeps its cause: the job ends REJECTED INPUT_TOO_COMPLEX with what to
 * do, while the function still runs. Time that goes elsewhere (a slow
 * Mapflow) still ends in Sandbox.Timedout and a FAILED job, as it should: it
 * is not the file's fault.
 *
 * The deadline is plain data (it crosses to a worker thread in the local
 * engine's CPU workers, packages/local/src/engine/workers.ts).
 */
import { InputRejected } from './errors.ts';

/** What a decode needs of the Lambda context (aws-lambda's Context has it). */
export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}

/** The instant a decode must stop (epoch ms) and how long it had from its start, ms. */
export interface DecodeDeadline {
  readonly at: number;
  readonly ms: number;
}

/** Share of the time left at a decode's start kept for the step's work after it. */
export const DECODE_RESERVE_SHARE = 0.25;
/** The reserve above, at most (a 120 s function keeps 10 s: its Mapflow calls and S3 writes after the decode). */
export const MAX_DECODE_RESERVE_MS = 10_000;

/**
 * The deadline of a decode that starts now, in an invocation with `context`
 * (undefined without one: a call outside a Lambda, a test, has no deadline).
 */
export function decodeDeadline(context: RemainingTime | undefined, now: number = Date.now()): DecodeDeadline | undefined {
  const remaining = context?.getRemainingTimeInMillis();
  if (remaining === undefined || !Number.isFinite(remaining)) return undefined;
  const ms = Math.max(0, remaining - Math.min(MAX_DECODE_RESERVE_MS, remaining * DECODE_RESERVE_SHARE));
  return { at: now + ms, ms };
}

/**
 * The decode ran past its deadline: the file's doing (its decode is bounded
 * in size, so what is still too slow is too complex). An InputRejected (its
 * name is the errorType Step Functions matches) with code INPUT_TOO_COMPLEX.
 */
export class DecodeTimedOut extends InputRejected {
  constructor(what: string, fix: string, deadline: DecodeDeadline, options?: { cause?: unknown }) {
    super(
      'INPUT_TOO_COMPLEX',
      `${what} took longer than the ${(deadline.ms / 1000).toFixed(1)} s the step had for it (its Lambda timeout, less the time it keeps to finish); nothing was sent to Mapflow. ${fix}`,
      { ...options, details: { limit: 'time', decodeMs: Math.round(deadline.ms) } },
    );
  }
}

/**
 * Throws DecodeTimedOut once `deadline` has passed (a no-op without one).
 * @param what what the decode was doing, e.g. 'merging the polygons of the file'
 * @param fix what the user should do
 */
export function checkDeadline(deadline: DecodeDeadline | undefined, what: string, fix: string, now: number = Date.now()): void {
  if (deadline && now > deadline.at) throw new DecodeTimedOut(what, fix, deadline);
}
