/**
 * Ensure Mosaic: finds the route's mosaic (by the id remembered in the
 * ledger, verified with Mapflow) or creates it, and checks that the image
 * can join it: Mapflow wants every image of a mosaic to share CRS, band count
 * and resolution, and says so only after a whole upload.
 */
import { EVENT_DETAIL_TYPES } from '../model.ts';
import type { MosaicResult, WorkflowState } from '../workflow.ts';
import { checkImageAgainstMosaic } from '../../geotiff/index.ts';
import type { MapflowClient } from '../../mapflow/index.ts';
import { defaultMosaicName } from '../../routing/index.ts';
import { isNotFound, publishRow, routeOf, topJob } from './common.ts';
import type { StepContext } from './context.ts';

export async function ensureMosaic(state: WorkflowState, ctx: StepContext): Promise<MosaicResult> {
  const job = topJob(state);
  const route = routeOf(ctx, job);
  const name = defaultMosaicName(route, state.image);
  const client = await ctx.mapflow();

  const { mosaicId, created } = await findOrCreateMosaic(ctx, client, name);

  const images = await client.listMosaicImages(mosaicId);
  if (state.image) {
    const existing = images.map((image) => image.meta_data).filter((meta) => meta !== undefined && meta !== null);
    checkImageAgainstMosaic(state.image, existing);
  }

  const { changed, row } = await ctx.ledger.transition(job.jobId, 'UPLOADING', { mosaicId }, `mosaic ${name}`);
  if (changed) await publishRow(ctx, EVENT_DETAIL_TYPES.UPLOADING, row);

  return { mosaicId, name, created, imageCount: images.length };
}

async function findOrCreateMosaic(ctx: StepContext, client: MapflowClient, name: string): Promise<{ mosaicId: string; created: boolean }> {
  const known = await ctx.mosaics.get(name);
  if (known) {
    try {
      await client.getMosaic(known.id);
      return { mosaicId: known.id, created: false };
    } catch (err) {
      if (!isNotFound(err)) throw err;
      ctx.logger.warn('remembered mosaic no longer exists in Mapflow; creating it again', { name, mosaicId: known.id });
    }
  }
  // No list endpoint exists to find a mosaic whose create answer was lost, so
  // a MapflowOutcomeUnknown here is left to the Retry (at worst an empty mosaic is orphaned).
  const mosaic = await client.createMosaic({ name, tags: ['mapflow-bridge'] });
  const winner = await ctx.mosaics.claim(name, mosaic.id, ctx.now(), known?.id);
  if (winner !== mosaic.id) {
    // Another job created the same mosaic at the same moment: use theirs, drop ours (it is empty).
    await client.deleteMosaic(mosaic.id).catch((err: unknown) => ctx.logger.warn('could not delete a duplicate empty mosaic', { mosaicId: mosaic.id, err: String(err) }));
    return { mosaicId: winner, created: false };
  }
  return { mosaicId: mosaic.id, created: true };
}
