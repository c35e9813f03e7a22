/**
 * Fail Job: where every top-level Catch leads. Reads the caught error (any
 * shape: this is the last line and must not throw because of it) and ends the
 * job REJECTED (an InputRejected) or FAILED, with a report under failed/, the
 * ledger's final status, the final event and the input's tags. The job's slots
 * are freed and handed on by the next step, Release Job Slots.
 */
import type { FinishResult, WorkflowState } from '../workflow.ts';
import { recordedKind, resolveRoute } from '../../routing/index.ts';
import type { StepContext } from '../context.ts';
import { finaliseJob } from '../finalize.ts';
import { jobErrorFromTaskError } from '../outcome.ts';

export async function failJob(state: WorkflowState, ctx: StepContext): Promise<FinishResult> {
  const { error, rejected } = overrunAsRejection(jobErrorFromTaskError(state?.error), state);
  if (!state?.jobId || !state.input?.key || !state.input.bucket) {
    ctx.logger.error('Fail Job got a state without jobId/input; nothing to record', { error });
    return { status: rejected ? 'REJECTED' : 'FAILED', error };
  }
  // A row for every input, even one that failed before Register Job wrote it (kind 'unsupported' for a file the bridge does not take).
  const kind = state.job?.kind ?? recordedKind(state.input.key);
  const routeName = state.job?.routeName ?? resolveRoute(ctx.config.routes, state.input.key, ctx.config.prefixes.inbox)?.name;
  const parts = state.parts && state.parts.length > 0 ? state.parts : undefined;
  return finaliseJob(ctx, {
    jobId: state.jobId,
    input: state.input,
    ...(kind && { kind }),
    ...(routeName && { routeName }),
    status: rejected ? 'REJECTED' : 'FAILED',
    error,
    ...(parts && { parts }),
    report: { caught: { error: typeof state.error?.Error === 'string' ? state.error.Error : undefined } },
  });
}

/**
 * A step that outgrew its memory (Runtime.OutOfMemory: a Lambda's MemorySize
 * on AWS, the bounded process of a local environment) before any processing
 * existed ran out on the input's bytes: the checks and decoders bound what
 * they build, so what still overflows is the file's doing. Nothing was spent:
 * the job ends REJECTED (INPUT_TOO_COMPLEX), as a check that refused it would.
 * After a processing was created (Store Results), it stays FAILED.
 *
 * On AWS a sandbox over its memory is not always reported as
 * Runtime.OutOfMemory: the kernel's kill reaches Step Functions as
 * Runtime.ExitError "Runtime exited with error: signal: killed" (e.g.
 * awslabs/amazon-s3-find-and-forget#283, a 128 MB function given a large
 * query result), so that one counts too; other exits (a segfault) do not.
 */
export function overrunAsRejection(outcome: ReturnType<typeof jobErrorFromTaskError>, state: WorkflowState | undefined): ReturnType<typeof jobErrorFromTaskError> {
  const overrun = outcome.error.code === 'RUNTIME_OUT_OF_MEMORY' || (outcome.error.code === 'RUNTIME_EXIT_ERROR' && /signal: (killed|SIGKILL)\b/.test(outcome.error.message));
  const partsRan = (state?.parts?.length ?? 0) > 0 || (state?.partOutcomes?.length ?? 0) > 0;
  if (outcome.rejected || !overrun || partsRan) return outcome;
  return {
    rejected: true,
    error: {
      code: 'INPUT_TOO_COMPLEX',
      message: `checking the file needed more memory than the bridge allows one step (${outcome.error.message}); nothing was sent to Mapflow. Simplify or split the file, or export it again from a GIS (for a GeoTIFF: gdal_translate -co COMPRESS=DEFLATE -co TILED=YES)`,
    },
  };
}
