/**
 * The life of a processing, computed from the wall clock (no timers): a run
 * starts IN_PROGRESS at 0 % and its percent rises over `durationMs` until it
 * ends OK (100 %) or FAILED with messages.
 *
 * Timeline of one run, as a fraction f of its duration:
 * - imagerySearch sources wait for the provider: AWAITING for 0.05 <= f < 0.3;
 * - problems found in the request (geometry.Invalid, source-validator codes)
 *   end it FAILED at f = 0.1, as the live source validator does shortly after start;
 * - the failure trigger `meta.simulate = "fail:<code>"` ends it FAILED at f = 0.5
 *   ("fail-once:<code>" only on the first attempt; a restart then succeeds);
 * - otherwise OK at f = 1.
 */
import type { Message, ProcessingRecord } from './store.ts';
import { unevenProfile, workDone } from './progress.ts';
import { seededRandom } from './random.ts';

export type ProcessingStatus = 'UNPROCESSED' | 'IN_PROGRESS' | 'AWAITING' | 'OK' | 'FAILED' | 'CANCELLED' | 'REFUNDED';

export interface ProcessingState {
  /** null: the live service's very first status of a new processing (realShapes). */
  status: ProcessingStatus | null;
  percentCompleted: number;
  messages: Message[];
  /** When the current status began (ms since epoch). */
  since: number;
}

const VALIDATION_FAILS_AT = 0.1;
const TRIGGER_FAILS_AT = 0.5;
const AWAITING_FROM = 0.05;
const AWAITING_UNTIL = 0.3;

/** The failure this run will end with, and when (fraction of the run), if any. */
function plannedFailure(record: ProcessingRecord): { at: number; messages: Message[] } | undefined {
  if (record.validationMessages.length > 0) return { at: VALIDATION_FAILS_AT, messages: record.validationMessages };
  const trigger = record.simulate;
  if (trigger && (trigger.mode === 'fail' || record.attempt === 1)) {
    return { at: TRIGGER_FAILS_AT, messages: [{ code: trigger.code, parameters: { level: 'error' } }] };
  }
  return undefined;
}

/**
 * realShapes runs first wait: status null for the first fifth of `queuedMs`,
 * UNPROCESSED for the rest, then AWAITING for `awaitingMs` (a provider
 * delivering imagery can take hours on the live service), then the run.
 */
export function processingState(record: ProcessingRecord, now: number): ProcessingState {
  const queued = record.queuedMs ?? 0;
  const awaiting = record.awaitingMs ?? 0;
  const begin = record.runStartedAt;
  if (now < begin + queued) {
    return { status: now < begin + queued / 5 ? null : 'UNPROCESSED', percentCompleted: 0, messages: [], since: begin };
  }
  if (now < begin + queued + awaiting) return { status: 'AWAITING', percentCompleted: 0, messages: [], since: begin + queued };
  return runState(record, begin + queued + awaiting, now);
}

function runState(record: ProcessingRecord, start: number, now: number): ProcessingState {
  const duration = Math.max(1, record.durationMs);
  const fraction = Math.max(0, (now - start) / duration);
  const at = (f: number) => start + Math.round(f * duration);

  const failure = plannedFailure(record);
  if (failure && fraction >= failure.at) {
    return { status: 'FAILED', percentCompleted: Math.floor(failure.at * 100), messages: failure.messages, since: at(failure.at) };
  }
  if (fraction >= 1) return { status: 'OK', percentCompleted: 100, messages: [], since: at(1) };

  if (record.source.kind === 'imagerySearch') {
    if (fraction < AWAITING_FROM) return { status: 'IN_PROGRESS', percentCompleted: 0, messages: [], since: start };
    if (fraction < AWAITING_UNTIL) return { status: 'AWAITING', percentCompleted: 0, messages: [], since: at(AWAITING_FROM) };
    const percent = Math.floor(done(record, (fraction - AWAITING_UNTIL) / (1 - AWAITING_UNTIL)) * 100);
    return { status: 'IN_PROGRESS', percentCompleted: Math.min(99, percent), messages: [], since: at(AWAITING_UNTIL) };
  }
  return { status: 'IN_PROGRESS', percentCompleted: Math.min(99, Math.floor(done(record, fraction) * 100)), messages: [], since: start };
}

/** Work done at `fraction` of the run: even, or uneven (stalls, bursts) with unevenProgress; each attempt its own profile. */
function done(record: ProcessingRecord, fraction: number): number {
  if (record.progressSeed === undefined) return fraction;
  return workDone(unevenProfile(seededRandom(record.progressSeed + record.attempt)), fraction);
}

/** Reads the failure trigger from `meta.simulate`. */
export function parseTrigger(meta: Record<string, string>): ProcessingRecord['simulate'] {
  const value = meta.simulate;
  if (typeof value !== 'string') return undefined;
  const match = /^(fail|fail-once):(.+)$/.exec(value.trim());
  if (!match) return undefined;
  return { mode: match[1] as 'fail' | 'fail-once', code: match[2]!.trim() };
}
