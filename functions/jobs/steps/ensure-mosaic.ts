/**
 * Ensure Mosaic: finds the route's mosaic (by the id remembered in the
 * ledger, verified with Mapflow; else by name in the account's mosaic list)
 * or creates it, and checks that the image
 * can join it: Mapflow wants every image of a mosaic to have the same band count
 * (it reprojects and resamples the rest), and says so only after a whole upload.
 */
import { EVENT_DETAIL_TYPES } from '../../core/model.ts';
import type { MosaicResult, WorkflowState } from '../workflow.ts';
import { checkImageAgainstMosaic } from '../../geotiff/index.ts';
import type { MapflowClient } from '../../mapflow/index.ts';
import { defaultMosaicName } from '../../routing/index.ts';
import { isNotFound, isOutcomeUnknown, mapflowErrorInfo, publishRow, routeOf, topJob } from '../common.ts';
import type { StepContext } from '../context.ts';

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
  // GET /rasters/mosaic lists the account's mosaics (mapflow-qgis data_catalog_api.py
  // `get_mosaics`): one made by hand, or by an attempt whose create answer was lost, is adopted.
  let id = await findByName(client, name, known?.id);
  let createdHere = false;
  if (!id) {
    try {
      id = (await client.createMosaic({ name, tags: ['mapflow-bridge'] })).id;
      createdHere = true;
    } catch (err) {
      if (!isOutcomeUnknown(err)) throw err;
      id = await findByName(client, name, known?.id); // the lost create may have gone through
      if (!id) throw err; // not made: the Retry creates it
    }
  }
  const mosaic = { id };
  const winner = await ctx.mosaics.claim(name, mosaic.id, ctx.now(), known?.id);
  if (winner !== mosaic.id && createdHere) {
    // Another job created the same mosaic at the same moment: use theirs, drop ours (it is empty).
    await client.deleteMosaic(mosaic.id).catch((err: unknown) => ctx.logger.warn('could not delete a duplicate empty mosaic', { mosaicId: mosaic.id, err: String(err) }));
    return { mosaicId: winner, created: false };
  }
  return { mosaicId: winner, created: createdHere && winner === mosaic.id };
}

/** The newest mosaic called `name` (other than `exclude`), or undefined; an older service without the list answers 404/405. */
async function findByName(client: MapflowClient, name: string, exclude: string | undefined): Promise<string | undefined> {
  let mosaics;
  try {
    mosaics = await client.listMosaics();
  } catch (err) {
    if (isNotFound(err) || mapflowErrorInfo(err).status === 405) return undefined;
    throw err;
  }
  const named = mosaics.filter((m) => m.name === name && m.id !== exclude);
  named.sort((a, b) => String(b.created_at ?? '').localeCompare(String(a.created_at ?? '')));
  return named[0]?.id;
}
