/**
 * Inspect GeoTIFF: reads the header of the dropped image with ranged reads
 * (never the whole file) and checks, before anything is uploaded, that
 * Mapflow can take it: georeferenced, readable pixels, within the account's
 * upload limits and free storage, and, when the route processes images, fit
 * for the route's model and within the account's area per processing. The
 * credit budget is checked by Plan Processing, with the image as the source.
 */
import { decodeDeadline, type RemainingTime } from '../../core/deadline.ts';
import { InputRejected } from '../../core/errors.ts';
import type { InspectResult, WorkflowState } from '../workflow.ts';
import {
  DEFAULT_MAX_PIXEL_COUNT,
  DEFAULT_MAX_UPLOAD_FILE_SIZE,
  UnknownModelRequirements,
  checkImageForModel,
  checkImageLimits,
  inspectGeoTiff,
  requirementsForModel,
  s3RangeSource,
} from '../../geotiff/index.ts';
import { DEFAULT_GEOJSON_MODEL, FOOTPRINT_FILE, workKey } from '../../routing/index.ts';
import { writeJson } from '../../storage/s3.ts';
import { routeOf, topJob } from '../common.ts';
import type { StepContext } from '../context.ts';
import { aoiAreaLimitOf, checkImageArea } from '../image-area.ts';
import { explicitBlocks, resolveModel } from '../models.ts';

/** @param invocation the Lambda context: the pixel check stops in time and rejects the file (core/deadline.ts). */
export async function inspectGeotiff(state: WorkflowState, ctx: StepContext, invocation?: RemainingTime): Promise<InspectResult> {
  const job = topJob(state);
  const route = routeOf(ctx, job);
  const { input } = state;
  if (input.size === 0) throw new InputRejected('EMPTY_FILE', `'${input.key}' is empty; drop the GeoTIFF again once it is fully written.`);

  const client = await ctx.mapflow();
  // The file size first: the probe reads every compressed block, which must not happen for a file Mapflow refuses anyway.
  const usage = await client.getStorageUsage();
  const limits = {
    maxUploadFileSize: usage.maxUploadFileSize ?? DEFAULT_MAX_UPLOAD_FILE_SIZE,
    maxPixelCount: usage.maxPixelCount ?? DEFAULT_MAX_PIXEL_COUNT,
    // No limit (memoryLimit: null) means no free-space check.
    ...(usage.limitBytes !== undefined && usage.limitBytes > 0 && usage.freeBytes !== undefined && { freeBytes: usage.freeBytes }),
  };
  if (input.size > limits.maxUploadFileSize) checkImageLimits({ width: 0, height: 0 }, input.size, limits);

  const source = s3RangeSource(ctx.s3, { bucket: input.bucket, key: input.key, versionId: input.versionId, size: input.size });
  const deadline = decodeDeadline(invocation);
  const info = await inspectGeoTiff(source, { probePixels: true, ...(deadline && { deadline }) });
  try {
    await checkImage(info, input, job, route, limits, client, ctx);
  } catch (error) {
    // The failure quicklook of an image refused here draws its outline (finalize.ts reads it), as the console's map does.
    if (error instanceof InputRejected) await writeFootprint(ctx, state.jobId, input.bucket, info.footprint4326);
    throw error;
  }

  const { bytesRead: _bytesRead, ...image } = info;
  return { ...image, size: input.size };
}

/** The image's footprint beside the job's work objects, for the quicklook of its rejection; never fails the job. */
async function writeFootprint(ctx: StepContext, jobId: string, bucket: string, footprint: unknown): Promise<void> {
  try {
    await writeJson(ctx.s3, bucket, workKey(ctx.config.prefixes, jobId, FOOTPRINT_FILE), footprint);
  } catch (err) {
    ctx.logger.warn('could not write the footprint of a rejected image', { jobId, err: String(err) });
  }
}

/** The checks of an inspected image against the account and the route's model (see the file's comment). */
async function checkImage(
  info: Awaited<ReturnType<typeof inspectGeoTiff>>,
  input: WorkflowState['input'],
  job: ReturnType<typeof topJob>,
  route: ReturnType<typeof routeOf>,
  limits: Parameters<typeof checkImageLimits>[2],
  client: Awaited<ReturnType<StepContext['mapflow']>>,
  ctx: StepContext,
): Promise<void> {
  if (job.processImages) {
    const status = await client.getUserStatus();
    const model = resolveModel(status.models, route.model ?? DEFAULT_GEOJSON_MODEL);
    let requirements: ReturnType<typeof requirementsForModel> | undefined;
    try {
      requirements = requirementsForModel(model.name);
    } catch (err) {
      if (!(err instanceof UnknownModelRequirements)) throw err;
      // A custom model without a known table entry: Mapflow's own validator decides.
      ctx.logger.info('no local requirements for model; Mapflow will validate the image', { model: model.name });
    }
    if (requirements) checkImageForModel(info, requirements);
    // Before any byte goes up (an image the model cannot take is told so first): Mapflow would refuse
    // the processing only after the upload (image-area.ts).
    checkImageArea(info.footprint4326, await aoiAreaLimitOf(client, status, route, ctx), input.key);
    // The route's blocks are checked before the upload too (a mandatory block disabled is refused).
    explicitBlocks(model, route.blocks);
    // No cost call here: the service prices the processing with its source, which for an image is the
    // uploaded image itself (the plugin posts the create body, image ids and all, to the cost endpoint:
    // mapflow-qgis mapflow/functional/api/processing_api.py lines 93-99). Plan Processing prices it once
    // uploaded, and deletes the image of a job it refuses (plan-processing.ts).
  }

  checkImageLimits(info, input.size, limits);
}
