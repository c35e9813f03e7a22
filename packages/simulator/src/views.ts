/**
 * How records look on the wire. The spec's shapes by default; with
 * `realShapes` the variants of real-api-notes.md (full v2 records,
 * reviewStatus as an object, ...).
 */
import { DEFAULT_LIMITS, findModel, MODELS, publicModel } from './catalogue.ts';
import { isoTime, type SimContext } from './context.ts';
import { processingState, type ProcessingState } from './lifecycle.ts';
import type { ImageRecord, MosaicRecord, ProcessingRecord, ProjectRecord } from './store.ts';

export function stateOf(ctx: SimContext, record: ProcessingRecord): ProcessingState {
  return processingState(record, ctx.now());
}

function updatedOf(ctx: SimContext, record: ProcessingRecord, state: ProcessingState): string {
  return wireTime(ctx, Math.max(Date.parse(record.updated), state.since));
}

/**
 * Processing times as the live service writes them: without a zone and with
 * microseconds (`2023-01-26T13:58:32.122099`, UTC) in realShapes; ISO with Z otherwise.
 */
export function wireTime(ctx: SimContext, ms: number): string {
  const iso = isoTime(ms);
  return ctx.realShapes ? `${iso.slice(0, -1)}000` : iso;
}

function modelOf(record: ProcessingRecord) {
  const model = findModel(record.wdId);
  if (!model) throw new Error(`Processing ${record.id} refers to unknown model ${record.wdId}`);
  return model;
}

function layers(ctx: SimContext, record: ProcessingRecord) {
  const tiles = `${ctx.baseUrl()}/layers`;
  return {
    vectorLayer: {
      id: record.vectorLayerId,
      name: record.name,
      tileJsonUrl: `${tiles}/vector/${record.vectorLayerId}/tile.json`,
      tileUrl: `${tiles}/vector/${record.vectorLayerId}/{z}/{x}/{y}.pbf`,
    },
    rasterLayer: {
      id: record.rasterLayerId,
      tileJsonUrl: `${tiles}/raster/${record.rasterLayerId}/tile.json`,
      tileUrl: `${tiles}/raster/${record.rasterLayerId}/{z}/{x}/{y}.png`,
    },
  };
}

function resultRaster(ctx: SimContext, record: ProcessingRecord, status: string | null | undefined) {
  const heights = record.blocks.some((b) => b.name === 'Heights' && b.enabled);
  if (!heights || status !== 'OK') return null;
  const tiles = `${ctx.baseUrl()}/layers/raster-result/${record.id}`;
  return { id: record.rasterLayerId, name: `${record.name} heights`, tileJsonUrl: `${tiles}/tile.json`, tileUrl: `${tiles}/{z}/{x}/{y}.png` };
}

function reviewStatus(ctx: SimContext): unknown {
  return ctx.realShapes ? { reviewStatus: null, inReviewUntil: null } : null;
}

/** The full record (GET /processings/{id}, v1 lists). */
export function fullProcessing(ctx: SimContext, record: ProcessingRecord, state = stateOf(ctx, record)) {
  return {
    id: record.id,
    name: record.name,
    description: record.description,
    projectId: record.projectId,
    ...layers(ctx, record),
    workflowDef: publicModel(modelOf(record)),
    aoiCount: record.aois.length,
    area: Math.round(record.areaSqM),
    // The live record also has aoiArea (mapflow-mcp src/schemas.ts; the plugin reads it) and, for models
    // that make one, a raster result: here Forest with its Heights block, once OK (its tiles are not served).
    ...(ctx.realShapes && { aoiArea: Math.round(record.areaSqM), resultRasterLayer: resultRaster(ctx, record, state.status) }),
    cost: record.cost,
    status: state.status,
    reviewStatus: reviewStatus(ctx),
    rating: null,
    percentCompleted: state.percentCompleted,
    params: record.params,
    blocks: record.blocks,
    meta: record.meta,
    messages: state.messages,
    created: wireTime(ctx, Date.parse(record.created)),
    updated: updatedOf(ctx, record, state),
  };
}

/** GET /processings/{id}/v2. */
export function processingV2(ctx: SimContext, record: ProcessingRecord) {
  const state = stateOf(ctx, record);
  if (ctx.realShapes) return fullProcessing(ctx, record, state);
  return {
    id: record.id,
    name: record.name,
    status: state.status,
    percentCompleted: state.percentCompleted,
    area: Math.round(record.areaSqM),
    cost: record.cost,
    vectorLayer: { id: record.vectorLayerId, tileUrl: layers(ctx, record).vectorLayer.tileUrl },
    created: record.created,
    updated: updatedOf(ctx, record, state),
  };
}

/** A created processing is IN_PROGRESS at 0 % (spec: States and transitions). */
const JUST_CREATED: ProcessingState = { status: 'IN_PROGRESS', percentCompleted: 0, messages: [], since: 0 };

/** The live service's first status of a new processing is null (real-api-notes: "Status may be null or UNPROCESSED at first"). */
const JUST_CREATED_LIVE: ProcessingState = { status: null, percentCompleted: 0, messages: [], since: 0 };

/** POST /processings/v2 response. */
export function createdV2(ctx: SimContext, record: ProcessingRecord) {
  if (ctx.realShapes) return fullProcessing(ctx, record, JUST_CREATED_LIVE);
  return { id: record.id, name: record.name, status: 'IN_PROGRESS', percentCompleted: 0, cost: record.cost, created: record.created };
}

/** POST /processings (v1) response: the new processing in its current (initial) state. */
export function createdV1(ctx: SimContext, record: ProcessingRecord) {
  return fullProcessing(ctx, record, JUST_CREATED);
}

/** GET /processings/v2 items. */
export function listItemV2(ctx: SimContext, record: ProcessingRecord) {
  const state = stateOf(ctx, record);
  return { id: record.id, name: record.name, projectId: record.projectId, status: state.status, percentCompleted: state.percentCompleted };
}

export function aoiViews(ctx: SimContext, record: ProcessingRecord) {
  const state = stateOf(ctx, record);
  return record.aois.map((aoi) => ({
    id: aoi.id,
    status: state.status,
    percentCompleted: state.percentCompleted,
    geometry: aoi.geometry,
    area: Math.round(aoi.areaSqM),
    messages: state.messages,
  }));
}

/** A premium account, for the simulator, is one given more credits than the default. */
export function isPremium(ctx: SimContext): boolean {
  return ctx.limits.credits > DEFAULT_LIMITS.credits;
}

export function userView(ctx: SimContext, withLimits: boolean) {
  const { state } = ctx.store;
  const base = { id: state.userId, login: ctx.account.email, email: ctx.account.email, role: 'USER', created: ctx.store.defaultProject().created };
  if (!withLimits) return base;
  return {
    ...base,
    areaLimit: ctx.limits.areaLimitSqM,
    aoiAreaLimit: ctx.limits.aoiAreaLimitSqM,
    processedArea: Math.round(state.processedAreaSqM),
    updated: isoTime(ctx.now()),
    isPremium: isPremium(ctx),
  };
}

/** The owner of a shared project as its `user` (mapflow-qgis schema/project.py MapflowProjectUser). */
function ownerView(owner: NonNullable<ProjectRecord['owner']>) {
  return { email: owner.email, role: 'USER', aoiAreaLimit: owner.aoiAreaLimitSqM };
}

export function projectView(ctx: SimContext, project: ProjectRecord) {
  const processings = ctx.store.state.processings.filter((p) => p.projectId === project.id);
  const states = processings.map((p) => ({ record: p, state: stateOf(ctx, p) }));
  const byStatus = new Map<string, { count: number; area: number; since: number }>();
  for (const { record, state } of states) {
    const entry = byStatus.get(state.status ?? 'UNPROCESSED') ?? { count: 0, area: 0, since: 0 };
    entry.count++;
    entry.area += Math.round(record.areaSqM);
    entry.since = Math.max(entry.since, state.since);
    byStatus.set(state.status ?? 'UNPROCESSED', entry);
  }
  const finished = states.length > 0 && states.every(({ state }) => ['OK', 'FAILED', 'CANCELLED', 'REFUNDED'].includes(state.status ?? ''));
  const percent = states.length === 0 ? 0 : Math.floor(states.reduce((sum, { state }) => sum + state.percentCompleted, 0) / states.length);
  const overall = states.length === 0 ? 'UNPROCESSED' : finished ? (states.some(({ state }) => state.status === 'FAILED') ? 'FAILED' : 'OK') : 'IN_PROGRESS';
  return {
    id: project.id,
    name: project.name,
    description: project.description,
    progress: {
      status: overall,
      percentCompleted: percent,
      details: [...byStatus.entries()].map(([status, entry]) => ({ status, count: entry.count, area: entry.area, statusUpdateDate: isoTime(entry.since) })),
      ...(finished ? { completionDate: isoTime(Math.max(...states.map(({ state }) => state.since))) } : {}),
    },
    aoiCount: processings.reduce((sum, p) => sum + p.aois.length, 0),
    area: processings.reduce((sum, p) => sum + Math.round(p.areaSqM), 0),
    // The live service's `user` of a project is its owner, with the owner's limits (mapflow-qgis schema/project.py
    // lines 57-66); the spec shows the limits on the default project only.
    user: project.owner ? ownerView(project.owner) : userView(ctx, project.isDefault || ctx.realShapes),
    ...(project.owner && { shareProject: { owners: [{ role: 'owner', email: project.owner.email }], users: [{ role: 'contributor', email: ctx.account.email }] } }),
    isDefault: project.isDefault,
    created: project.created,
    updated: project.updated,
    workflowDefs: MODELS.map(({ id, name, description, created, updated }) => ({ id, name, description, created, updated })),
  };
}

export function mosaicView(ctx: SimContext, mosaic: MosaicRecord, withCount: boolean) {
  const view: Record<string, unknown> = { id: mosaic.id, name: mosaic.name, tags: mosaic.tags, created_at: mosaic.created_at };
  if (withCount) view.image_count = ctx.store.state.images.filter((i) => i.mosaicId === mosaic.id).length;
  return view;
}

export function imageView(ctx: SimContext, image: ImageRecord) {
  const previews = `${ctx.baseUrl()}/rasters/image/${image.id}/preview`;
  return {
    id: image.id,
    mosaic_id: image.mosaicId,
    filename: image.filename,
    file_size: image.file_size,
    uploaded_at: image.uploaded_at,
    footprint: image.footprint,
    preview_url_s: `${previews}/s`,
    preview_url_l: `${previews}/l`,
    meta_data: image.meta_data,
    cog_link: image.cog_link,
    image_url: image.image_url,
    checksum: image.checksum,
  };
}
