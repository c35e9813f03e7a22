/**
 * Finish Job: the end of a job that ran to completion. Aggregates the parts:
 * SUCCEEDED when all are OK; REJECTED when none is and every failure was a
 * rejection of the input; FAILED otherwise (parts that succeeded keep their
 * results). An upload-only GeoTIFF succeeds with a job.json describing the
 * image. See finalize.ts for the writes.
 */
import type { JobError, JobPart } from '../../core/model.ts';
import type { FinishResult, WorkflowState } from '../workflow.ts';
import { resultPrefix as resultPrefixFor } from '../../routing/index.ts';
import { writeJson } from '../../storage/s3.ts';
import { topJob } from '../common.ts';
import type { StepContext } from '../context.ts';
import { finaliseJob, type FinalStatus } from '../finalize.ts';
import { HOW_TO_RETRY, isRejectionCode } from '../outcome.ts';
import { partsCharge } from '../../core/credits.ts';

export async function finishJob(state: WorkflowState, ctx: StepContext): Promise<FinishResult> {
  const job = topJob(state);
  const resultPrefix = resultPrefixFor(ctx.config.prefixes, state.input.key);
  const base = { jobId: state.jobId, input: state.input, kind: job.kind, routeName: job.routeName };

  if (job.kind === 'geotiff' && !job.processImages) {
    const existing = await ctx.ledger.get(state.jobId);
    if (!existing || !['SUCCEEDED', 'FAILED', 'REJECTED'].includes(existing.status)) {
      await writeUploadSummary(state, ctx, resultPrefix);
    }
    return finaliseJob(ctx, { ...base, status: 'SUCCEEDED', resultPrefix });
  }

  const parts = (await partsOf(state, ctx)).sort((a, b) => a.index - b.index);
  const { status, error } = aggregate(parts, state.plan?.parts.length ?? parts.length);
  const charged = partsCharge(parts);
  return finaliseJob(ctx, {
    ...base,
    status,
    parts,
    ...(error && { error }),
    ...(charged !== undefined && { actualCost: charged }),
    ...(parts.some((p) => p.status === 'OK') && { resultPrefix }),
    ...(state.plan && { report: { estimatedCost: state.plan.estimatedCost, areaSqKm: state.plan.areaSqKm, model: state.plan.modelName } }),
  });
}

/**
 * The outcomes of the parts that finished: those the Map reports in brief
 * (`$.partOutcomes`), in full from the ledger row, where Finish Part recorded
 * each before returning (read consistently). An execution started on the
 * definition before issue 37 point 3 still carries them in full at `$.parts`.
 */
async function partsOf(state: WorkflowState, ctx: StepContext): Promise<JobPart[]> {
  if (state.parts) return [...state.parts];
  const finished = new Set((state.partOutcomes ?? []).map((part) => part.index));
  if (finished.size === 0) return [];
  const row = await ctx.ledger.get(state.jobId);
  return (row?.parts ?? []).filter((part) => finished.has(part.index));
}

/** The job's status and error from its parts' outcomes. */
export function aggregate(parts: JobPart[], expected: number): { status: FinalStatus; error?: JobError } {
  const failed = parts.filter((p) => p.status !== 'OK');
  if (parts.length === 0 || parts.length < expected) {
    return { status: 'FAILED', error: { code: 'INTERNAL_ERROR', message: `only ${parts.length} of ${expected} parts reported an outcome; ${HOW_TO_RETRY}.` } };
  }
  if (failed.length === 0) return { status: 'SUCCEEDED' };
  const first = failed[0]!.error ?? { code: 'PROCESSING_FAILED', message: `part '${failed[0]!.name}' failed without a reason.` };
  const rejected = failed.length === parts.length && failed.every((p) => isRejectionCode(p.error?.code));
  if (parts.length === 1) return { status: rejected ? 'REJECTED' : 'FAILED', error: first };
  const summary = failed
    .slice(0, 5)
    .map((p) => `'${p.name}': ${p.error?.code ?? 'FAILED'}`)
    .join('; ');
  const more = failed.length > 5 ? `; and ${failed.length - 5} more` : '';
  return {
    status: rejected ? 'REJECTED' : 'FAILED',
    error: {
      code: first.code,
      message: `${failed.length} of ${parts.length} parts failed (${summary}${more}). First: ${first.message}${parts.length > failed.length ? ' The other parts succeeded and their results are kept.' : ''}`,
      ...(first.mapflowMessages && { mapflowMessages: first.mapflowMessages }),
    },
  };
}

/** job.json of an upload-only GeoTIFF: the image record Mapflow keeps, and what the bridge saw. */
async function writeUploadSummary(state: WorkflowState, ctx: StepContext, resultPrefix: string): Promise<void> {
  const upload = state.upload;
  let image: unknown = upload;
  if (upload) {
    try {
      image = await (await ctx.mapflow()).getImage(upload.imageId);
    } catch (err) {
      ctx.logger.warn('could not read the image record; job.json keeps the upload result', { imageId: upload.imageId, err: String(err) });
    }
  }
  await writeJson(ctx.s3, state.input.bucket, `${resultPrefix}job.json`, {
    jobId: state.jobId,
    input: state.input,
    route: state.job?.routeName,
    mosaic: state.mosaic,
    upload,
    image,
    inspected: state.image,
    timings: { registeredAt: state.job?.createdAt, finishedAt: ctx.now().toISOString() },
  });
}
