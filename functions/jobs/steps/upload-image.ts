/**
 * Upload Image: streams the GeoTIFF from S3 into the mosaic (never held in
 * memory). Safe to retry: an image of the same file name and size already in
 * the mosaic (an earlier attempt whose answer was lost, or the same file
 * dropped again) is reused instead of uploaded twice.
 */
import { posix } from 'node:path';
import { BridgeError, InputRejected } from '../errors.ts';
import { EVENT_DETAIL_TYPES } from '../model.ts';
import type { UploadResult, WorkflowState } from '../workflow.ts';
import type { ImageRecord, MapflowClient } from '../../mapflow/index.ts';
import { openObjectStream } from '../../storage/s3.ts';
import { errorName, isOutcomeUnknown, mapflowErrorInfo, publishRow, topJob } from './common.ts';
import type { StepContext } from './context.ts';
import { isLonLat, parseWktPolygon } from './wkt.ts';

export async function uploadImage(state: WorkflowState, ctx: StepContext): Promise<UploadResult> {
  const job = topJob(state);
  const mosaicId = state.mosaic?.mosaicId;
  if (!mosaicId) throw new BridgeError('STATE_INCOMPLETE', `the state of job ${job.jobId} has no mosaic at $.mosaic`);
  const { input } = state;
  const filename = posix.basename(input.key);
  const client = await ctx.mapflow();

  let image = await findUploaded(client, mosaicId, filename, input.size);
  const reused = image !== undefined;
  if (!image) {
    try {
      const object = await openObjectStream(ctx.s3, input);
      image = await client.uploadImage(mosaicId, { stream: object.stream, size: object.size, filename, contentType: 'image/tiff' });
    } catch (err) {
      if (isOutcomeUnknown(err)) {
        image = await findUploaded(client, mosaicId, filename, input.size);
        if (!image) throw err; // not there: the Retry uploads again
      } else {
        throw rejectionForUploadError(err, filename) ?? err;
      }
    }
  }

  const { changed, row } = await ctx.ledger.transition(job.jobId, 'UPLOADED', { mosaicId, imageId: image.id }, reused ? 'reused an image already in the mosaic' : undefined);
  if (changed) await publishRow(ctx, EVENT_DETAIL_TYPES.UPLOADED, row);

  const wkt = parseWktPolygon(image.footprint);
  const footprint = wkt && isLonLat(wkt) ? wkt : state.image?.footprint4326;
  if (!footprint) throw new BridgeError('STATE_INCOMPLETE', `image ${image.id} has no footprint and the state has no inspected footprint at $.image`);
  return { mosaicId, imageId: image.id, filename, fileSize: input.size, reused, footprint };
}

async function findUploaded(client: MapflowClient, mosaicId: string, filename: string, size: number): Promise<ImageRecord | undefined> {
  const images = await client.listMosaicImages(mosaicId);
  return images.find((i) => (i.filename ?? '') === filename && (i.file_size ?? i.fileSize) === size);
}

/** Mapflow's data-interface refusals that are about the file, as rejections that say what to fix. */
export function rejectionForUploadError(err: unknown, filename: string): InputRejected | undefined {
  const name = errorName(err);
  if (name !== 'MapflowRequestError') return undefined;
  const { status, code, params, message } = mapflowErrorInfo(err);
  const detail = params && Object.keys(params).length ? ` (${Object.entries(params).map(([k, v]) => `${k}=${String(v)}`).join(', ')})` : '';
  const options = { cause: err, details: { mapflowCode: code, status } };
  switch (code) {
    case 'FileTooBig':
    case 'ImageExtentTooBig':
      return new InputRejected('FILE_TOO_LARGE', `Mapflow refused '${filename}' as too big${detail}; split the image into smaller tiles.`, options);
    case 'MemoryLimitExceeded':
      return new InputRejected('STORAGE_QUOTA_EXCEEDED', `the Mapflow storage of this account has no room for '${filename}'${detail}; delete old mosaics or images in Mapflow, or ask for more storage.`, options);
    case 'FileValidationFailed':
    case 'FileOpenError':
      return new InputRejected('NOT_GEOTIFF', `Mapflow could not read '${filename}' as a GeoTIFF${detail}; export it again as a georeferenced GeoTIFF.`, options);
    case 'ImageOutOfBounds':
      return new InputRejected('MOSAIC_MISMATCH', `Mapflow refused '${filename}' for its mosaic${detail}; use a route with another mosaic for this image.`, options);
  }
  if (status === 413 || status === 422) {
    return new InputRejected(
      'MOSAIC_MISMATCH',
      `Mapflow refused '${filename}' for its mosaic (${message}); all images of a mosaic need the same CRS, band count and resolution: use a route with another mosaicName.`,
      options,
    );
  }
  return undefined;
}
