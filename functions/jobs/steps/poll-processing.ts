/**
 * Poll Processing: one look at the part's processing, and what the machine
 * does next (`outcome`):
 *   OK       the results are ready
 *   RESTART  failed with only transient errors, not restarted yet
 *   FAILED   failed, cancelled or refunded
 *   TIMEOUT  polled too often or for too long
 *   WAIT     still running (also: status null or UNPROCESSED at first,
 *            AWAITING for hours while a provider delivers, OK with a review
 *            status NOT_ACCEPTED); come back after `waitSeconds` (see poll-policy.ts)
 * The ledger follows the percentage; an event is published only when
 * Mapflow's status changes, not on every percent.
 */
import { BridgeError } from '../../core/errors.ts';
import { EVENT_DETAIL_TYPES } from '../../core/model.ts';
import type { PartState, PollOutcome, PollResult } from '../workflow.ts';
import {
  MAX_AWAITING_SECONDS, awaitingWaitSeconds, mapflowClockOffset, nextPollSeconds, planNextPoll, pollsFor, pollBudgetExhausted, shouldRestart, type PollEstimate,
} from '../../polling/poll-policy.ts';
import type { MapflowClient, Processing } from '../../mapflow/index.ts';
import { jobContextOf, publishRow, releaseSlot } from '../common.ts';
import { jobPercent } from '../../core/progress.ts';
import { slotHolder } from '../../ledger/slots.ts';
import type { MapflowMessage } from '../outcome.ts';
import type { StepContext } from '../context.ts';

const FAILED_STATUSES = new Set(['FAILED', 'CANCELLED', 'REFUNDED']);

export async function pollProcessing(state: PartState, ctx: StepContext): Promise<PollResult> {
  const job = jobContextOf(state.job);
  const processingId = state.processing?.processingId;
  if (!processingId) throw new BridgeError('STATE_INCOMPLETE', `part '${state.part.name}' of job ${job.jobId} has no processing at $.processing`);
  const client = await ctx.mapflow();
  const processing = await client.getProcessing(processingId);

  const previous = state.poll;
  const polls = (previous?.polls ?? 0) + 1;
  let restarts = Math.max(state.restart?.restarts ?? 0, previous?.restarts ?? 0);
  const status = String(processing.status);
  // A restart the ledger records counts even when this execution's state lost it (resumed after a kill -9):
  // a processing is restarted once. Read only when it failed, so polling costs no ledger read.
  let recordedRestartAt: string | undefined;
  if (FAILED_STATUSES.has(status) && !state.restart) {
    const part = (await ctx.ledger.get(job.jobId))?.parts?.find((p) => p.index === state.part.index);
    if (part?.restartRequestedAt) {
      restarts = Math.max(restarts, (part.attempts ?? 2) - 1);
      recordedRestartAt = part.restartRequestedAt;
    }
  }
  const percent = processing.percentCompleted ?? previous?.percentCompleted ?? 0;
  const messages = FAILED_STATUSES.has(status) ? await failureMessages(client, processing) : [];
  const policy = ctx.config.pollPolicy;
  // Time and polls spent AWAITING (an ordered scene) are not counted, up to MAX_AWAITING_SECONDS (poll-policy.ts).
  const awaiting = awaitingAfter(previous?.awaiting, status, ctx.now());
  const awaited = awaitedSeconds(awaiting, ctx.now());
  const excused = awaited <= MAX_AWAITING_SECONDS ? { seconds: awaited, polls: awaiting.polls } : { seconds: 0, polls: 0 };
  const registered = startOf(job.createdAt, state.processing?.startedAt);
  const jobStart = registered && new Date(registered.getTime() + excused.seconds * 1000);
  const counted = polls - excused.polls;

  let outcome: PollOutcome;
  let waitSeconds = 0;
  let estimate: PollEstimate | undefined;
  let resendRestart = false;
  if (status === 'OK' && !awaitsRework(processing)) {
    outcome = 'OK';
  } else if (status === 'FAILED' && failureBeforeRestart(processing.updated, recordedRestartAt)) {
    // The recorded restart may never have reached Mapflow (killed in between): ask for the same restart again.
    outcome = 'RESTART';
    resendRestart = true;
    waitSeconds = nextPollSeconds(policy, { polls: 1 }, ctx.random);
  } else if (status === 'FAILED' && failureBeforeRestart(processing.updated, state.restart?.restartedAt) && !pollBudgetExhausted(policy, counted, undefined, ctx.now())) {
    // Still the failure the restart answered (Mapflow has not picked the restart up yet).
    outcome = 'WAIT';
    waitSeconds = nextPollSeconds(policy, { polls: 1 }, ctx.random);
  } else if (status === 'FAILED' && shouldRestart(messages, restarts)) {
    outcome = 'RESTART';
    waitSeconds = nextPollSeconds(policy, { polls: 1 }, ctx.random);
  } else if (FAILED_STATUSES.has(status)) {
    outcome = 'FAILED';
  } else if (pollBudgetExhausted(policy, counted, jobStart, ctx.now())) {
    outcome = 'TIMEOUT';
  } else {
    outcome = 'WAIT';
    const now = ctx.now().getTime();
    const plan = planNextPoll(
      policy,
      // After a restart the estimate starts again (the first polls come quickly).
      previous?.outcome === 'RESTART' ? undefined : previous?.estimate,
      { at: now, status, percent: await finePercent(client, processing, percent), ...updatedOnOurClock(processing, state) },
      {
        // The derived count, not an explicit maxPolls: that one is meant to end the job early.
        pollsLeft: pollsFor(policy) - counted,
        secondsLeft: policy.maxJobSeconds - (jobStart ? (now - jobStart.getTime()) / 1000 : 0),
      },
      ctx.random,
    );
    // AWAITING for long (an ordered scene): polled slowly, a tenth of the time waited so far, up to an hour.
    waitSeconds = status === 'AWAITING' ? awaitingWaitSeconds(awaited, plan.waitSeconds) : plan.waitSeconds;
    estimate = plan.estimate;
  }

  // Admission: Mapflow is done with it, so the slot goes to the next waiter now, not after Store Results (Finish Part releases again, idempotent).
  if (outcome === 'OK') await releaseSlot(ctx, slotHolder(job.jobId, state.part.index));

  const statusChanged = previous?.status !== undefined ? previous.status !== status : status !== 'IN_PROGRESS';
  if (statusChanged || previous?.percentCompleted !== percent) {
    const row = await ctx.ledger.get(job.jobId);
    const part = row?.parts?.find((p) => p.index === state.part.index);
    const updated = await ctx.ledger.upsertPart(job.jobId, {
      ...part,
      index: state.part.index,
      name: state.part.name,
      processingId,
      status,
      percentCompleted: percent,
      ...(typeof processing.cost === 'number' && { cost: processing.cost }),
    });
    // The job's percent counts the parts not started yet as 0 % and never goes down (functions/core/progress.ts).
    const withPercent = await ctx.ledger.raisePercent(job.jobId, jobPercent(updated.parts ?? [], updated.partCount));
    if (statusChanged && outcome === 'WAIT') {
      const of = (withPercent.partCount ?? 1) > 1 ? ` ${state.part.index + 1} of ${withPercent.partCount}` : '';
      await publishRow(ctx, EVENT_DETAIL_TYPES.IN_PROGRESS, withPercent, { messages: [`part${of} '${state.part.name}' (processing ${processingId}) is ${status} at ${percent}% (part)`] });
    }
  }

  return {
    outcome,
    waitSeconds,
    polls,
    status,
    percentCompleted: percent,
    restarts,
    ...(resendRestart && { resendRestart }),
    ...(typeof processing.cost === 'number' && { cost: processing.cost }),
    ...(messages.length > 0 && { messages }),
    ...(previous?.percentCompleted !== undefined && { previousPercent: previous.percentCompleted }),
    ...(estimate && { estimate }),
    ...((awaiting.polls > 0 || awaiting.since) && { awaiting }),
  };
}

/** The AWAITING record after a poll that saw `status` (PollResult.awaiting). */
export function awaitingAfter(previous: PollResult['awaiting'], status: string, now: Date): NonNullable<PollResult['awaiting']> {
  const before = previous ?? { seconds: 0, polls: 0 };
  if (status === 'AWAITING') return { seconds: before.seconds, polls: before.polls + 1, since: before.since ?? now.toISOString() };
  const span = before.since ? Math.max(0, (now.getTime() - Date.parse(before.since)) / 1000) : 0;
  return { seconds: before.seconds + span, polls: before.polls };
}

/** All the seconds spent AWAITING until `now`. */
export function awaitedSeconds(awaiting: NonNullable<PollResult['awaiting']>, now: Date): number {
  return awaiting.seconds + (awaiting.since ? Math.max(0, (now.getTime() - Date.parse(awaiting.since)) / 1000) : 0);
}

/**
 * Mapflow's `updated` on the bridge's clock: moved by the offset between our
 * time of the create call and Mapflow's `created` (clock skew). Not for a
 * processing an earlier attempt created (our time is then not its creation).
 */
function updatedOnOurClock(processing: Processing, state: PartState): { updatedAt?: number } {
  if (!processing.updated || state.processing?.reused) return {};
  const offset = mapflowClockOffset(state.processing?.startedAt, processing.created);
  const updated = Date.parse(processing.updated);
  return offset === undefined || Number.isNaN(updated) ? {} : { updatedAt: updated + offset };
}

/**
 * The percent with more than whole-number precision when the processing has
 * several AOIs: the mean of their percents (GET /processings/{id}/aois), if it
 * agrees with the processing's own percent within one; else that percent.
 * Asked only while it runs, so a one-AOI processing costs no extra call.
 */
export async function finePercent(client: MapflowClient, processing: Processing, percent: number): Promise<number> {
  if (processing.status !== 'IN_PROGRESS' || (processing.aoiCount ?? 1) <= 1) return percent;
  const aois = await client.getProcessingAois(processing.id);
  const values = aois.map((a) => a.percentCompleted).filter((v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 100);
  if (values.length < 2) return percent;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.abs(mean - percent) <= 1 ? Math.round(mean * 100) / 100 : percent;
}

/**
 * OK with a review status of NOT_ACCEPTED is not final: the results were
 * refused in review and will be redone (real-api-notes; the official plugin
 * does not take it as done). The bridge keeps polling.
 */
export function awaitsRework(processing: Pick<Processing, 'status' | 'reviewStatus'>): boolean {
  return processing.status === 'OK' && String(processing.reviewStatus?.status ?? '').toUpperCase() === 'NOT_ACCEPTED';
}

/**
 * The messages of a failed processing. The v2 record may carry none (the
 * spec's short v2 shape), so the full v1 record, then the AOIs, are asked.
 */
async function failureMessages(client: MapflowClient, processing: Processing): Promise<MapflowMessage[]> {
  const pick = (list: { code: string; parameters?: Record<string, string> }[] | undefined) =>
    (list ?? []).filter((m) => typeof m?.code === 'string').map((m) => ({ code: m.code, ...(m.parameters && { parameters: m.parameters }) }));
  let messages = pick(processing.messages);
  if (messages.length === 0) messages = pick((await client.getProcessingV1(processing.id)).messages);
  if (messages.length === 0) {
    const seen = new Set<string>();
    messages = pick((await client.getProcessingAois(processing.id)).flatMap((aoi) => aoi.messages ?? [])).filter((m) => {
      const key = JSON.stringify(m);
      return seen.has(key) ? false : (seen.add(key), true);
    });
  }
  return messages;
}

/** True when the processing was last updated before the restart was asked for. */
function failureBeforeRestart(updated: string | undefined, restartedAt: string | undefined): boolean {
  if (!updated || !restartedAt) return false;
  const u = Date.parse(updated);
  const r = Date.parse(restartedAt);
  return !Number.isNaN(u) && !Number.isNaN(r) && u < r;
}

function startOf(...isoTimes: (string | undefined)[]): Date | undefined {
  const first = isoTimes.find((t) => t && !Number.isNaN(Date.parse(t)));
  return first ? new Date(first) : undefined;
}
