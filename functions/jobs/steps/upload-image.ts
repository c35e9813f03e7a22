/**
 * Upload Image: streams the GeoTIFF from S3 into the mosaic (never held in
 * memory), then waits, in the state machine's own Wait loop, until Mapflow
 * has preprocessed it.
 *
 * - The upload answer may name no image: the raster service answers
 *   `{"message": "Files successfully uploaded", "mosaic_id"}` (mapflow-qgis
 *   spec/002_E_zoom_selector_api.md). The image is then found in the mosaic
 *   by what survives the server renaming the file: the SHA-1 `checksum` of the
 *   bytes sent, the size, and an upload time after the upload began; an image
 *   not listed yet is looked for in `GET /rasters/mosaic/{id}/status`, which
 *   lists images that are not ready.
 * - An uploaded image is preprocessed before it can be used
 *   (`GET /rasters/image/{id}/status`: preprocessing_status NONE, PENDING,
 *   IN_PROGRESS, COMPLETED, FAILED; data_available). Until it is COMPLETED and
 *   data_available, the step answers `ready: false` with a `waitSeconds`; the
 *   machine waits and runs this step again, which then only looks at the
 *   status. FAILED ends the job REJECTED (IMAGE_PREPROCESSING_FAILED) with
 *   Mapflow's preprocessing_error in the report.
 * - Safe to retry: an image of the same file name and size already in the
 *   mosaic (an earlier attempt whose answer was lost, or the same file dropped
 *   again) is reused instead of uploaded twice.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import { BridgeError, InputRejected } from '../../core/errors.ts';
import { EVENT_DETAIL_TYPES } from '../../core/model.ts';
import type { UploadResult, WorkflowState } from '../workflow.ts';
import { nextPollSeconds } from '../../polling/poll-policy.ts';
import type { ImageRecord, ImageStatus, MapflowClient } from '../../mapflow/index.ts';
import { openObjectStream } from '../../storage/s3.ts';
import { errorName, isNotFound, isOutcomeUnknown, mapflowErrorInfo, publishRow, topJob } from '../common.ts';
import type { StepContext } from '../context.ts';
import { isLonLat, parseWktPolygon } from '../wkt.ts';

/** Clocks of the bridge and of Mapflow may differ; an image uploaded this long before our start still counts. */
const CLOCK_SKEW_MS = 60_000;
/** Image ids of the mosaic before the upload kept in the state (bounds the state's size). */
const MAX_PRIOR_IDS = 500;

export async function uploadImage(state: WorkflowState, ctx: StepContext): Promise<UploadResult> {
  const job = topJob(state);
  const mosaicId = state.mosaic?.mosaicId;
  if (!mosaicId) throw new BridgeError('STATE_INCOMPLETE', `the state of job ${job.jobId} has no mosaic at $.mosaic`);
  const { input } = state;
  const filename = posix.basename(input.key);
  const client = await ctx.mapflow();
  const previous = state.upload?.mosaicId === mosaicId ? state.upload : undefined;

  let imageId = previous?.imageId || undefined;
  let image: ImageRecord | undefined;
  // A run after a ready one repeats the step (its image is reused); a run from the wait loop keeps the first answer.
  let reused = previous?.ready === true ? true : previous?.reused ?? false;
  let uploadedAt = previous?.uploadedAt;
  let checksum = previous?.checksum;
  let prior = previous?.priorImageIds;

  if (!imageId && uploadedAt) {
    // Back from the wait loop: the upload was sent; look for its image again.
    ({ image, imageId } = await locateUploaded(client, mosaicId, { checksum, size: input.size, filename, uploadedAt, prior }));
  } else if (!imageId) {
    const existing = await client.listMosaicImages(mosaicId);
    image = existing.find((i) => (i.filename ?? '') === filename && (i.file_size ?? i.fileSize) === input.size);
    reused = image !== undefined;
    // The same bytes may already be in the mosaic under another name: never take that image for the new one.
    prior = existing.map((i) => i.id).slice(-MAX_PRIOR_IDS);
    if (!image) {
      uploadedAt = ctx.now().toISOString();
      const hash = createHash('sha1');
      try {
        const object = await openObjectStream(ctx.s3, input);
        const hashed = Readable.from(hashing(object.stream, hash), { objectMode: false });
        const answer = await client.uploadImage(mosaicId, { stream: hashed, size: object.size, filename, contentType: 'image/tiff' });
        checksum = hash.digest('hex');
        image = answer.image;
        if (!image) ({ image, imageId } = await locateUploaded(client, mosaicId, { checksum, size: input.size, filename, uploadedAt, prior }));
      } catch (err) {
        if (isOutcomeUnknown(err)) {
          ({ image, imageId } = await locateUploaded(client, mosaicId, { size: input.size, filename, uploadedAt, prior }));
          if (!image && !imageId) throw err; // not there: the Retry uploads again
        } else {
          throw rejectionForUploadError(err, filename) ?? err;
        }
      }
    }
  }
  imageId = image?.id ?? imageId;
  const checks = (previous?.checks ?? 0) + 1;
  const policy = ctx.config.pollPolicy;

  if (!imageId) {
    // Uploaded, but not listed yet (the list may show only preprocessed images).
    assertWithinBudget(ctx, uploadedAt, `the image uploaded as '${filename}' never appeared in mosaic ${mosaicId}`);
    return {
      mosaicId, imageId: '', filename, fileSize: input.size, reused,
      footprint: previous?.footprint ?? fallbackFootprint(state, filename),
      ready: false, waitSeconds: nextPollSeconds(policy, { polls: checks }, ctx.random), checks,
      ...(uploadedAt && { uploadedAt }), ...(checksum && { checksum }), ...(prior && { priorImageIds: prior }),
    };
  }

  if (!previous?.imageId) {
    const { changed, row } = await ctx.ledger.transition(job.jobId, 'UPLOADED', { mosaicId, imageId }, reused ? 'reused an image already in the mosaic' : undefined);
    if (changed) await publishRow(ctx, EVENT_DETAIL_TYPES.UPLOADED, row);
  }

  const status = await preprocessingOf(client, imageId);
  if (status?.preprocessingStatus === 'FAILED') {
    const reason = status.preprocessingError ?? 'Mapflow gave no reason';
    throw new InputRejected(
      'IMAGE_PREPROCESSING_FAILED',
      `Mapflow could not prepare '${filename}' (image ${imageId}) for processing: ${reason}. Check the image's georeference, bands and data type, and export it again as a GeoTIFF (a changed file is a new job).`,
      { details: { imageId, mosaicId, preprocessingError: reason } },
    );
  }
  const ready = isReady(status);
  if (!ready) assertWithinBudget(ctx, uploadedAt ?? job.createdAt, `image ${imageId} ('${filename}') was still ${status?.preprocessingStatus} in Mapflow's preprocessing`);

  let footprint = previous?.footprint;
  if (ready || !footprint) {
    if (!image && ready) image = await client.getImage(imageId).catch(() => undefined);
    const wkt = image ? parseWktPolygon(image.footprint) : undefined;
    footprint = wkt && isLonLat(wkt) ? wkt : footprint ?? fallbackFootprint(state, filename, imageId);
  }
  return {
    mosaicId,
    imageId,
    filename,
    fileSize: input.size,
    reused,
    footprint,
    ready,
    waitSeconds: ready ? 0 : nextPollSeconds(policy, { polls: checks }, ctx.random),
    ...(status && { preprocessingStatus: status.preprocessingStatus }),
    checks,
    ...(uploadedAt && { uploadedAt }),
    ...(checksum && { checksum }),
  };
}

/** The bytes as they pass, into `hash` (the image list's checksum is SHA-1 of the file). */
async function* hashing(source: Readable, hash: ReturnType<typeof createHash>): AsyncGenerator<Buffer> {
  for await (const chunk of source as AsyncIterable<Buffer>) {
    hash.update(chunk);
    yield chunk;
  }
}

/** COMPLETED (or NONE: nothing to prepare) with data available; no status endpoint at all counts as ready. */
export function isReady(status: ImageStatus | undefined): boolean {
  if (!status) return true;
  const s = status.preprocessingStatus;
  return (s === 'COMPLETED' || s === 'NONE') && status.dataAvailable !== false;
}

/**
 * The image's preprocessing state; undefined when the service has no such
 * endpoint (an older service). The live endpoint also answers 404 for an
 * image that does not exist or belongs to another account (mapflow-qgis
 * spec/002_E_zoom_selector_api.md lines 117-118), so a 404 is told apart by
 * asking for the image itself: there, the status endpoint is missing; gone
 * (404) or another account's (403 `AccessDenied`, mapflow-qgis
 * mapflow/errors/data_errors.py), the image is.
 * @throws BridgeError IMAGE_NOT_FOUND when Mapflow has no such image (anymore)
 */
export async function preprocessingOf(client: MapflowClient, imageId: string): Promise<ImageStatus | undefined> {
  try {
    return await client.getImageStatus(imageId);
  } catch (err) {
    if (mapflowErrorInfo(err).status === 405) return undefined;
    if (!isNotFound(err)) throw err;
    try {
      await client.getImage(imageId);
    } catch (imageErr) {
      if (!isNotFound(imageErr) && mapflowErrorInfo(imageErr).status !== 403) throw imageErr;
      throw new BridgeError(
        'IMAGE_NOT_FOUND',
        `IMAGE_NOT_FOUND: Mapflow has no image ${imageId} (deleted, or not in this account) while the bridge waited for its preprocessing; drop the file again under a new name.`,
        { cause: err },
      );
    }
    return undefined; // the image is there: the service has no status endpoint
  }
}

function assertWithinBudget(ctx: StepContext, since: string | undefined, what: string): void {
  const start = since ? Date.parse(since) : NaN;
  const limitSeconds = ctx.config.pollPolicy.maxJobSeconds;
  if (!Number.isNaN(start) && (ctx.now().getTime() - start) / 1000 > limitSeconds) {
    // `CODE: text`, so the code survives Step Functions' Cause into the report (parseCodedMessage).
    throw new BridgeError('IMAGE_NOT_READY', `IMAGE_NOT_READY: ${what} after ${limitSeconds} s (pollPolicy.maxJobSeconds); check the image in Mapflow, then drop the file again under a new name.`);
  }
}

function fallbackFootprint(state: WorkflowState, filename: string, imageId?: string): UploadResult['footprint'] {
  const footprint = state.image?.footprint4326;
  if (!footprint) throw new BridgeError('STATE_INCOMPLETE', `image ${imageId ?? `'${filename}'`} has no footprint and the state has no inspected footprint at $.image`);
  return footprint;
}

/**
 * The image an upload made, when its answer named none: in the image list by
 * checksum, else by size (uploaded since the upload began); else, not listed
 * yet, in the mosaic status by upload time (and name, when several).
 */
export async function locateUploaded(
  client: MapflowClient,
  mosaicId: string,
  sent: { checksum?: string; size: number; filename: string; uploadedAt: string; prior?: readonly string[] },
): Promise<{ image?: ImageRecord; imageId?: string }> {
  const since = Date.parse(sent.uploadedAt) - CLOCK_SKEW_MS;
  const prior = new Set(sent.prior ?? []);
  const recent = (id: string, time: string | undefined) => {
    if (prior.has(id)) return false;
    const t = time ? Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(time) ? time : `${time}Z`) : NaN;
    return Number.isNaN(t) || t >= since;
  };
  const all = await client.listMosaicImages(mosaicId);
  const images = all.filter((i) => recent(i.id, i.uploaded_at));
  const wanted = sent.checksum?.toLowerCase();
  const byChecksum = wanted ? images.find((i) => i.checksum?.toLowerCase() === wanted) : undefined;
  if (byChecksum) return { image: byChecksum };
  const bySize = images.filter((i) => (i.file_size ?? i.fileSize) === sent.size);
  const pick = <T extends { filename?: string }>(list: T[]) => (list.length === 1 ? list[0] : list.find((i) => i.filename === sent.filename));
  const image = pick(bySize);
  if (image) return { image };

  let statuses: ImageStatus[] = [];
  try {
    statuses = await client.getMosaicStatus(mosaicId);
  } catch (err) {
    if (!isNotFound(err) && mapflowErrorInfo(err).status !== 405) throw err;
  }
  const listed = new Set(all.map((i) => i.id));
  const pending = statuses.filter((s) => !listed.has(s.imageId) && s.uploadedAt !== undefined && recent(s.imageId, s.uploadedAt));
  const found = pick(pending);
  return found ? { imageId: found.imageId } : {};
}

/**
 * Mapflow's data-interface refusals that are about the file, as rejections
 * that say what to fix. The codes and their meaning are those of mapflow-qgis
 * errors/data_errors.py: FileValidationFailed is a file that does not fit its
 * mosaic ("{param_name} of the file is {got_param}, it should be
 * {expected_param} to fit the collection"), ImageOutOfBounds an extent out of
 * coordinate range ("check CRS and transform"), FileOpenError not a GeoTIFF,
 * ImageExtentTooBig a footprint too big to process, FileCheckFailed
 * parameters incompatible with the catalog.
 */
export function rejectionForUploadError(err: unknown, filename: string): InputRejected | undefined {
  const name = errorName(err);
  if (name !== 'MapflowRequestError') return undefined;
  const { status, code, params, message } = mapflowErrorInfo(err);
  const detail = params && Object.keys(params).length ? ` (${Object.entries(params).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')})` : '';
  const options = { cause: err, details: { mapflowCode: code, status } };
  switch (code) {
    case 'FileTooBig':
      return new InputRejected('FILE_TOO_LARGE', `Mapflow refused '${filename}' as too big${detail}; compress the file or cut it into smaller parts.`, options);
    case 'ImageExtentTooBig':
      return new InputRejected('FILE_TOO_LARGE', `Mapflow refused '${filename}': its footprint is too big to process${detail}; make sure its CRS and transform are valid, or cut the image into parts.`, options);
    case 'MemoryLimitExceeded':
      return new InputRejected('STORAGE_QUOTA_EXCEEDED', `the Mapflow storage of this account has no room for '${filename}'${detail}; delete old mosaics or images in Mapflow, or ask for more storage.`, options);
    case 'FileValidationFailed':
      return new InputRejected(
        'MOSAIC_MISMATCH',
        `Mapflow refused '${filename}' for its mosaic${detail}: all images of a mosaic need the same band count (Mapflow reprojects and resamples the rest); fix the file, or use a route with another mosaicName for this image.`,
        options,
      );
    case 'ImageOutOfBounds':
      return new InputRejected('NOT_GEOREFERENCED', `Mapflow refused '${filename}': its extent is out of coordinate range${detail}; check the image's CRS and geotransform, they are probably wrong.`, options);
    case 'FileOpenError':
      return new InputRejected('NOT_GEOTIFF', `Mapflow could not open '${filename}' as a GeoTIFF${detail}; export it again as a georeferenced GeoTIFF.`, options);
    case 'FileCheckFailed':
      return new InputRejected('IMAGE_INCOMPATIBLE', `Mapflow cannot process '${filename}': some of its parameters are incompatible with its catalog${detail}; see Mapflow's documentation on image requirements and export the image again.`, options);
  }
  if (status === 413 || status === 422) {
    return new InputRejected(
      'MOSAIC_MISMATCH',
      `Mapflow refused '${filename}' for its mosaic (${message}); all images of a mosaic need the same band count: use a route with another mosaicName.`,
      options,
    );
  }
  return undefined;
}
