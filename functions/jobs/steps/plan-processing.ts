/**
 * Plan Processing: decides what will be run and what it will cost, before
 * anything is created in Mapflow.
 *
 * - GeoJSON: reads the file (capped), validates the polygons against the
 *   account's AOI limit, applies the file's `mapflow` overrides; one part for
 *   all polygons, or one per feature with `splitFeatures`.
 * - GeoTIFF with a model: one part over the uploaded image's footprint, with
 *   the image as the imagery source.
 *
 * Then resolves the model, writes each part's geometry and create request to
 * S3 (the state keeps only pointers), estimates the cost of every part and
 * applies the budget guard. Only after that is the project found or created.
 */
import path from 'node:path';
import { geodesicAreaSqM } from '../../aoi/geodesic-area.ts';
import { checkTileImageryExists } from '../../aoi/imagery-extent.ts';
import { decodeDeadline, type RemainingTime } from '../../core/deadline.ts';
import { BridgeError, ConfigurationError, InputRejected } from '../../core/errors.ts';
import type { GeoJsonMultiPolygon, GeoJsonPolygon, PlanPart, PlanResult, ProcessingRequest, WorkflowState } from '../workflow.ts';
import { MAX_GEOJSON_BYTES, checkProcessingGeometry, geoJsonTooLarge, parseAoiOffThread } from '../../aoi/index.ts';
import type { MapflowClient, SourceParams, UserStatus } from '../../mapflow/index.ts';
import {
  DEFAULT_AREA_BUDGET_SQ_KM,
  DEFAULT_CREDIT_BUDGET,
  DEFAULT_GEOJSON_MODEL,
  DEFAULT_GEOJSON_SOURCE,
  applyOverrides,
  partNameFor,
  splitPartNames,
  invalidKeyRejection,
  workKey,
  type Route,
} from '../../routing/index.ts';
import { readObjectBytes, writeJson } from '../../storage/s3.ts';
import { isNotFound, isOutcomeUnknown, mapLimit, processingNameFor, round, routeOf, topJob } from '../common.ts';
import type { StepContext } from '../context.ts';
import { cropToFootprint, findImageryForJob, takeImagerySearch, type ImagerySearchSpec } from '../imagery-search.ts';
import { targetProjectLimit } from '../image-area.ts';
import { explicitBlocks, resolveModel } from '../models.ts';
import { rejectionForRequestError, TOO_MANY_AOIS_ADVICE } from '../refusals.ts';

/** Cost estimates in flight at once (a split file may have many parts). */
const ESTIMATE_CONCURRENCY = 4;

type Geometry = GeoJsonPolygon | GeoJsonMultiPolygon;

/** Most processings one job may run with splitFeatures (bounded by the execution state's 256 KB). */
export const MAX_SPLIT_PARTS = 100;

export interface DraftPart {
  index: number;
  name: string;
  displayName: string;
  geometry: Geometry;
  areaSqM: number;
}

/** @param invocation the Lambda context: validating and merging the GeoJSON stops in time and rejects the file (core/deadline.ts). */
export async function planProcessing(state: WorkflowState, ctx: StepContext, invocation?: RemainingTime): Promise<PlanResult> {
  const job = topJob(state);
  const { input, jobId } = state;
  const client = await ctx.mapflow();
  const status = await client.getUserStatus();
  let route = routeOf(ctx, job);

  let drafts: DraftPart[];
  let sourceParams: SourceParams;
  let ignored: PlanResult['ignored'];
  let catalogSearch: { spec: ImagerySearchSpec; aoi: Geometry } | undefined;
  // The limit of the project the processing goes into (for a shared project, its owner's), and that
  // project's id for the cost calls, when it exists already (image-area.ts).
  const target = await targetProjectLimit(client, status, route, ctx);
  if (job.kind === 'geojson') {
    const aoiAreaLimitSqM = target.limitSqM;
    // Bytes, not text: a binary file dropped as .geojson is named from its first bytes.
    const bytes = await readObjectBytes(ctx.s3, input, MAX_GEOJSON_BYTES, geoJsonTooLarge);
    // In a worker thread locally (packages/local/src/engine/workers.ts): validating and dissolving a large file takes seconds.
    const deadline = decodeDeadline(invocation);
    const aoi = await parseAoiOffThread(bytes, { maxBytes: MAX_GEOJSON_BYTES, ...(aoiAreaLimitSqM !== undefined && { aoiAreaLimitSqM }), ...(deadline && { deadline }) });
    // A catalog search (`imagery.search`) is taken out here and run once the AOI is validated (imagery-search.ts).
    const imagery = takeImagerySearch(aoi.overrides, route.imagery);
    if (imagery.search) catalogSearch = { spec: imagery.search, aoi: aoi.geometry as Geometry };
    route = applyOverrides(route, imagery.member);
    ignored = aoi.ignored;
    sourceParams = (route.source ?? DEFAULT_GEOJSON_SOURCE) as SourceParams;
    if (route.splitFeatures && aoi.features.length > MAX_SPLIT_PARTS) {
      // Each part's plan and outcome travel in the execution's state, which Step Functions caps at 256 KB.
      throw new InputRejected(
        'TOO_MANY_FEATURES',
        `the file has ${aoi.features.length} polygon features and its route runs one processing per feature (splitFeatures); one job takes at most ${MAX_SPLIT_PARTS}. Split the file into several files of at most ${MAX_SPLIT_PARTS} features, or process it as one area without splitFeatures`,
        { details: { features: aoi.features.length, maxParts: MAX_SPLIT_PARTS } },
      );
    }
    if (route.splitFeatures && aoi.features.length > 1) {
      const names = splitPartNames(input.key, aoi.features);
      // Feature names make the result folders: refuse now, before spending, a name whose results S3 would refuse.
      const tooLong = invalidKeyRejection(input.key, ctx.config.prefixes, names);
      if (tooLong) throw tooLong;
      drafts = aoi.features.map((f, i) => ({
        index: i,
        name: names[i]!,
        displayName: route.processingName ? `${route.processingName} ${names[i]}` : names[i]!,
        geometry: f.geometry as Geometry,
        areaSqM: f.areaSqM,
      }));
    } else {
      const name = partNameFor(input.key);
      if (aoiAreaLimitSqM !== undefined) checkProcessingGeometry(aoi.geometry, aoiAreaLimitSqM, path.basename(input.key));
      drafts = [{ index: 0, name, displayName: route.processingName ?? name, geometry: aoi.geometry as Geometry, areaSqM: aoi.areaSqM }];
    }
  } else {
    const upload = state.upload;
    if (!upload) throw new BridgeError('STATE_INCOMPLETE', `the state of job ${jobId} has no uploaded image at $.upload`);
    sourceParams = { myImagery: { imageIds: [upload.imageId], mosaicId: upload.mosaicId } };
    const name = partNameFor(input.key);
    drafts = [{ index: 0, name, displayName: route.processingName ?? name, geometry: upload.footprint, areaSqM: geodesicAreaSqM(upload.footprint) }];
  }

  if (catalogSearch) {
    const found = await findImageryForJob(ctx, client, jobId, catalogSearch.aoi, catalogSearch.spec, status.searchAreaLimitSqM, status.searchDataProviders);
    sourceParams = found.sourceParams;
    drafts = drafts.map((draft) => cropDraft(draft, found.footprint));
  }
  sourceParams = resolveProvider(status, sourceParams);
  // A polygon beyond Web Mercator's tiles has no imagery, whatever it would be billed (aoi/imagery-extent.ts).
  if (job.kind === 'geojson') for (const draft of drafts) checkTileImageryExists(draft.geometry as GeoJsonPolygon | GeoJsonMultiPolygon, sourceParams as Record<string, unknown>, draft.name);
  checkAccountLimits(status, sourceParams, drafts);

  const model = resolveModel(status.models, route.model ?? DEFAULT_GEOJSON_MODEL);
  const blocks = explicitBlocks(model, route.blocks);
  const params: ProcessingRequest['params'] = { sourceParams: sourceParams as Record<string, unknown>, ...(route.inferenceParams && { inferenceParams: route.inferenceParams }) };

  // The body of each part's create, but its project (found or created only once the guard has passed).
  // The cost call posts that same body, as Geoalert's plugin posts its whole create schema
  // (mapflow-qgis mapflow/functional/api/processing_api.py lines 93-99, processing_service.py lines 446-455, 1081-1083):
  // the server prices with the source, the blocks and the geometry the processing will have.
  const bodies: PricedBody[] = drafts.map((draft) => ({
    name: processingNameFor(draft.displayName, jobId),
    wdId: model.id,
    geometry: draft.geometry,
    params,
    ...(blocks && { blocks }),
    meta: { ...route.meta, bridgeJobId: jobId, bridgePart: String(draft.index) },
  }));

  // Estimate every part before anything is created: the budget guard must reject a job that has spent nothing.
  let estimates: number[];
  let estimatedCost: number;
  const areaSqM = drafts.reduce((sum, d) => sum + d.areaSqM, 0);
  const creditBudget = route.creditBudget ?? DEFAULT_CREDIT_BUDGET;
  const areaText = `${round(areaSqM / 1e6, 2)} km²`;
  try {
    estimates = await mapLimit(bodies, ESTIMATE_CONCURRENCY, (body, i) =>
      client
        // With the project it goes into, as the plugin posts its whole create body (processing_api.py lines 93-99): the server checks that project's limits.
        .estimateCost({ ...body, ...(target.projectId && { projectId: target.projectId }) } as never)
        // The server checks more on the cost call than the price (a provider's minimum area): same codes as the create.
        .catch((err: unknown) => {
          throw rejectionForRequestError(err, `part '${drafts[i]!.name}'`) ?? err;
        }),
    );
    estimatedCost = estimates.reduce((sum, c) => sum + c, 0);
    const what = job.kind === 'geotiff' ? `this image (${areaText})` : areaText;
    const smaller = job.kind === 'geotiff' ? 'image' : 'area';
    const budget = budgetOf(status);
    if (budget === 'credits' && estimatedCost > creditBudget) {
      throw new InputRejected(
        'BUDGET_EXCEEDED',
        `processing ${what} with '${model.name}' is estimated at ${estimatedCost} credits, above the budget of ${creditBudget} credits of route '${route.name}'. Drop a smaller ${smaller}, or raise the route's creditBudget.`,
        { details: { estimatedCost, creditBudget, areaSqKm: areaSqM / 1e6 } },
      );
    }
    const areaBudgetSqKm = route.areaBudgetSqKm ?? DEFAULT_AREA_BUDGET_SQ_KM;
    if (budget === 'area' && areaSqM / 1e6 > areaBudgetSqKm) {
      throw new InputRejected(
        'BUDGET_EXCEEDED',
        `processing ${what} with '${model.name}' covers more than the budget of ${areaBudgetSqKm} km² of route '${route.name}' (the Mapflow account is billed by area). Drop a smaller ${smaller}, or raise the route's areaBudgetSqKm.`,
        { details: { areaSqKm: areaSqM / 1e6, areaBudgetSqKm, billingType: status.billingType } },
      );
    }
    assertAccountCanPay(status, estimatedCost, areaSqM, areaText);
  } catch (err) {
    // A GeoTIFF is priced only once it is uploaded (the cost call names the image, as the create does):
    // refused here, the image this job uploaded is deleted, so a refused job leaves nothing in Mapflow.
    if (err instanceof InputRejected && job.kind === 'geotiff' && state.upload) throw await withImageDeleted(ctx, client, state.upload.imageId, err);
    throw err;
  }

  const projectId = await projectFor(ctx, client, route);

  const parts: PlanPart[] = await mapLimit(drafts, ESTIMATE_CONCURRENCY, async (draft, i) => {
    const geometryKey = workKey(ctx.config.prefixes, jobId, `part-${draft.index}.geometry.json`);
    const requestKey = workKey(ctx.config.prefixes, jobId, `part-${draft.index}.request.json`);
    const body = bodies[i]!;
    const request: ProcessingRequest = { name: body.name, projectId, wdId: body.wdId, params: body.params, ...(body.blocks && { blocks: body.blocks }), meta: body.meta };
    await writeJson(ctx.s3, input.bucket, geometryKey, draft.geometry);
    await writeJson(ctx.s3, input.bucket, requestKey, request);
    return {
      index: draft.index,
      name: draft.name,
      processingName: request.name,
      geometryKey,
      requestKey,
      areaSqKm: round(draft.areaSqM / 1e6, 6),
      estimatedCost: estimates[i]!,
      projectId,
    };
  });

  await ctx.ledger.update(jobId, { areaSqKm: round(areaSqM / 1e6, 6), estimatedCost, projectId, partCount: parts.length });
  return {
    projectId,
    wdId: model.id,
    modelName: model.name,
    areaSqKm: round(areaSqM / 1e6, 6),
    estimatedCost,
    creditBudget,
    parts,
    ...(ignored && { ignored }),
  };
}

/** What a cost call posts: a part's create body without its project. */
type PricedBody = Omit<ProcessingRequest, 'projectId'> & { geometry: Geometry };

/** The rejection, once the image the job uploaded is deleted (or, failing that, saying it is still there). */
async function withImageDeleted(ctx: StepContext, client: MapflowClient, imageId: string, err: InputRejected): Promise<InputRejected> {
  const message = err.message.replace(/^[A-Z_]+: /, '');
  try {
    // Already gone (a resumed Plan Processing that deleted it before): as good as deleted.
    await client.deleteImage(imageId).catch((cause: unknown) => {
      if (!isNotFound(cause)) throw cause;
    });
    ctx.logger.info('deleted the image of a refused job', { imageId, code: err.code });
    return new InputRejected(err.code, `${message} The uploaded image was deleted from Mapflow.`, { cause: err, ...(err.details && { details: err.details }) });
  } catch (cause) {
    ctx.logger.warn('could not delete the image of a refused job', { imageId, err: String(cause) });
    return new InputRejected(err.code, `${message} The uploaded image ${imageId} is still in Mapflow; delete it there if you do not need it.`, { cause: err, ...(err.details && { details: err.details }) });
  }
}

/**
 * A part cropped to the chosen catalog product's footprint: the cost and
 * create calls get only the area that has imagery, as in Geoalert's plugin
 * (imagery-search.ts cropToFootprint), so `minIntersection` below 100 never
 * bills the uncovered rest.
 * @throws InputRejected NO_IMAGERY when the part lies outside the footprint (a split file)
 */
export function cropDraft(draft: DraftPart, footprint: Geometry | undefined): DraftPart {
  const geometry = cropToFootprint(draft.geometry, footprint);
  if (!geometry) {
    throw new InputRejected(
      'NO_IMAGERY',
      `part '${draft.name}' lies outside the footprint of the catalog image picked for the file; raise minIntersection to 100, or drop that polygon in a file of its own.`,
      { details: { part: draft.name } },
    );
  }
  if (geometry === draft.geometry) return draft;
  return { ...draft, geometry, areaSqM: geodesicAreaSqM(geometry) };
}

/**
 * The account's spelling of the route's imagery provider. `/user/status`
 * lists the providers the account may use (`dataProviders`, names as the
 * service wants them: mapflow-mcp src/schemas.ts, mapflow-qgis
 * schema/provider.py); a route may write `mapbox` or `Mapbox`.
 */
export function resolveProvider(status: UserStatus, sourceParams: SourceParams): SourceParams {
  const source = sourceParams as Record<string, unknown>;
  const provider = source.dataProvider as { providerName?: unknown } | undefined;
  const wanted = typeof provider?.providerName === 'string' ? provider.providerName.trim() : undefined;
  if (!wanted || status.dataProviders.length === 0) return sourceParams;
  const match = status.dataProviders.find((p) => p.name.toLowerCase() === wanted.toLowerCase())
    ?? status.dataProviders.find((p) => p.displayName?.toLowerCase() === wanted.toLowerCase());
  if (!match) {
    throw new InputRejected(
      'UNKNOWN_PROVIDER',
      `the imagery provider '${wanted}' is not enabled for this Mapflow account; use one of: ${status.dataProviders.map((p) => p.name).join(', ')}.`,
      { details: { provider: wanted, available: status.dataProviders.map((p) => p.name) } },
    );
  }
  return { ...source, dataProvider: { ...provider, providerName: match.name } } as SourceParams;
}

/** Polygons of a geometry as the server counts them (`getNumGeometries`). */
export function polygonCount(geometry: Geometry): number {
  return geometry.type === 'MultiPolygon' ? geometry.coordinates.length : 1;
}

/**
 * Checks made from `/user/status` before any call that costs: the provider's
 * minimum area (the plugin checks it before the cost call; the server answers
 * ProviderMinAreaError) and the account's most polygons per processing (the
 * server: `input.geometry.getNumGeometries > user.maxAoisPerProcessing` is a
 * BadRequest; its default is 10).
 */
export function checkAccountLimits(status: UserStatus, sourceParams: SourceParams, drafts: readonly DraftPart[]): void {
  const providerName = ((sourceParams as Record<string, unknown>).dataProvider as { providerName?: string } | undefined)?.providerName;
  const provider = providerName ? status.dataProviders.find((p) => p.name === providerName) : undefined;
  const minAreaSqKm = provider?.minAreaSqKm;
  for (const draft of drafts) {
    if (minAreaSqKm !== undefined && draft.areaSqM / 1e6 < minAreaSqKm) {
      throw new InputRejected(
        'AREA_TOO_SMALL',
        `part '${draft.name}' covers ${round(draft.areaSqM / 1e6, 3)} km², below the ${minAreaSqKm} km² the imagery provider ${provider!.name} needs; draw a larger polygon or use another source.`,
        { details: { areaSqKm: draft.areaSqM / 1e6, minAreaSqKm, provider: provider!.name } },
      );
    }
    const max = status.maxAoisPerProcessing;
    const count = polygonCount(draft.geometry);
    if (max !== undefined && max > 0 && count > max) {
      throw new InputRejected(
        'TOO_MANY_AOIS',
        `part '${draft.name}' has ${count} separate polygons after merging, but this Mapflow account allows at most ${max} per processing (maxAoisPerProcessing); ${TOO_MANY_AOIS_ADVICE}.`,
        { details: { polygons: count, maxAoisPerProcessing: max } },
      );
    }
  }
}

/**
 * Which route budget guards a job: the one in the account's own unit. The
 * plugin compares the /cost estimate only for CREDITS billing, the number being
 * "only meaningful" there (mapflow-qgis functional/service/processing_service.py
 * lines 1071-1079), and counts area for AREA billing and nothing for NONE
 * (functional/helpers.py lines 135-146 `check_processing_limit`). Without a
 * billingType (the spec's shapes, where a processing "consumes account
 * credits") the credit budget guards it, as before.
 */
export function budgetOf(status: Pick<UserStatus, 'billingType'>): 'credits' | 'area' | 'none' {
  switch (status.billingType) {
    case 'AREA':
      return 'area';
    case 'NONE':
      return 'none';
    default:
      // CREDITS, none given, or a value no source shows: the guard that protects credits.
      return 'credits';
  }
}

/**
 * Rejects a job the account clearly cannot pay for. Only the counter of the
 * account's `billingType` is checked, as the plugin does (mapflow-qgis
 * functional/helpers.py `check_processing_limit`: AREA -> remainingArea,
 * CREDITS -> remainingCredits, NONE -> nothing); the other counter is 0 on
 * the live service. Without a billingType (the spec's shapes), every counter
 * the account reports is checked.
 */
export function assertAccountCanPay(status: UserStatus, estimatedCost: number, areaSqM: number, areaText: string): void {
  const billing = status.billingType;
  const checkCredits = billing === 'CREDITS' || billing === undefined;
  const checkArea = billing === 'AREA' || billing === undefined;
  if (checkCredits && typeof status.credits === 'number' && status.credits < estimatedCost) {
    throw new InputRejected(
      'INSUFFICIENT_CREDITS',
      `processing ${areaText} is estimated at ${estimatedCost} credits but the Mapflow account has ${status.credits}; top up the account or drop a smaller area.`,
      { details: { estimatedCost, credits: status.credits } },
    );
  }
  if (checkArea && typeof status.remainingAreaSqM === 'number' && status.remainingAreaSqM < areaSqM) {
    throw new InputRejected(
      'INSUFFICIENT_CREDITS',
      `processing ${areaText} exceeds the ${round(status.remainingAreaSqM / 1e6, 2)} km² the Mapflow account may still process; raise the account's area limit or drop a smaller area.`,
      { details: { areaSqM, remainingAreaSqM: status.remainingAreaSqM } },
    );
  }
}

/** The project of a route: its id, a project found or created by name, or the account's default project. */
async function projectFor(ctx: StepContext, client: MapflowClient, route: Route): Promise<string> {
  const wanted = route.project;
  if (wanted?.id) {
    try {
      return (await client.getProject(wanted.id)).id;
    } catch (err) {
      if (isNotFound(err)) throw new ConfigurationError(`route '${route.name}' names project ${wanted.id}, which this Mapflow account does not have; fix the route's project.id`, { cause: err });
      throw err;
    }
  }
  if (wanted?.name) return namedProject(ctx, client, wanted.name, route);
  return (await client.getDefaultProject()).id;
}

/**
 * The project called `name`, made once however many jobs ask at the same
 * moment: the id is claimed in the ledger (NameRegistry); a job whose freshly
 * created project lost the claim deletes it, empty, and uses the winner.
 */
async function namedProject(ctx: StepContext, client: MapflowClient, name: string, route: Route): Promise<string> {
  const known = await ctx.projects.get(name);
  if (known) {
    try {
      return (await client.getProject(known.id)).id;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      ctx.logger.warn('remembered project no longer exists in Mapflow; finding or creating it again', { name, projectId: known.id });
    }
  }
  const find = async () => (await client.listProjects()).find((p) => p.name === name && p.id !== known?.id);
  let id = (await find())?.id; // one made by hand, or by a job that has not claimed it yet, is adopted
  let createdHere = false;
  if (!id) {
    try {
      id = (await client.createProject({ name, description: `Created by mapflow-bridge for route '${route.name}'` })).id;
      createdHere = true;
    } catch (err) {
      if (!isOutcomeUnknown(err)) throw err;
      id = (await find())?.id; // the lost create may have gone through
      if (!id) throw err;
    }
  }
  const winner = await ctx.projects.claim(name, id, ctx.now(), known?.id);
  if (winner !== id && createdHere) {
    await client.deleteProject(id).catch((err: unknown) => ctx.logger.warn('could not delete a duplicate empty project', { projectId: id, err: String(err) }));
  }
  return winner;
}
