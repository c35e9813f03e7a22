/**
 * Inspect GeoTIFF: reads the header of the dropped image with ranged reads
 * (never the whole file) and checks, before anything is uploaded, that
 * Mapflow can take it: georeferenced, readable pixels, within the account's
 * upload limits and free storage, and, when the route processes images, fit
 * for the route's model and within its credit budget.
 */
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
import { geodesicAreaSqM } from '../../aoi/geodesic-area.ts';
import { DEFAULT_CREDIT_BUDGET, DEFAULT_GEOJSON_MODEL } from '../../routing/index.ts';
import { round, routeOf, topJob } from '../common.ts';
import type { StepContext } from '../context.ts';
import { aoiAreaLimitOf, checkImageArea } from '../image-area.ts';
import { explicitBlocks, resolveModel } from '../models.ts';
import { rejectionForRequestError } from '../refusals.ts';

export async function inspectGeotiff(state: WorkflowState, ctx: StepContext): Promise<InspectResult> {
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
  const info = await inspectGeoTiff(source, { probePixels: true });

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
    checkImageArea(info.footprint4326, await aoiAreaLimitOf(client, status, ctx), input.key);
    const blocks = explicitBlocks(model, route.blocks);

    // The budget guard, before the upload: a job over budget must leave nothing behind in Mapflow.
    const areaSqKm = geodesicAreaSqM(info.footprint4326) / 1e6;
    const estimate = await client
      .estimateCost({
        wdId: model.id,
        geometry: info.footprint4326 as never,
        areaSqKm,
        ...(blocks && { blocks }),
      })
      // Refusals riding on the cost call are classified like those of the create.
      .catch((err: unknown) => {
        throw rejectionForRequestError(err, `the processing of '${input.key}'`) ?? err;
      });
    const creditBudget = route.creditBudget ?? DEFAULT_CREDIT_BUDGET;
    if (estimate > creditBudget) {
      throw new InputRejected(
        'BUDGET_EXCEEDED',
        `processing this image (${round(areaSqKm, 2)} km²) with '${model.name}' is estimated at ${estimate} credits, above the budget of ${creditBudget} credits of route '${route.name}'; nothing was uploaded. Drop a smaller image, or raise the route's creditBudget.`,
        { details: { estimatedCost: estimate, creditBudget, areaSqKm } },
      );
    }
  }

  checkImageLimits(info, input.size, limits);

  const { bytesRead: _bytesRead, ...image } = info;
  return { ...image, size: input.size };
}
