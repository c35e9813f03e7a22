/**
 * The processing interface: projects, processings (v2 and v1), cost
 * estimates, AOIs, results, user status and processing history.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CATALOG_PROVIDERS, DATA_PROVIDERS, findCatalogProvider, findDataProvider, findModel, MODELS, publicModel, type Model } from './catalogue.ts';
import { imageReady } from './rasters.ts';
import { empty, isoTime, json, type Reply, type Route, type RouteRequest, type SimContext } from './context.ts';
import { costOf, resolveBlocks } from './cost.ts';
import {
  areaSqM, bboxAreaSqM, bboxOf, MalformedGeometry, parseAoiGeometry, positionCount, splitPolygons, validityOf, type AoiGeometry,
} from './geometry.ts';
import { badRequest, notFound, readJsonObject, SimHttpError } from './http.ts';
import { parseTrigger } from './lifecycle.ts';
import { resultStream } from './results.ts';
import { seedFrom } from './random.ts';
import { imagesOfSource, message, sourceFromV1, sourceFromV2, sourceMessages } from './sources.ts';
import type { Message, ProcessingRecord, ProjectRecord } from './store.ts';
import {
  aoiViews, createdV1, createdV2, fullProcessing, listItemV2, isPremium, processingV2, projectView, stateOf,
} from './views.ts';

// ---------------------------------------------------------------- helpers

function readGeometry(value: unknown, live = false): AoiGeometry {
  try {
    return parseAoiGeometry(value);
  } catch (error) {
    // --real-shapes: the server's BadRequest (no source shows a geometry code on the request); the reference's code otherwise.
    if (error instanceof MalformedGeometry) throw live ? badRequest(`geometry: ${error.message}`) : new SimHttpError(400, 'geometry.Invalid', error.message);
    throw error;
  }
}

function modelFrom(body: Record<string, unknown>, live = false, apiVersion: 'v1' | 'v2' = 'v2'): Model {
  const wanted = typeof body.wdId === 'string' && body.wdId ? body.wdId : typeof body.wdName === 'string' && body.wdName ? body.wdName : undefined;
  if (!wanted) throw badRequest('wdId or wdName is required');
  const model = findModel(wanted);
  if (!model && live && apiVersion === 'v1') {
    // The server's v1 create: BadRequest "Workflow Definition not found" (RunProcessingService, issue 36 point 8).
    throw new SimHttpError(400, 'BAD_REQUEST', 'Workflow Definition not found');
  }
  if (!model && live) {
    // The server: NotFound(s"WorkflowDef not found by id $workflowDefId") (Validations.checkWorkflowDefPermission), 404 NOT_FOUND.
    throw new SimHttpError(404, 'NOT_FOUND', `WorkflowDef not found by id ${wanted}`);
  }
  if (!model) {
    throw new SimHttpError(400, 'WORKFLOW_DEF_NOT_FOUND', `Model '${wanted}' is not linked to this account`, {
      model: wanted,
      available: MODELS.map((m) => m.name),
    });
  }
  return model;
}

function projectOr404(ctx: SimContext, id: string): ProjectRecord {
  const project = ctx.store.state.projects.find((p) => p.id === id);
  if (!project) throw notFound('Project', id);
  return project;
}

function processingOr404(ctx: SimContext, id: string): ProcessingRecord {
  const record = ctx.store.state.processings.find((p) => p.id === id);
  if (!record) throw notFound('Processing', id);
  return record;
}

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw badRequest(`${field} must be a string`);
  return value;
}

function stringMap(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest(`${field} must be an object`);
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
}

/**
 * The account's limits on one processing's area (real-api-notes.md: total and each AOI's bbox). The AOI limit
 * is that of the project's owner: for a shared project another account's (mapflow-qgis
 * functional/service/project_service.py lines 50-56).
 */
function checkAreaLimits(ctx: SimContext, geometry: AoiGeometry, total: number, project?: ProjectRecord): void {
  const limit = project?.owner?.aoiAreaLimitSqM ?? ctx.limits.aoiAreaLimitSqM;
  const tooLarge = (area: number) =>
    new SimHttpError(400, 'TOO_LARGE_PROCESSING', `The processing area ${Math.round(area)} m² exceeds the AOI area limit ${limit} m²`, {
      area: Math.round(area),
      aoiAreaLimit: limit,
    });
  if (total > limit) throw tooLarge(total);
  for (const polygon of splitPolygons(geometry)) {
    const boxArea = bboxAreaSqM(bboxOf(polygon));
    if (boxArea > limit) throw tooLarge(boxArea);
  }
  const { processedAreaSqM } = ctx.store.state;
  // A credit-billed account (realShapes) is not limited by area.
  if (billsArea(ctx) && processedAreaSqM + total > ctx.limits.areaLimitSqM && ctx.realShapes) {
    // The server's AreaLimitExceeded(processed, limit) (io.geoalert.mapflow.exception), its message as written there.
    const processed = Math.round(processedAreaSqM + total);
    throw new SimHttpError(400, 'AREA_LIMIT_EXCEEDED', `An accumulative area limit of ${ctx.limits.areaLimitSqM} sq.m. is set for the user. Current operation would increase the total accumulative processed area to ${processed} sq.m.`);
  }
  if (billsArea(ctx) && processedAreaSqM + total > ctx.limits.areaLimitSqM) {
    throw new SimHttpError(400, 'AREA_LIMIT_EXCEEDED', 'The account area limit would be exceeded', {
      area: Math.round(total),
      remainingArea: Math.max(0, Math.round(ctx.limits.areaLimitSqM - processedAreaSqM)),
    });
  }
}

/** Which counters the account is billed by: the spec's accounts both; realShapes only its billingType's. */
function billsArea(ctx: SimContext): boolean {
  return !ctx.realShapes || ctx.live.billingType === 'AREA';
}
function billsCredits(ctx: SimContext): boolean {
  return !ctx.realShapes || ctx.live.billingType === 'CREDITS';
}

/** ProviderMinAreaError (params as mapflow-qgis errors/api_errors.py: aoiArea, providerName, providerMinArea; km²). */
function checkProviderMinArea(ctx: SimContext, source: ReturnType<typeof sourceFromV2>, totalSqM: number): void {
  if (source.kind === 'imagerySearch' && ctx.realShapes) {
    // A catalog provider's minimum (searchDataProviders[].minAreaSqkm), on the geometry sent (the AOI cropped to the image).
    const min = ctx.live.catalogMinAreasSqKm[source.dataProvider.toLowerCase()];
    if (min === undefined || totalSqM / 1e6 >= min) return;
    throw new SimHttpError(400, 'ProviderMinAreaError', `Geometry area is smaller than the minimum required area for ${source.dataProvider}`, {
      aoiArea: Math.round((totalSqM / 1e6) * 100) / 100,
      providerName: source.dataProvider,
      providerMinArea: min,
    });
  }
  if (source.kind !== 'dataProvider') return;
  const provider = findDataProvider(source.providerName);
  if (provider?.minAreaSqKm === undefined || totalSqM / 1e6 >= provider.minAreaSqKm) return;
  throw new SimHttpError(400, 'ProviderMinAreaError', `Geometry area is smaller than the minimum required area for ${provider.name}`, {
    aoiArea: Math.round((totalSqM / 1e6) * 100) / 100,
    providerName: provider.name,
    providerMinArea: provider.minAreaSqKm,
  });
}

/**
 * How long a new processing stays AWAITING: a catalog Scene is "available for ordering by request"
 * (mapflow-docs-en source/api/api_reference.rst lines 1251-1252), a Mosaic is processed at once.
 */
function awaitingMsOf(ctx: SimContext, source: ReturnType<typeof sourceFromV2>): number {
  const scene = source.kind === 'imagerySearch' && findCatalogProvider(source.dataProvider)?.productType === 'Scene';
  return scene ? ctx.live.orderAwaitingMs : ctx.live.awaitingMs;
}

/** Price per km² of a data provider source (its `price` in /user/status with --real-shapes); other sources 0. */
export const PROVIDER_PRICE_PER_SQ_KM = 1;
function sourcePrice(source: ReturnType<typeof sourceFromV2>): number {
  return source.kind === 'dataProvider' ? PROVIDER_PRICE_PER_SQ_KM : 0;
}

/** The server (ProcessingService.scala): `input.geometry.getNumGeometries > user.maxAoisPerProcessing` is a BadRequest. */
function checkAoiCount(ctx: SimContext, geometry: AoiGeometry): void {
  const count = splitPolygons(geometry).length;
  const max = ctx.live.maxAoisPerProcessing;
  if (count > max) throw badRequest(`Too many AOI geometries. One processing can have up to ${max} geometries`);
}

// ---------------------------------------------------------------- processings

/** AOIs of at most this many positions are checked for validity in this process (about 1 ms); larger ones in the decoder. */
export const INLINE_VALIDITY_POSITIONS = 2_000;

async function createProcessing(ctx: SimContext, request: RouteRequest, apiVersion: 'v1' | 'v2'): Promise<ProcessingRecord> {
  const body = await readJsonObject(request.req);
  const name = optionalString(body, 'name');
  if (apiVersion === 'v2' && !name) throw badRequest('name is required');
  const projectId = optionalString(body, 'projectId') ?? ctx.store.defaultProject().id;
  const project = projectOr404(ctx, projectId);
  const model = modelFrom(body, ctx.realShapes, apiVersion);
  if (body.geometry === undefined) throw badRequest('geometry is required');
  const geometry = readGeometry(body.geometry, ctx.realShapes);
  const blocks = resolveBlocks(model, body.blocks, ctx.realShapes);
  const meta = stringMap(body.meta, 'meta');
  const source = apiVersion === 'v2' ? sourceFromV2(body.params, ctx.realShapes) : sourceFromV1(body.params, ctx.realShapes);
  const images = imagesOfSource(source, ctx.images);
  if (ctx.realShapes && ctx.live.suspended) {
    // The server: Forbidden(s"User account is suspended ... due a team membership policy") (Validations.canRunProcessing).
    throw new SimHttpError(403, 'FORBIDDEN', 'User account is suspended due a team membership policy');
  }
  if (ctx.realShapes && images?.some((image) => !imageReady(ctx, image))) {
    // Real notes: 409 = image data not ready (still in preprocessing). The server's 409 is its Conflict
    // exception, code CONFLICT (io.geoalert.mapflow.exception); no source shows a code of its own.
    throw new SimHttpError(409, 'CONFLICT', 'The image data is not available yet; wait until its preprocessing is COMPLETED');
  }

  const total = areaSqM(geometry);
  if (ctx.realShapes) checkAoiCount(ctx, geometry);
  checkAreaLimits(ctx, geometry, total, project);
  checkProviderMinArea(ctx, source, total);
  const cost = costOf(model, total, blocks, ctx.realShapes ? sourcePrice(source) : 0);
  const { state } = ctx.store;
  const remaining = ctx.limits.credits - state.creditsUsed;
  if (billsCredits(ctx) && cost > remaining && ctx.realShapes) {
    // No source shows the server's code for this; its own checks are BadRequest, code BAD_REQUEST.
    throw new SimHttpError(400, 'BAD_REQUEST', `Not enough credits: the processing costs ${cost} credits; ${remaining} remain`);
  }
  if (billsCredits(ctx) && cost > remaining) {
    throw new SimHttpError(400, 'NOT_ENOUGH_CREDITS', `The processing costs ${cost} credits; ${remaining} remain`, { cost, remainingCredits: remaining });
  }

  // OGC validity (a sweep, n log n: geometry.ts validityOf): a large AOI off this process's thread, in the decoder;
  // a small one here, where it costs under a millisecond and no process start.
  const verdict = positionCount(geometry) <= INLINE_VALIDITY_POSITIONS ? validityOf(geometry) : await ctx.decoder.geometry(geometry);
  const validationMessages: Message[] = !verdict.valid
    ? [message('geometry.Invalid')]
    : sourceMessages(source, model, bboxOf(geometry), ctx.images, images, ctx.realShapes);

  const now = ctx.now();
  const id = randomUUID();
  const params = apiVersion === 'v2' ? ((body.params as Record<string, unknown>) ?? {}) : ((body.params as Record<string, unknown> | undefined) ?? {});
  const record: ProcessingRecord = {
    id,
    name: name ?? id,
    description: optionalString(body, 'description') ?? null,
    projectId,
    wdId: model.id,
    apiVersion,
    geometry,
    aois: splitPolygons(geometry).map((polygon) => ({ id: randomUUID(), geometry: polygon, areaSqM: areaSqM(polygon) })),
    areaSqM: total,
    cost,
    params,
    blocks,
    meta,
    source,
    validationMessages,
    ...(parseTrigger(meta) ? { simulate: parseTrigger(meta) } : {}),
    attempt: 1,
    runStartedAt: now,
    durationMs: ctx.processingMs,
    ...(ctx.unevenProgress && { progressSeed: seedFrom(ctx.seed, id) }),
    ...(ctx.realShapes && { queuedMs: ctx.live.queuedMs, ...(source.kind !== 'myImagery' && { awaitingMs: awaitingMsOf(ctx, source) }) }),
    vectorLayerId: randomUUID(),
    rasterLayerId: randomUUID(),
    created: isoTime(now),
    updated: isoTime(now),
  };
  state.processings.push(record);
  state.creditsUsed += cost;
  state.processedAreaSqM += total;
  ctx.store.save();
  return record;
}

function ownProcessings(ctx: SimContext, projectId?: string): ProcessingRecord[] {
  return ctx.store.state.processings.filter((p) => projectId === undefined || p.projectId === projectId);
}

async function updateProcessing(ctx: SimContext, request: RouteRequest, allowMove: boolean): Promise<Reply> {
  const record = processingOr404(ctx, request.params[0]!);
  const body = await readJsonObject(request.req);
  const name = optionalString(body, 'name');
  const description = optionalString(body, 'description');
  const projectId = allowMove ? optionalString(body, 'projectId') : undefined;
  if (projectId !== undefined) projectOr404(ctx, projectId);
  if (name !== undefined) record.name = name;
  if (description !== undefined) record.description = description;
  if (projectId !== undefined) record.projectId = projectId;
  record.updated = isoTime(ctx.now());
  ctx.store.save();
  return empty();
}

async function restartProcessing(ctx: SimContext, request: RouteRequest): Promise<Reply> {
  const record = processingOr404(ctx, request.params[0]!);
  const state = stateOf(ctx, record);
  if (state.status !== 'FAILED') {
    throw new SimHttpError(400, 'BAD_REQUEST', `Only a FAILED processing can be restarted; this one is ${state.status}`, { status: state.status });
  }
  record.attempt += 1;
  record.runStartedAt = ctx.now();
  record.durationMs = ctx.processingMs;
  record.updated = isoTime(record.runStartedAt);
  ctx.store.save();
  return empty();
}

async function downloadResult(ctx: SimContext, request: RouteRequest): Promise<Reply> {
  const record = processingOr404(ctx, request.params[0]!);
  const state = stateOf(ctx, record);
  // The live service serves what a FAILED processing made before it failed: "Unfinished or failed processings
  // yield partial or no results" (mapflow-qgis mapflow/functional/layer_utils.py line 636); here the share of
  // each AOI's features that its percentCompleted says was done.
  const partial = ctx.realShapes && state.status === 'FAILED';
  if (state.status !== 'OK' && ctx.realShapes && !partial) {
    throw new SimHttpError(409, 'CONFLICT', `Results are available once the processing is OK; it is ${state.status}`);
  }
  if (state.status !== 'OK' && !partial) {
    throw new SimHttpError(409, 'PROCESSING_NOT_COMPLETED', `Results are available once the processing is OK; it is ${state.status}`, { status: state.status });
  }
  const aoiId = request.url.searchParams.get('aoiId');
  let indexes = record.aois.map((_, i) => i);
  if (aoiId) {
    const index = record.aois.findIndex((a) => a.id === aoiId);
    if (index < 0) throw notFound('AOI', aoiId);
    indexes = [index];
  }
  const model = findModel(record.wdId)!;
  // The live service may take minutes before the first byte of a large result.
  if (ctx.resultDelayMs > 0) await sleep(ctx.resultDelayMs);
  const stream = resultStream(
    {
      processingId: record.id,
      name: record.name,
      seed: ctx.seed,
      kind: model.sim.kind,
      aois: record.aois,
      aoiCount: record.aois.length,
      enabledBlocks: record.blocks.filter((b) => b.enabled).map((b) => b.name),
    },
    indexes,
    partial ? state.percentCompleted / 100 : 1,
  );
  return { kind: 'stream', contentType: 'application/octet-stream', body: stream };
}

async function estimateCost(ctx: SimContext, request: RouteRequest, apiVersion: 'v1' | 'v2'): Promise<Reply> {
  const body = await readJsonObject(request.req);
  const model = modelFrom(body, ctx.realShapes);
  let area: number;
  if (body.geometry !== undefined && body.geometry !== null) {
    area = areaSqM(readGeometry(body.geometry, ctx.realShapes));
  } else if (apiVersion === 'v2' && body.areaSqKm !== undefined && body.areaSqKm !== null) {
    if (typeof body.areaSqKm !== 'number' || !Number.isFinite(body.areaSqKm) || body.areaSqKm < 0) {
      throw badRequest('areaSqKm must be a number of square kilometres, 0 or more', { areaSqKm: String(body.areaSqKm) });
    }
    area = body.areaSqKm * 1e6;
  } else {
    throw badRequest(apiVersion === 'v2' ? 'geometry or areaSqKm is required' : 'geometry is required');
  }
  let price = 0;
  if (ctx.realShapes) {
    // The live cost call runs the server's checks too (a provider's minimum area rides on /cost:
    // mapflow-qgis functional/service/processing_service.py).
    if (body.geometry !== undefined && body.geometry !== null) {
      const geometry = readGeometry(body.geometry, ctx.realShapes);
      const projectId = optionalString(body, 'projectId');
      checkAreaLimits(ctx, geometry, area, projectId === undefined ? undefined : projectOr404(ctx, projectId));
    }
    if (apiVersion === 'v2' && body.params !== undefined && body.params !== null) {
      const source = sourceFromV2(body.params, true);
      checkProviderMinArea(ctx, source, area);
      price = sourcePrice(source);
    }
  }
  return { kind: 'text', body: String(costOf(model, area, resolveBlocks(model, body.blocks, ctx.realShapes), price)) };
}

// ---------------------------------------------------------------- account

function userStatus(ctx: SimContext): unknown {
  const { state } = ctx.store;
  const credits = ctx.limits.credits - state.creditsUsed;
  const remainingArea = Math.max(0, Math.round(ctx.limits.areaLimitSqM - state.processedAreaSqM));
  if (ctx.realShapes) {
    // The live shape (mapflow-qgis mapflow/mapflow.py set_processing_limit, mapflow-mcp src/schemas.ts): billingType names the
    // counter that bills the account; the other one reads 0. No `credits`, no `user`.
    const billing = ctx.live.billingType;
    return {
      email: ctx.account.email,
      processedArea: Math.round(state.processedAreaSqM),
      remainingArea: billing === 'AREA' ? remainingArea : 0,
      remainingCredits: billing === 'CREDITS' ? credits : 0,
      areaLimit: ctx.limits.areaLimitSqM,
      // No aoiAreaLimit: the plugin reads it from the project's user (mapflow-qgis functional/service/project_service.py lines 50-56).
      memoryLimit: ctx.limits.storageLimitBytes,
      maxAoisPerProcessing: ctx.live.maxAoisPerProcessing,
      searchAreaLimit: ctx.live.searchAreaLimitSqM,
      billingType: billing,
      reviewWorkflowEnabled: false,
      models: MODELS.map(publicModel),
      dataProviders: DATA_PROVIDERS.map((p, i) => ({
        id: `2b7c4d5e-0000-4000-8000-00000000000${i + 1}`,
        name: p.name,
        displayName: p.displayName,
        previewUrl: `https://example.invalid/${p.name}/{z}/{x}/{y}.png`,
        price: [{ zoom: 18, priceSqKm: PROVIDER_PRICE_PER_SQ_KM }],
      })),
      // The catalog providers the account may search, each with its minimum area, spelt minAreaSqkm
      // (mapflow-qgis mapflow/mapflow.py lines 3069-3114).
      searchDataProviders: CATALOG_PROVIDERS.map((p) => {
        const min = ctx.live.catalogMinAreasSqKm[p.name];
        return { name: p.name, displayName: p.catalogName, ...(min !== undefined && { minAreaSqkm: min }) };
      }),
      teams: [],
    };
  }
  // Both spec shapes (A and B) in one body: a client of either finds its fields.
  return {
    id: state.userId,
    email: ctx.account.email,
    login: ctx.account.email,
    processedArea: Math.round(state.processedAreaSqM),
    remainingArea,
    areaLimit: ctx.limits.areaLimitSqM,
    aoiAreaLimit: ctx.limits.aoiAreaLimitSqM,
    memoryLimit: ctx.limits.storageLimitBytes,
    remainingCredits: credits,
    isPremium: isPremium(ctx),
    models: MODELS.map(publicModel),
    dataProviders: [
      ...DATA_PROVIDERS.map((p) => ({ name: p.name, displayName: p.displayName, type: 'dataProvider' })),
      ...CATALOG_PROVIDERS.map((p) => ({ name: p.name, displayName: p.name, type: 'catalog' })),
    ],
    teams: [],
    user: { id: state.userId, email: ctx.account.email, credits },
  };
}

const STATS_FIELDS = ['id', 'name', 'projectId', 'projectName', 'workflowDefName', 'status', 'percentCompleted', 'area', 'cost', 'created', 'updated'] as const;

async function processingStats(ctx: SimContext, request: RouteRequest): Promise<Reply> {
  const body = await readJsonObject(request.req);
  const format = (request.url.searchParams.get('type') ?? 'JSON').toUpperCase();
  if (format !== 'JSON' && format !== 'CSV') throw badRequest(`type must be JSON or CSV, not ${format}`);
  const page = body.page === undefined ? 1 : Number(body.page);
  const perPage = body.perPage === undefined ? 20 : Number(body.perPage);
  if (!Number.isInteger(page) || page < 0) throw badRequest('page must be a non-negative integer');
  if (!Number.isInteger(perPage) || perPage < 1) throw badRequest('perPage must be a positive integer');

  let rows = ctx.store.state.processings.map((record) => {
    const state = stateOf(ctx, record);
    const project = ctx.store.state.projects.find((p) => p.id === record.projectId);
    return {
      id: record.id,
      name: record.name,
      projectId: record.projectId,
      projectName: project?.name ?? '',
      workflowDefName: findModel(record.wdId)?.name ?? '',
      status: state.status ?? 'UNPROCESSED',
      percentCompleted: state.percentCompleted,
      area: Math.round(record.areaSqM),
      cost: record.cost,
      created: record.created,
      updated: isoTime(Math.max(Date.parse(record.updated), state.since)),
    };
  });

  // filter "<field>=<value>", several joined by ';' or '&'
  if (typeof body.filter === 'string' && body.filter.trim()) {
    for (const clause of body.filter.split(/[;&]/)) {
      const match = /^\s*(\w+)\s*=\s*(.*?)\s*$/.exec(clause);
      if (!match) throw badRequest(`filter must be <field>=<value>, not '${clause}'`);
      const [, field, value] = match as unknown as [string, string, string];
      if (!(STATS_FIELDS as readonly string[]).includes(field)) throw badRequest(`Unknown filter field '${field}'`);
      rows = rows.filter((row) => String(row[field as keyof typeof row]).toLowerCase() === value.toLowerCase());
    }
  }
  // sort "<field>:<asc|desc>" or "<field>,<asc|desc>"
  const sort = typeof body.sort === 'string' && body.sort.trim() ? body.sort : 'created:desc';
  const sortMatch = /^\s*(\w+)\s*(?:[:,]\s*(asc|desc))?\s*$/i.exec(sort);
  if (!sortMatch || !(STATS_FIELDS as readonly string[]).includes(sortMatch[1]!)) throw badRequest(`sort must be <field>:<asc|desc>, not '${sort}'`);
  const sortField = sortMatch[1] as keyof (typeof rows)[number];
  const direction = (sortMatch[2] ?? 'asc').toLowerCase() === 'desc' ? -1 : 1;
  rows.sort((a, b) => (a[sortField] < b[sortField] ? -1 : a[sortField] > b[sortField] ? 1 : 0) * direction);

  const total = rows.length;
  const totalCost = rows.reduce((sum, r) => sum + r.cost, 0);
  const totalArea = rows.reduce((sum, r) => sum + r.area, 0);
  const start = (Math.max(1, page) - 1) * perPage;
  const results = rows.slice(start, start + perPage);

  if (format === 'CSV') {
    const escape = (value: unknown) => {
      const text = String(value);
      return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
    };
    const lines = [STATS_FIELDS.join(','), ...results.map((row) => STATS_FIELDS.map((f) => escape(row[f])).join(','))];
    return { kind: 'binary', contentType: 'text/csv; charset=utf-8', body: Buffer.from(`${lines.join('\n')}\n`, 'utf8') };
  }
  return json({ results, total, count: results.length, totalCost, totalArea });
}

// ---------------------------------------------------------------- projects

async function createProject(ctx: SimContext, request: RouteRequest): Promise<Reply> {
  const body = await readJsonObject(request.req);
  const name = optionalString(body, 'name');
  if (!name) throw badRequest('name is required');
  const now = isoTime(ctx.now());
  const project: ProjectRecord = { id: randomUUID(), name, description: optionalString(body, 'description') ?? null, isDefault: false, created: now, updated: now };
  ctx.store.state.projects.push(project);
  ctx.store.save();
  return json(projectView(ctx, project));
}

async function updateProject(ctx: SimContext, request: RouteRequest): Promise<Reply> {
  const project = projectOr404(ctx, request.params[0]!);
  const body = await readJsonObject(request.req);
  const name = optionalString(body, 'name');
  const description = optionalString(body, 'description');
  if (name !== undefined) {
    if (!name) throw badRequest('name must not be empty');
    project.name = name;
  }
  if (description !== undefined) project.description = description;
  project.updated = isoTime(ctx.now());
  ctx.store.save();
  return empty();
}

async function deleteProject(ctx: SimContext, request: RouteRequest): Promise<Reply> {
  const project = projectOr404(ctx, request.params[0]!);
  if (project.isDefault) throw badRequest('The default project cannot be deleted');
  const { state } = ctx.store;
  state.projects = state.projects.filter((p) => p.id !== project.id);
  state.processings = state.processings.filter((p) => p.projectId !== project.id);
  ctx.store.save();
  return empty();
}

// ---------------------------------------------------------------- paged lists (realShapes)

/** `{limit, offset}` -> `{results, total, count}` (mapflow-qgis project_api.py, processing_api.py, since 2026-03). */
async function page(ctx: SimContext, request: RouteRequest, items: () => unknown[]): Promise<Reply> {
  const body = await readJsonObject(request.req);
  const limit = body.limit === undefined ? 20 : Number(body.limit);
  const offset = body.offset === undefined ? 0 : Number(body.offset);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw badRequest('limit must be a whole number from 1 to 1000');
  if (!Number.isInteger(offset) || offset < 0) throw badRequest('offset must be a whole number, 0 or more');
  const all = items();
  const results = all.slice(offset, offset + limit);
  return json({ results, total: all.length, count: results.length });
}

// ---------------------------------------------------------------- routes

const ID = '([^/]+)';
const r = (path: string) => new RegExp(`^${path}$`);

export const processingRoutes: Route[] = [
  // projects
  { method: 'POST', pattern: r('/projects'), family: 'api', create: true, handle: createProject },
  { method: 'GET', pattern: r('/projects'), family: 'api', handle: async (ctx) => json(ctx.store.state.projects.map((p) => projectView(ctx, p))) },
  { method: 'GET', pattern: r('/projects/default'), family: 'api', handle: async (ctx) => json(projectView(ctx, ctx.store.defaultProject())) },
  { method: 'GET', pattern: r(`/projects/${ID}`), family: 'api', handle: async (ctx, { params }) => json(projectView(ctx, projectOr404(ctx, params[0]!))) },
  { method: 'PUT', pattern: r(`/projects/${ID}`), family: 'api', handle: updateProject },
  { method: 'DELETE', pattern: r(`/projects/${ID}`), family: 'api', handle: deleteProject },
  // processings v2
  {
    method: 'POST', pattern: r('/processings/v2'), family: 'api', create: true, createsProcessing: true,
    handle: async (ctx, request) => json(createdV2(ctx, await createProcessing(ctx, request, 'v2'))),
  },
  { method: 'GET', pattern: r('/processings/v2'), family: 'api', handle: async (ctx) => json(ownProcessings(ctx).map((p) => listItemV2(ctx, p))) },
  { method: 'GET', pattern: r(`/processings/${ID}/v2`), family: 'api', handle: async (ctx, { params }) => json(processingV2(ctx, processingOr404(ctx, params[0]!))) },
  {
    method: 'GET', pattern: r(`/projects/${ID}/processings/v2`), family: 'api',
    handle: async (ctx, { params }) => json(ownProcessings(ctx, projectOr404(ctx, params[0]!).id).map((p) => listItemV2(ctx, p))),
  },
  { method: 'POST', pattern: r('/processing/cost/v2'), family: 'api', handle: (ctx, request) => estimateCost(ctx, request, 'v2') },
  // account and history (before /processings/{id})
  { method: 'GET', pattern: r('/user/status'), family: 'api', handle: async (ctx) => json(userStatus(ctx)) },
  { method: 'POST', pattern: r('/processings/stats'), family: 'api', handle: processingStats },
  // processings v1
  { method: 'GET', pattern: r('/processings'), family: 'api', handle: async (ctx) => json(ownProcessings(ctx, ctx.store.defaultProject().id).map((p) => fullProcessing(ctx, p))) },
  {
    method: 'GET', pattern: r(`/projects/${ID}/processings`), family: 'api',
    handle: async (ctx, { params }) => json(ownProcessings(ctx, projectOr404(ctx, params[0]!).id).map((p) => fullProcessing(ctx, p))),
  },
  { method: 'GET', pattern: r(`/processings/${ID}`), family: 'api', handle: async (ctx, { params }) => json(fullProcessing(ctx, processingOr404(ctx, params[0]!))) },
  { method: 'POST', pattern: r('/processing/cost'), family: 'api', handle: (ctx, request) => estimateCost(ctx, request, 'v1') },
  {
    method: 'POST', pattern: r('/processings'), family: 'api', create: true, createsProcessing: true,
    handle: async (ctx, request) => json(createdV1(ctx, await createProcessing(ctx, request, 'v1'))),
  },
  { method: 'PUT', pattern: r(`/processing/${ID}`), family: 'api', handle: (ctx, request) => updateProcessing(ctx, request, false) },
  { method: 'PUT', pattern: r(`/processings/${ID}`), family: 'api', handle: (ctx, request) => updateProcessing(ctx, request, true) },
  { method: 'POST', pattern: r(`/processings/${ID}/restart`), family: 'api', handle: restartProcessing },
  {
    method: 'DELETE', pattern: r(`/processings/${ID}`), family: 'api',
    handle: async (ctx, { params }) => {
      const record = processingOr404(ctx, params[0]!);
      ctx.store.state.processings = ctx.store.state.processings.filter((p) => p.id !== record.id);
      ctx.store.save();
      return empty();
    },
  },
  { method: 'GET', pattern: r(`/processings/${ID}/aois`), family: 'api', handle: async (ctx, { params }) => json(aoiViews(ctx, processingOr404(ctx, params[0]!))) },
  { method: 'GET', pattern: r(`/processings/${ID}/result`), family: 'api', handle: downloadResult },
  // The newer paths of the live service (realShapes only: an older service answers 404/405 to them).
  { method: 'POST', pattern: r('/projects/page'), family: 'api', live: true, handle: (ctx, request) => page(ctx, request, () => ctx.store.state.projects.map((p) => projectView(ctx, p))) },
  {
    method: 'POST', pattern: r(`/projects/${ID}/processings/v2/page`), family: 'api', live: true,
    handle: (ctx, request) => {
      const project = projectOr404(ctx, request.params[0]!);
      return page(ctx, request, () => ownProcessings(ctx, project.id).map((p) => fullProcessing(ctx, p)));
    },
  },
  { method: 'POST', pattern: r(`/processings/${ID}/restart/v2`), family: 'api', live: true, handle: restartProcessing },
  { method: 'PUT', pattern: r(`/processings/${ID}/v2`), family: 'api', live: true, handle: (ctx, request) => updateProcessing(ctx, request, true) },
];
