/**
 * The data interface: mosaics, images (streamed multipart upload, read back as
 * a GeoTIFF), links, previews and storage usage. Errors use the data family
 * shape `{detail: {code, parameters}}`.
 */
import busboy from 'busboy';
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { empty, isoTime, json, type Reply, type Route, type RouteRequest, type SimContext } from './context.ts';
import { readJsonObject, SimHttpError, validationFailed } from './http.ts';
import { DecodeRejection } from './decoder.ts';
import type { RasterInfo } from './raster-file.ts';
import type { ImageRecord, MosaicRecord } from './store.ts';
import { imageView, mosaicView } from './views.ts';

const PREVIEW_SIZES: Record<string, number> = { s: 256, l: 1024 };
/** Multipart framing around the file part, allowed on top of the file size limits. */
const MULTIPART_SLACK = 64 * 1024;
const BUCKET = 's3://mapflow-simulator-data';

const dataError = (status: number, code: string, message: string, parameters: Record<string, unknown> = {}) =>
  new SimHttpError(status, code, message, parameters);
const itemNotFound = (what: string, id: string) => dataError(404, 'ItemNotFound', `${what} ${id} not found`, { id, instance_type: what.toLowerCase(), uid: id });
/** A malformed data request: the reference's InvalidRequest; with --real-shapes FastAPI's 422 without a code (http.ts). */
const invalidRequest = (ctx: SimContext, message: string, field = 'request') =>
  ctx.realShapes ? validationFailed(message, field) : dataError(400, 'InvalidRequest', message);

function mosaicOr404(ctx: SimContext, id: string): MosaicRecord {
  const mosaic = ctx.store.state.mosaics.find((m) => m.id === id);
  if (!mosaic) throw itemNotFound('Mosaic', id);
  return mosaic;
}

function imageOr404(ctx: SimContext, id: string): ImageRecord {
  // Another account's image (realShapes): data_errors.py AccessDenied "You do not have access to {instance_type} with id {uid}".
  if (ctx.realShapes && ctx.live.foreignImageIds.has(id)) throw dataError(403, 'AccessDenied', `You do not have access to image with id ${id}`, { instance_type: 'image', uid: id });
  const image = ctx.store.state.images.find((i) => i.id === id);
  if (!image) throw itemNotFound('Image', id);
  return image;
}

function readTags(ctx: SimContext, value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((t) => typeof t !== 'string')) throw invalidRequest(ctx, 'tags must be an array of strings');
  return value as string[];
}

function newMosaic(ctx: SimContext, name: unknown, tags: string[]): MosaicRecord {
  if (typeof name !== 'string' || !name.trim()) throw invalidRequest(ctx, 'name is required');
  const mosaic: MosaicRecord = { id: randomUUID(), name, tags, created_at: isoTime(ctx.now()) };
  ctx.store.state.mosaics.push(mosaic);
  return mosaic;
}

function storageFree(ctx: SimContext): number {
  if (ctx.limits.storageLimitBytes === null) return Number.POSITIVE_INFINITY;
  return Math.max(0, ctx.limits.storageLimitBytes - ctx.store.storageUsed());
}

/** A file whose name asks for it fails preprocessing (realShapes), to test that path. */
const PREPROCESSING_FAILS = /preprocessing-fail/i;

/**
 * The preprocessing state of an image (raster-service contract, mapflow-qgis
 * spec/002_E_zoom_selector_api.md): PENDING for the first half of the
 * preprocessing time, IN_PROGRESS for the second, then COMPLETED (or FAILED).
 * Outside realShapes, or for images stored before, ready at once.
 */
export function preprocessingOf(ctx: SimContext, image: ImageRecord): { status: string; error: string | null; dataAvailable: boolean } {
  if (image.readyAt === undefined) return { status: 'COMPLETED', error: null, dataAvailable: true };
  const uploaded = Date.parse(image.uploaded_at);
  const now = ctx.now();
  if (now < image.readyAt) return { status: now < (uploaded + image.readyAt) / 2 ? 'PENDING' : 'IN_PROGRESS', error: null, dataAvailable: false };
  if (image.preprocessingError) return { status: 'FAILED', error: image.preprocessingError, dataAvailable: false };
  return { status: 'COMPLETED', error: null, dataAvailable: true };
}

export function imageReady(ctx: SimContext, image: ImageRecord): boolean {
  return preprocessingOf(ctx, image).status === 'COMPLETED';
}

function statusView(ctx: SimContext, image: ImageRecord) {
  const p = preprocessingOf(ctx, image);
  return {
    image_id: image.id,
    filename: image.filename,
    preprocessing_status: p.status,
    preprocessing_error: p.error,
    data_available: p.dataAvailable,
    uploaded_at: image.uploaded_at,
  };
}

// ---------------------------------------------------------------- upload

interface ReceivedFile {
  tempPath: string;
  filename: string;
  size: number;
  checksum: string;
}

/** Stops reading a request we have answered early, so the client is not left hanging. */
function abandon(req: IncomingMessage): void {
  req.unpipe();
  req.resume();
}

/**
 * Streams the multipart part `file` to a temporary file, counting its bytes
 * against the upload size limit and the free storage, hashing it on the way.
 */
function receiveFile(ctx: SimContext, req: IncomingMessage): Promise<ReceivedFile> {
  const contentType = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data/i.test(contentType)) {
    return Promise.reject(invalidRequest(ctx, 'The upload must be multipart/form-data with a part named file'));
  }
  const maxSize = ctx.limits.maxUploadFileSize;
  const free = storageFree(ctx);
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > maxSize + MULTIPART_SLACK) {
    return Promise.reject(dataError(413, 'FileTooBig', 'The file is larger than the maximum upload size', { max_size: maxSize, file_size: declared }));
  }
  if (Number.isFinite(declared) && declared > free + MULTIPART_SLACK) {
    return Promise.reject(dataError(413, 'MemoryLimitExceeded', 'Not enough free storage for this file', { memory_free: free, file_size: declared }));
  }

  return new Promise<ReceivedFile>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 1, fileSize: maxSize, fields: 50 } });
    } catch (cause) {
      reject(invalidRequest(ctx, `Malformed multipart request: ${(cause as Error).message}`));
      return;
    }
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      abandon(req);
      reject(error);
    };
    let received: Promise<ReceivedFile> | undefined;

    parser.on('file', (field, file, info) => {
      if (field !== 'file' || received) {
        file.resume();
        return;
      }
      const tempPath = ctx.store.filePath(`upload-${randomUUID()}.part`);
      // The image list's checksum is SHA-1 (raster-service contract).
      const hash = createHash('sha1');
      let size = 0;
      const meter = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          if (size > free) {
            done(dataError(413, 'MemoryLimitExceeded', 'Not enough free storage for this file', { memory_free: free }));
            return;
          }
          hash.update(chunk);
          done(null, chunk);
        },
      });
      received = pipeline(file, meter, createWriteStream(tempPath)).then(
        async () => {
          if (file.truncated) {
            await rm(tempPath, { force: true });
            throw dataError(413, 'FileTooBig', 'The file is larger than the maximum upload size', { max_size: maxSize });
          }
          return { tempPath, filename: info.filename || 'image.tif', size, checksum: hash.digest('hex') };
        },
        async (error: unknown) => {
          await rm(tempPath, { force: true });
          throw error;
        },
      );
      // A failure mid-stream is answered at once.
      received.catch(fail);
    });
    parser.on('error', (error: Error) => fail(invalidRequest(ctx, `Malformed multipart request: ${error.message}`)));
    parser.on('close', () => {
      if (!received) {
        fail(invalidRequest(ctx, 'The multipart request has no part named file'));
        return;
      }
      received.then((file) => {
        if (settled) return;
        settled = true;
        resolve(file);
      }, fail);
    });
    req.pipe(parser);
  });
}

const sameResolution = (a: [number, number], b: [number, number]) =>
  Math.abs(a[0] - b[0]) <= 0.01 * Math.max(a[0], b[0]) && Math.abs(a[1] - b[1]) <= 0.01 * Math.max(a[1], b[1]);

/**
 * All images of a mosaic share CRS, band count and resolution (spec: Mosaic
 * consistency). The live service (realShapes) reprojects and resamples a new
 * image "to match the CRS and GSD (pixel size) of other images in collection"
 * and wants only "the same number of bands" (mapflow-docs-en
 * source/userguides/reference.rst lines 25-26).
 */
function checkFitsMosaic(ctx: SimContext, mosaicId: string, info: Pick<RasterInfo, 'meta'> & { filename?: string }): void {
  const existing = ctx.store.state.images.find((i) => i.mosaicId === mosaicId);
  if (!existing) return;
  const want = existing.meta_data;
  const got = info.meta;
  // mapflow-qgis errors/data_errors.py: FileValidationFailed = "{param_name} of the file is {got_param}, it should be {expected_param}".
  const mismatch = (reason: string, expected: unknown, actual: unknown) =>
    dataError(422, 'FileValidationFailed', `The image does not fit the mosaic: its ${reason} differs`, {
      filename: info.filename ?? '', mosaic_id: mosaicId, param_name: reason, got_param: actual, expected_param: expected,
    });
  if (!ctx.realShapes && want.crs !== got.crs) throw mismatch('crs', want.crs, got.crs);
  if (want.count !== got.count) throw mismatch('count', want.count, got.count);
  if (!ctx.realShapes && !sameResolution(want.pixel_size, got.pixel_size)) throw mismatch('pixel_size', want.pixel_size, got.pixel_size);
}

/** Receives, inspects and stores one upload into a mosaic (created by `makeMosaic` once the file is accepted). */
async function acceptUpload(ctx: SimContext, req: IncomingMessage, mosaicFor: () => MosaicRecord): Promise<ImageRecord> {
  const file = await receiveFile(ctx, req);
  try {
    let info: RasterInfo;
    try {
      info = await ctx.decoder.inspect(file.tempPath, ctx.limits);
    } catch (error) {
      if (error instanceof DecodeRejection) throw dataError(400, error.code, error.message, error.parameters);
      throw error;
    }
    const mosaic = mosaicFor();
    checkFitsMosaic(ctx, mosaic.id, { ...info, filename: file.filename });
    if (file.size > storageFree(ctx)) throw dataError(413, 'MemoryLimitExceeded', 'Not enough free storage for this file', { memory_free: storageFree(ctx) });
    const id = randomUUID();
    const fileKey = `${id}.tif`;
    const prefix = `${BUCKET}/${ctx.store.state.userId}/${mosaic.id}/${id}`;
    const image: ImageRecord = {
      id,
      mosaicId: mosaic.id,
      filename: file.filename,
      fileKey,
      file_size: file.size,
      uploaded_at: isoTime(ctx.now()),
      meta_data: info.meta,
      footprint: info.footprintWkt,
      footprintBbox: info.footprintBbox,
      groundPixelSize: info.groundPixelSize,
      checksum: file.checksum,
      image_url: `${prefix}/${file.filename}`,
      cog_link: `${prefix}/cog.tif`,
      ...(ctx.realShapes && {
        readyAt: ctx.now() + ctx.live.preprocessingMs,
        ...(PREPROCESSING_FAILS.test(file.filename) && { preprocessingError: 'Failed to build the COG: the raster data could not be decoded' }),
      }),
    };
    // Recorded before the (asynchronous) move so that concurrent uploads see the storage it takes.
    const addsMosaic = !ctx.store.state.mosaics.includes(mosaic);
    if (addsMosaic) ctx.store.state.mosaics.push(mosaic);
    ctx.store.state.images.push(image);
    ctx.store.save();
    try {
      await rename(file.tempPath, ctx.store.filePath(fileKey));
    } catch (error) {
      ctx.store.state.images = ctx.store.state.images.filter((i) => i.id !== id);
      if (addsMosaic) ctx.store.state.mosaics = ctx.store.state.mosaics.filter((m) => m.id !== mosaic.id);
      ctx.store.save();
      throw error;
    }
    return image;
  } finally {
    await rm(file.tempPath, { force: true });
  }
}

// ---------------------------------------------------------------- handlers

async function createMosaic(ctx: SimContext, { req }: RouteRequest): Promise<Reply> {
  const body = await readJsonObject(req);
  const mosaic = newMosaic(ctx, body.name, readTags(ctx, body.tags));
  ctx.store.save();
  return json(mosaicView(ctx, mosaic, false));
}

async function updateMosaic(ctx: SimContext, { req, params }: RouteRequest): Promise<Reply> {
  const mosaic = mosaicOr404(ctx, params[0]!);
  const body = await readJsonObject(req);
  if (body.name !== undefined) {
    if (typeof body.name !== 'string' || !body.name.trim()) throw invalidRequest(ctx, 'name must be a non-empty string');
    mosaic.name = body.name;
  }
  if (body.tags !== undefined) mosaic.tags = readTags(ctx, body.tags);
  ctx.store.save();
  return empty();
}

async function uploadImage(ctx: SimContext, { req, params }: RouteRequest): Promise<Reply> {
  let mosaic: MosaicRecord;
  try {
    mosaic = mosaicOr404(ctx, params[0]!);
  } catch (error) {
    abandon(req);
    throw error;
  }
  return uploadAnswer(ctx, await acceptUpload(ctx, req, () => mosaic));
}

/** realShapes: `{message, mosaic_id}` without the image (raster-service contract); else the image record (reference). */
function uploadAnswer(ctx: SimContext, image: ImageRecord): Reply {
  if (ctx.realShapes) return json({ message: 'Files successfully uploaded', mosaic_id: image.mosaicId });
  return json(imageView(ctx, image));
}

async function createMosaicWithImage(ctx: SimContext, { req, url }: RouteRequest): Promise<Reply> {
  const name = url.searchParams.get('name');
  if (!name) {
    abandon(req);
    throw invalidRequest(ctx, 'query parameter name is required');
  }
  const tags = url.searchParams.getAll('tags');
  // The mosaic is only made once its first image is accepted.
  const pending: MosaicRecord = { id: randomUUID(), name, tags, created_at: isoTime(ctx.now()) };
  return uploadAnswer(ctx, await acceptUpload(ctx, req, () => pending));
}

async function linkImage(ctx: SimContext, { req, params }: RouteRequest): Promise<Reply> {
  const mosaic = mosaicOr404(ctx, params[0]!);
  const body = await readJsonObject(req);
  if (body.url === undefined || body.url === null) throw invalidRequest(ctx, 'url is required');
  if (typeof body.url !== 'string' || !body.url.startsWith('s3://')) {
    throw dataError(400, 'FileValidationFailed', 'url must be a storage URL starting with s3://', { url: String(body.url) });
  }
  // The simulator's storage holds only what was uploaded to it: link one of those.
  const source = ctx.images.imageByUrl(body.url);
  if (!source) throw dataError(400, 'FileOpenError', 'The file cannot be opened from storage', { url: body.url });
  checkFitsMosaic(ctx, mosaic.id, { meta: source.meta_data });
  const id = randomUUID();
  ctx.store.state.images.push({
    ...source,
    id,
    mosaicId: mosaic.id,
    uploaded_at: isoTime(ctx.now()),
    image_url: body.url,
    cog_link: `${BUCKET}/${ctx.store.state.userId}/${mosaic.id}/${id}/cog.tif`,
  });
  ctx.store.save();
  return json({ message: ctx.realShapes ? 'File successfully linked to a mosaic' : 'Image linked to the mosaic', mosaic_id: mosaic.id });
}

/** Deletes image records and the files no other record shares. */
async function deleteImages(ctx: SimContext, doomed: ImageRecord[]): Promise<void> {
  const state = ctx.store.state;
  const ids = new Set(doomed.map((i) => i.id));
  state.images = state.images.filter((i) => !ids.has(i.id));
  ctx.store.save();
  const stillUsed = new Set(state.images.map((i) => i.fileKey));
  for (const key of new Set(doomed.map((i) => i.fileKey))) {
    if (!stillUsed.has(key)) await rm(ctx.store.filePath(key), { force: true });
  }
}

async function deleteMosaic(ctx: SimContext, { params }: RouteRequest): Promise<Reply> {
  const mosaic = mosaicOr404(ctx, params[0]!);
  ctx.store.state.mosaics = ctx.store.state.mosaics.filter((m) => m.id !== mosaic.id);
  await deleteImages(ctx, ctx.store.state.images.filter((i) => i.mosaicId === mosaic.id));
  return empty();
}

async function renameImage(ctx: SimContext, { params, url }: RouteRequest): Promise<Reply> {
  const image = imageOr404(ctx, params[0]!);
  const name = url.searchParams.get('name');
  if (!name) throw invalidRequest(ctx, 'query parameter name is required');
  image.filename = name;
  ctx.store.save();
  return empty();
}

async function preview(ctx: SimContext, { params }: RouteRequest): Promise<Reply> {
  const image = imageOr404(ctx, params[0]!);
  const size = PREVIEW_SIZES[params[1]!];
  if (!size) throw invalidRequest(ctx, `preview size must be s or l, not ${params[1]}`);
  return { kind: 'binary', contentType: 'image/jpeg', body: await ctx.decoder.preview(ctx.store.filePath(image.fileKey), size) };
}

function memory(ctx: SimContext): Reply {
  const used = ctx.store.storageUsed();
  const limit = ctx.limits.storageLimitBytes;
  if (ctx.realShapes) {
    // memoryLimit and memoryFree are null when storage limiting is off (raster-service contract).
    return json({ memoryLimit: limit, memoryUsed: used, memoryFree: limit === null ? null : Math.max(0, limit - used), maxUploadFileSize: ctx.limits.maxUploadFileSize, maxPixelCount: ctx.limits.maxPixelCount });
  }
  if (limit === null) return json({ used_bytes: used, limit_bytes: null, used_gb: Math.round((used / 1024 ** 3) * 1e6) / 1e6, limit_gb: null, usage_percent: null });
  const gb = (bytes: number) => Math.round((bytes / 1024 ** 3) * 1e6) / 1e6;
  return json({ used_bytes: used, limit_bytes: limit, used_gb: gb(used), limit_gb: gb(limit), usage_percent: limit > 0 ? Math.round((used / limit) * 1e8) / 1e6 : 0 });
}

const ID = '([^/]+)';
const r = (path: string) => new RegExp(`^${path}$`);

export const rasterRoutes: Route[] = [
  { method: 'POST', pattern: r('/rasters/mosaic'), family: 'data', create: true, handle: createMosaic },
  { method: 'POST', pattern: r('/rasters/mosaic/image'), family: 'data', create: true, handle: createMosaicWithImage },
  { method: 'GET', pattern: r(`/rasters/mosaic/${ID}`), family: 'data', handle: async (ctx, { params }) => json(mosaicView(ctx, mosaicOr404(ctx, params[0]!), true)) },
  { method: 'PUT', pattern: r(`/rasters/mosaic/${ID}`), family: 'data', handle: updateMosaic },
  { method: 'DELETE', pattern: r(`/rasters/mosaic/${ID}`), family: 'data', handle: deleteMosaic },
  { method: 'POST', pattern: r(`/rasters/mosaic/${ID}/image`), family: 'data', create: true, handle: uploadImage },
  {
    method: 'GET', pattern: r(`/rasters/mosaic/${ID}/image`), family: 'data',
    handle: async (ctx, { params }) => {
      const mosaic = mosaicOr404(ctx, params[0]!);
      // realShapes: images still in preprocessing are not listed (the mosaic status lists them).
      return json(ctx.store.state.images.filter((i) => i.mosaicId === mosaic.id && (!ctx.realShapes || imageReady(ctx, i))).map((i) => imageView(ctx, i)));
    },
  },
  { method: 'POST', pattern: r(`/rasters/mosaic/${ID}/link-image`), family: 'data', handle: linkImage },
  { method: 'GET', pattern: r(`/rasters/image/${ID}`), family: 'data', handle: async (ctx, { params }) => json(imageView(ctx, imageOr404(ctx, params[0]!))) },
  { method: 'PUT', pattern: r(`/rasters/image/${ID}`), family: 'data', handle: renameImage },
  {
    method: 'DELETE', pattern: r(`/rasters/image/${ID}`), family: 'data',
    handle: async (ctx, { params }) => {
      await deleteImages(ctx, [imageOr404(ctx, params[0]!)]);
      return empty();
    },
  },
  { method: 'GET', pattern: r(`/rasters/image/${ID}/preview/${ID}`), family: 'data', handle: preview },
  { method: 'GET', pattern: r('/rasters/memory'), family: 'data', handle: async (ctx) => memory(ctx) },
  // The live service's raster endpoints beyond the reference (realShapes only; 404/405 otherwise, as an older service).
  { method: 'GET', pattern: r('/rasters/mosaic'), family: 'data', live: true, handle: async (ctx) => json(ctx.store.state.mosaics.map((m) => mosaicView(ctx, m, false))) },
  {
    method: 'GET', pattern: r(`/rasters/image/${ID}/status`), family: 'data', live: true,
    // 404 for a missing image and for one of another account alike (mapflow-qgis spec/002_E_zoom_selector_api.md
    // lines 117-118); the body is the data API's ItemNotFound (mapflow-qgis mapflow/errors/data_errors.py).
    handle: async (ctx, { params }) => {
      if (ctx.live.foreignImageIds.has(params[0]!)) throw itemNotFound('Image', params[0]!);
      return json(statusView(ctx, imageOr404(ctx, params[0]!)));
    },
  },
  {
    method: 'GET', pattern: r(`/rasters/mosaic/${ID}/status`), family: 'data', live: true,
    handle: async (ctx, { params }) => {
      const mosaic = mosaicOr404(ctx, params[0]!);
      const images = ctx.store.state.images.filter((i) => i.mosaicId === mosaic.id).map((i) => statusView(ctx, i));
      const count = (status: string) => images.filter((i) => i.preprocessing_status === status).length;
      return json({
        mosaic_id: mosaic.id,
        total_images: images.length,
        ready_images: count('COMPLETED'),
        pending_images: count('PENDING'),
        in_progress_images: count('IN_PROGRESS'),
        failed_images: count('FAILED'),
        images,
      });
    },
  },
];
