/**
 * Store Results: streams the processing's GeoJSON from Mapflow straight into
 * S3 (never held in memory) and writes job.json beside it: what was asked,
 * Mapflow's record of the processing, cost and timings.
 */
import { BridgeError } from '../../core/errors.ts';
import type { PartState, ProcessingRequest, StoreResult } from '../workflow.ts';
import type { Processing } from '../../mapflow/index.ts';
import { partialResultKey, resultKeys } from '../../routing/index.ts';
import { writeJson } from '../../storage/s3.ts';
import { writeStream } from '../../storage/s3-upload.ts';
import { tapResult, writeResultQuicklook } from '../../quicklook/index.ts';
import { writeResultFormats } from '../../results/index.ts';
import { jobContextOf, readWorkJson, routeOf } from '../common.ts';
import type { StepContext } from '../context.ts';

export async function storeResults(state: PartState, ctx: StepContext): Promise<StoreResult> {
  const job = jobContextOf(state.job);
  const { part } = state;
  const processingId = state.processing?.processingId;
  if (!processingId) throw new BridgeError('STATE_INCOMPLETE', `part '${part.name}' of job ${job.jobId} has no processing at $.processing`);
  if (state.poll?.outcome === 'FAILED') return storePartialResults(state, ctx, processingId);
  const client = await ctx.mapflow();
  const { resultKey, jobJsonKey } = resultKeys(ctx.config.prefixes, job.input.key, part.name);

  // The quicklook is drawn from the result as it streams by (functions/quicklook).
  const tapped = tapResult(await client.downloadResults(processingId));
  const { bytes } = await writeStream(ctx.s3, job.input.bucket, resultKey, tapped.body, 'application/geo+json');
  const quicklookKey = await writeResultQuicklook(ctx.s3, job.input.bucket, {
    tapped,
    aoiKey: part.geometryKey,
    resultKey,
    text: { title: job.input.key, subtitle: `route ${job.routeName}, part ${part.name}` },
  }).catch((err: unknown) => {
    ctx.logger.warn('could not write the quicklook', { jobId: job.jobId, resultKey, err: String(err) });
    return undefined;
  });

  // Other formats (route resultFormats) are written from the stored GeoJSON, streamed again.
  let formats: NonNullable<ReturnType<typeof routeOf>['resultFormats']> = [];
  try {
    formats = routeOf(ctx, job).resultFormats ?? [];
  } catch {
    // The route is gone since the job planned: the GeoJSON result is enough.
  }
  const written = formats.length > 0 ? await writeResultFormats(ctx.s3, job.input.bucket, resultKey, formats) : undefined;
  for (const [format, outcome] of Object.entries(written ?? {})) {
    if (outcome.error) ctx.logger.warn('a result format could not be written', { jobId: job.jobId, format, err: outcome.error });
  }

  const [processing, request] = await Promise.all([
    client.getProcessing(processingId),
    readWorkJson<ProcessingRequest>(ctx, job.input.bucket, part.requestKey).catch(() => undefined),
  ]);
  const row = await ctx.ledger.get(job.jobId);
  const finishedAt = ctx.now().toISOString();
  const raster = rasterResultOf(processing);
  if (raster) ctx.logger.info('the processing has a raster result, which the bridge does not copy; it stays in Mapflow', { jobId: job.jobId, processingId, ...raster });
  await writeJson(ctx.s3, job.input.bucket, jobJsonKey, {
    jobId: job.jobId,
    input: job.input,
    route: job.routeName,
    part: { index: part.index, name: part.name, areaSqKm: part.areaSqKm, estimatedCost: part.estimatedCost },
    request: request ? { ...request, geometry: { s3Key: part.geometryKey } } : undefined,
    processing,
    cost: { estimated: part.estimatedCost, actual: processing.cost },
    // The catalog product a search picked (imagery-search.ts), with its metadata.
    ...(row?.imagery && { imagery: row.imagery }),
    ...(written && { formats: written }),
    result: { key: resultKey, bytes, ...(quicklookKey && { features: tapped.scanner.count }) },
    ...(raster && { rasterResult: raster }),
    ...(quicklookKey && { quicklook: { key: quicklookKey } }),
    timings: {
      registeredAt: job.createdAt,
      processingStartedAt: state.processing?.startedAt,
      storedAt: finishedAt,
      polls: state.poll?.polls,
      restarts: state.poll?.restarts ?? 0,
    },
    ledger: row ? { status: row.status, statusHistory: row.statusHistory } : undefined,
  });

  const partRow = row?.parts?.find((p) => p.index === part.index);
  await ctx.ledger.upsertPart(job.jobId, {
    ...partRow,
    index: part.index,
    name: part.name,
    processingId,
    resultKey,
    status: processing.status,
    percentCompleted: processing.percentCompleted ?? 100,
    ...(typeof processing.cost === 'number' && { cost: processing.cost }),
    ...(raster && { rasterResult: { stored: false, ...(raster.tileJsonUrl && { tileJsonUrl: raster.tileJsonUrl }), ...(raster.tileUrl && { tileUrl: raster.tileUrl }) } }),
  });
  return { resultKey, jobJsonKey, bytes, ...(raster && { rasterResult: { stored: false, ...(raster.tileJsonUrl && { tileJsonUrl: raster.tileJsonUrl }), ...(raster.tileUrl && { tileUrl: raster.tileUrl }) } }) };
}

/**
 * The results a processing that FAILED made before it failed: Geoalert's
 * plugin downloads a failed processing's results too, as "Unfinished or failed
 * processings yield partial or no results" (mapflow-qgis
 * mapflow/functional/layer_utils.py lines 630-647, line 636), and the credits may be
 * spent. Kept under `failed/<path>/<part>/partial-result.geojson`; Finish Part
 * records it in the part, so the report and the Job Failed event name it.
 * Never throws: the part failed in Mapflow, and a download that fails too
 * must not hide Mapflow's reason behind its own.
 */
async function storePartialResults(state: PartState, ctx: StepContext, processingId: string): Promise<StoreResult> {
  const job = jobContextOf(state.job);
  // Only FAILED: a CANCELLED or REFUNDED processing is not the run that made something; at 0 % nothing was made.
  if (state.poll?.status !== 'FAILED' || !(state.poll.percentCompleted > 0)) return { bytes: 0 };
  const key = partialResultKey(ctx.config.prefixes, job.input.key, state.part.name);
  try {
    const client = await ctx.mapflow();
    const tapped = tapResult(await client.downloadResults(processingId));
    const { bytes } = await writeStream(ctx.s3, job.input.bucket, key, tapped.body, 'application/geo+json');
    const features = tapped.scanner.count;
    ctx.logger.info('kept the partial results of a failed processing', { jobId: job.jobId, processingId, key, features });
    return { resultKey: key, bytes, partial: { features } };
  } catch (err) {
    ctx.logger.warn('could not keep the partial results of a failed processing', { jobId: job.jobId, processingId, err: String(err) });
    return { bytes: 0 };
  }
}

/**
 * A processing's raster result (`resultRasterLayer`, made by some models:
 * mapflow-mcp src/schemas.ts). Mapflow serves a processing's rasters as XYZ
 * map tiles only (`tileUrl`, a `{z}/{x}/{y}` template, and `tileJsonUrl`: how
 * Geoalert's plugin loads them, mapflow-qgis mapflow/functional/layer_utils.py
 * lines 187-209 and 469-471), with no file to download, so no bounded copy is
 * possible: the bridge does not copy it, and job.json, the part in the ledger
 * and the Job Succeeded event say so, with the links.
 */
export function rasterResultOf(processing: Processing): { stored: false; tileJsonUrl?: string; tileUrl?: string; note: string } | undefined {
  const layer = processing.resultRasterLayer;
  if (!layer || typeof layer !== 'object') return undefined;
  const { tileJsonUrl, tileUrl } = layer as { tileJsonUrl?: unknown; tileUrl?: unknown };
  if (typeof tileJsonUrl !== 'string' && typeof tileUrl !== 'string') return undefined;
  return {
    stored: false,
    ...(typeof tileJsonUrl === 'string' && { tileJsonUrl }),
    ...(typeof tileUrl === 'string' && { tileUrl }),
    note: RASTER_NOT_COPIED,
  };
}

export const RASTER_NOT_COPIED =
  'mapflow-bridge copies the vector result only: Mapflow serves this raster result as XYZ map tiles, not as a file, so it is not copied to results/ and stays in Mapflow (open tileUrl or tileJsonUrl with the account\'s credentials, e.g. as an XYZ layer in QGIS, or in the Mapflow web app).';
