/**
 * The last writes of a job, shared by Finish Job and Fail Job: the failure
 * report (when not SUCCEEDED), the ledger's final status, the final event and
 * the tags on the input object. Idempotent: a job already final is left as it
 * is and its final status returned.
 */
import { EVENT_DETAIL_TYPES, isFinalStatus, type InputKind, type InputObject, type JobError, type JobPart, type LedgerRow } from '../core/model.ts';
import type { FinishResult } from './workflow.ts';
import { FOOTPRINT_FILE, inputKind, reportKey as reportKeyFor, workKey } from '../routing/index.ts';
import { MAX_FAILED_INPUT_AOI_BYTES, writeFailureQuicklook } from '../quicklook/index.ts';
import { recordJobOutcome } from '../runtime/metrics.ts';
import { tagObject, writeJson } from '../storage/s3.ts';
import { eventDetailFromRow } from '../events/publisher.ts';
import type { JobEventDetail } from '../events/types.ts';
import { partsCharge } from '../core/credits.ts';
import type { StepContext } from './context.ts';

export type FinalStatus = FinishResult['status'];

export const TAG_JOB_ID = 'mapflow-bridge:job-id';
export const TAG_STATUS = 'mapflow-bridge:status';

export interface Finalisation {
  jobId: string;
  input: InputObject;
  /** Needed only to register a row for a job that failed before Register Job made one. */
  kind?: InputKind;
  routeName?: string;
  status: FinalStatus;
  error?: JobError;
  parts?: JobPart[];
  actualCost?: number;
  resultPrefix?: string;
  /** Extra fields for the failure report. */
  report?: Record<string, unknown>;
}

export async function finaliseJob(ctx: StepContext, given: Finalisation): Promise<FinishResult> {
  // The retry hint names this job, so the FAILED line can be copied as it is.
  const f: Finalisation = given.error ? { ...given, error: { ...given.error, message: withJobId(given.error.message, given.jobId) } } : given;
  let row = await ctx.ledger.get(f.jobId);
  if (row && isFinalStatus(row.status)) {
    // An earlier run of this step (or another path) wrote the final status and died before its event and tags.
    if (row.finalEventPending) {
      await ctx.events.publish(EVENT_DETAIL_TYPES[row.status], finalEventDetail(row, ctx.now()));
      await tagInput(ctx, f, row.status);
      await ctx.ledger.finalEventPublished(row.jobId);
    }
    return finishResultOf(row);
  }
  if (!row && f.kind) {
    row = (await ctx.ledger.register({ jobId: f.jobId, input: f.input, kind: f.kind, routeName: f.routeName ?? '-' })).row;
  }

  const now = ctx.now().toISOString();
  let reportKey: string | undefined;
  if (f.status !== 'SUCCEEDED') {
    reportKey = reportKeyFor(ctx.config.prefixes, f.input.key);
    const quicklookKey = await failureQuicklook(ctx, f, reportKey);
    await writeJson(ctx.s3, f.input.bucket, reportKey, {
      jobId: f.jobId,
      status: f.status,
      input: f.input,
      route: f.routeName ?? row?.routeName,
      code: f.error?.code,
      message: f.error?.message,
      ...(f.error?.mapflowMessages && { mapflowMessages: f.error.mapflowMessages }),
      ...(f.parts && { parts: f.parts }),
      ...(f.resultPrefix && { resultPrefix: f.resultPrefix }),
      ...partialResultsOf(f.parts),
      ...f.report,
      ...(quicklookKey && { quicklookKey }),
      at: now,
    });
  }

  if (row) {
    // Credits already charged stay counted whatever the end (a FAILED or REJECTED job may have spent some).
    const actualCost = f.actualCost ?? partsCharge(f.parts ?? row.parts);
    const patch: Partial<LedgerRow> = {
      ...(f.error && { error: f.error }),
      ...(f.parts && { parts: f.parts }),
      ...(actualCost !== undefined && { actualCost }),
      ...(f.resultPrefix && { resultPrefix: f.resultPrefix }),
      ...(reportKey && { reportKey }),
      ...(f.status === 'SUCCEEDED' && { percentCompleted: 100 }),
    };
    const { changed, row: final } = await ctx.ledger.transition(f.jobId, f.status, patch, f.error ? `${f.error.code}: ${f.error.message}`.slice(0, 500) : undefined);
    // The final write marks the row finalEventPending: its event and tags are owed until the mark goes, last.
    // A death in between leaves the mark, and whoever finds it (this step run again above, the local
    // bridge's next start: packages/local/src/final-events.ts) does what is left. A death after the publish and before
    // the mark goes publishes the event twice (at least once, as EventBridge delivers); the local start
    // looks in events.jsonl first.
    if (changed) {
      await ctx.events.publish(EVENT_DETAIL_TYPES[final.status], finalEventDetail(final, ctx.now()));
      recordJobOutcome(final);
    }
    row = final;
    await tagInput(ctx, f, isFinalStatus(row.status) ? row.status : f.status);
    if (changed) await ctx.ledger.finalEventPublished(row.jobId);
  } else {
    ctx.logger.error('job has no ledger row and its kind is unknown; only the report and tags are written', { jobId: f.jobId });
    await tagInput(ctx, f, f.status);
  }
  return row ? finishResultOf(row) : { status: f.status, ...(reportKey && { reportKey }), ...(f.error && { error: f.error }) };
}

/** The input's tags: the job that took it and how it ended (what the inbox sweep reads once the row is gone). */
async function tagInput(ctx: StepContext, f: Finalisation, status: string): Promise<void> {
  try {
    await tagObject(ctx.s3, f.input, { [TAG_JOB_ID]: f.jobId, [TAG_STATUS]: status });
  } catch (err) {
    // The input may have been deleted meanwhile; the job's outcome stands without its tags.
    ctx.logger.warn('could not tag the input object', { jobId: f.jobId, key: f.input.key, err: String(err) });
  }
}

/** The detail of a final row's event: the row, and a line per raster result not copied and per partial result kept. */
export function finalEventDetail(row: LedgerRow, at: Date): JobEventDetail {
  const lines = [...rasterMessages(row.parts ?? []), ...partialResultMessages(row.parts ?? [])];
  return { ...eventDetailFromRow(row), ...(lines.length > 0 && { messages: lines }), at: at.toISOString() };
}

/** The report's list of partial results kept for FAILED processings (store-results.ts storePartialResults), and what it means. */
function partialResultsOf(parts: readonly JobPart[] | undefined): { partialResults?: { part: string; key: string; features: number }[]; partialResultsNote?: string } {
  const kept = (parts ?? []).flatMap((part) => (part.partialResult ? [{ part: part.name, ...part.partialResult }] : []));
  return kept.length > 0 ? { partialResults: kept, partialResultsNote: PARTIAL_RESULTS_NOTE } : {};
}

export const PARTIAL_RESULTS_NOTE =
  'the processing failed in Mapflow after it had made part of its results; what it made was kept beside this report (partial-result.geojson): it covers only part of the area.';

/** One line per part whose FAILED processing's partial results were kept. */
export function partialResultMessages(parts: readonly JobPart[]): string[] {
  return parts
    .filter((part) => part.partialResult)
    .map((part) => `part '${part.name}'${part.processingId ? ` (processing ${part.processingId})` : ''} failed after making ${part.partialResult!.features} features; these partial results are kept at ${part.partialResult!.key}`);
}

/** The AOI (the GeoJSON input, else the first part's geometry) and the reason, beside the report; never fails the job. */
async function failureQuicklook(ctx: StepContext, f: Finalisation, reportKey: string): Promise<string | undefined> {
  const aoiKeys = [
    ...(inputKind(f.input.key) === 'geojson' ? [{ key: f.input.key, maxBytes: MAX_FAILED_INPUT_AOI_BYTES }] : []),
    workKey(ctx.config.prefixes, f.jobId, 'part-0.geometry.json'),
    // A GeoTIFF refused by Inspect GeoTIFF has no part: the footprint it wrote (inspect-geotiff.ts).
    ...(inputKind(f.input.key) === 'geotiff' ? [workKey(ctx.config.prefixes, f.jobId, FOOTPRINT_FILE)] : []),
  ];
  try {
    return await writeFailureQuicklook(ctx.s3, f.input.bucket, {
      reportKey,
      aoiKeys,
      text: { title: f.input.key, subtitle: `${f.status}${f.routeName ? `, route ${f.routeName}` : ''}`, reason: f.error ? `${f.error.code}: ${f.error.message}` : f.status },
    });
  } catch (err) {
    ctx.logger.warn('could not write the quicklook', { jobId: f.jobId, reportKey, err: String(err) });
    return undefined;
  }
}

/** One line per raster result the bridge did not copy (store-results.ts rasterResultOf), with its link. */
export function rasterMessages(parts: readonly JobPart[]): string[] {
  return parts
    .filter((part) => part.status === 'OK' && part.rasterResult)
    .map((part) => {
      const link = part.rasterResult!.tileJsonUrl ?? part.rasterResult!.tileUrl;
      return `part '${part.name}'${part.processingId ? ` (processing ${part.processingId})` : ''} has a raster result that mapflow-bridge does not copy (Mapflow serves it as map tiles only); it stays in Mapflow: ${link}`;
    });
}

function finishResultOf(row: LedgerRow): FinishResult {
  return {
    status: row.status as FinalStatus,
    ...(row.resultPrefix && { resultPrefix: row.resultPrefix }),
    ...(row.reportKey && { reportKey: row.reportKey }),
    ...(row.actualCost !== undefined && { actualCost: row.actualCost }),
    ...(row.error && { error: row.error }),
  };
}

/** `jobs retry <jobId>` in a message -> `jobs retry <the id>`. */
export function withJobId(message: string, jobId: string): string {
  return message.replaceAll('jobs retry <jobId>', `jobs retry ${jobId}`);
}
