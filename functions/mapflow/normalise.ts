/**
 * Tolerant readers: turn what the server sent (in any of the shapes the spec
 * and real-api-notes.md describe) into the client's types. Unknown fields are
 * kept; missing optional fields stay missing; only a missing identity (an id,
 * a number where one is the whole answer) is an error (`ShapeError`).
 */
import type {
  CatalogProduct,
  CatalogResult,
  DataProviderInfo,
  ImageRecord,
  ImageStatus,
  Page,
  UploadAnswer,
  Model,
  ModelBlock,
  Mosaic,
  Processing,
  ProcessingAoi,
  ProcessingMessage,
  ProcessingStats,
  Project,
  ReviewStatus,
  StorageUsage,
  Team,
  UserStatus,
} from './types.ts';

/** The answer does not have the shape the client needs. The client maps it to MapflowBadResponse. */
export class ShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ShapeError';
  }
}

type Rec = Record<string, unknown>;

export function isRecord(value: unknown): value is Rec {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function rec(value: unknown): Rec {
  return isRecord(value) ? value : {};
}

function str(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** A finite number from a number or a numeric string. */
export function num(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && value.trim() !== '') {
    const n = Number(value.trim());
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

function bool(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}

/** Drops keys whose value is undefined (so spreads do not add `key: undefined`). */
function defined<T extends Rec>(value: T): T {
  for (const key of Object.keys(value)) if (value[key] === undefined) delete value[key];
  return value;
}

/** The array itself, or the first array found under one of `keys` of an envelope. */
function listOf(value: unknown, keys: readonly string[], what: string): unknown[] {
  if (Array.isArray(value)) return value;
  if (isRecord(value)) {
    for (const key of keys) if (Array.isArray(value[key])) return value[key] as unknown[];
  }
  throw new ShapeError(`expected ${what} as an array or an envelope with ${keys.join('/')}`);
}

function requireId(value: Rec, what: string): string {
  const id = str(value.id);
  if (!id) throw new ShapeError(`${what} has no id`);
  return id;
}

/** JSON text to a value; empty text is undefined. */
export function parseJsonText(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    throw new ShapeError('answer is not JSON');
  }
}

// ---------------------------------------------------------------------------
// Errors

export interface ParsedErrorBody {
  code?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/**
 * Reads a request-level error body in any shape seen:
 * `{code, message, params}` (processing/project endpoints),
 * `{detail: {code, parameters, message?}}` (data endpoints),
 * `{detail: "text"}`, `{detail: [{msg, type, loc}]}` (validation),
 * `{message}`, `{error}`, or text that is not JSON.
 */
export function parseErrorBody(text: string): ParsedErrorBody {
  const trimmed = text.trim();
  if (trimmed === '') return {};
  let body: unknown;
  try {
    body = JSON.parse(trimmed);
  } catch {
    return { message: truncate(trimmed.replace(/\s+/g, ' '), 500) };
  }
  if (typeof body === 'string') return { message: truncate(body, 500) };
  if (!isRecord(body)) return { message: truncate(trimmed, 500) };

  const detail = body.detail;
  if (isRecord(detail)) return fromCodeRecord(detail);
  if (typeof detail === 'string') return { message: truncate(detail, 500) };
  if (Array.isArray(detail)) {
    const items = detail.filter(isRecord);
    const message = items
      .map((d) => [Array.isArray(d.loc) ? d.loc.join('.') : undefined, str(d.msg)].filter(Boolean).join(': '))
      .filter(Boolean)
      .join('; ');
    return defined({ code: str(items[0]?.type), message: message || undefined, params: { errors: detail } });
  }
  if (isRecord(body.error)) return fromCodeRecord(body.error);
  const fromTop = fromCodeRecord(body);
  if (fromTop.message === undefined && typeof body.error === 'string') fromTop.message = body.error;
  return fromTop;
}

function fromCodeRecord(value: Rec): ParsedErrorBody {
  const params = isRecord(value.params) ? value.params : isRecord(value.parameters) ? value.parameters : undefined;
  return defined({
    code: str(value.code),
    message: str(value.message) ?? str(value.msg) ?? str(params?.message),
    params,
  });
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

// ---------------------------------------------------------------------------
// Processings

/** Cost answer: a bare number as text (`12`, `12.0`), a JSON number or numeric string, or `{cost}`. */
export function parseCost(text: string): number {
  const trimmed = text.trim();
  const direct = num(trimmed);
  if (direct !== undefined) return direct;
  let body: unknown;
  try {
    body = JSON.parse(trimmed);
  } catch {
    throw new ShapeError('cost answer is not a number');
  }
  const value = num(body) ?? (isRecord(body) ? num(body.cost) ?? num(body.price) : undefined);
  if (value === undefined) throw new ShapeError('cost answer is not a number');
  return value;
}

export function normaliseReviewStatus(value: unknown): ReviewStatus {
  if (value === undefined || value === null) return { status: null, raw: value ?? null };
  if (typeof value === 'string') return { status: value, raw: value };
  if (isRecord(value)) {
    const inner = value.status ?? value.reviewStatus;
    if (typeof inner === 'string') return { status: inner, raw: value };
    if (isRecord(inner)) return { status: normaliseReviewStatus(inner).status, raw: value };
    return { status: null, raw: value };
  }
  return { status: null, raw: value };
}

export function normaliseMessages(value: unknown): ProcessingMessage[] {
  if (!Array.isArray(value)) return [];
  return value.map((entry) => {
    if (typeof entry === 'string') return { code: entry, parameters: {} };
    const m = rec(entry);
    const params = rec(m.parameters ?? m.params);
    const parameters: Record<string, string> = {};
    for (const [k, v] of Object.entries(params)) {
      parameters[k] = typeof v === 'string' ? v : JSON.stringify(v);
    }
    return { ...m, code: str(m.code) ?? 'UNKNOWN', parameters };
  });
}

/**
 * An ISO time with its zone. The processing service writes times without one
 * (`2023-01-26T13:58:32.122099`, UTC: real-api-notes, mapflow-qgis
 * schema/processing.py reads them as naive); JavaScript would read such a
 * string as local time, so `Z` is added.
 */
export function utcTime(value: unknown): string | undefined {
  const text = str(value);
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(trimmed)) return `${trimmed}Z`;
  return trimmed;
}

export function normaliseProcessing(value: unknown): Processing {
  const p = rec(value);
  return defined({
    ...p,
    id: requireId(p, 'processing'),
    // null or absent at first on the live service: not started yet.
    status: str(p.status) ?? 'UNPROCESSED',
    created: utcTime(p.created),
    updated: utcTime(p.updated),
    percentCompleted: num(p.percentCompleted),
    // The live record has both; Geoalert's plugin reads aoiArea (mapflow-qgis mapflow/entity/processing.py line 58).
    area: num(p.area) ?? num(p.aoiArea),
    aoiArea: num(p.aoiArea) ?? num(p.area),
    cost: num(p.cost),
    reviewStatus: normaliseReviewStatus(p.reviewStatus),
    messages: normaliseMessages(p.messages),
  }) as Processing;
}

export function normaliseProcessingList(value: unknown): Processing[] {
  return listOf(value, ['results', 'processings', 'items', 'content', 'data'], 'processings').map(normaliseProcessing);
}

/** A page `{results, total, count}` (or a bare array: one page holding everything). */
export function normalisePage<T>(value: unknown, item: (entry: unknown) => T, what: string): Page<T> {
  const results = listOf(value, ['results', 'items', 'content', 'data'], what).map(item);
  if (Array.isArray(value)) return { results, total: results.length, count: results.length };
  const envelope = rec(value);
  return defined({ results, total: num(envelope.total), count: num(envelope.count) });
}

export function normaliseAois(value: unknown): ProcessingAoi[] {
  return listOf(value, ['results', 'aois', 'items', 'data'], 'AOIs').map((entry) => {
    const a = rec(entry);
    return defined({
      ...a,
      id: requireId(a, 'AOI'),
      status: str(a.status),
      percentCompleted: num(a.percentCompleted),
      area: num(a.area),
      messages: normaliseMessages(a.messages),
    }) as ProcessingAoi;
  });
}

// ---------------------------------------------------------------------------
// Projects and account

export function normaliseProject(value: unknown): Project {
  // The v1 reference says a create answers with the project id: accept a bare id.
  if (typeof value === 'string' && value.trim() !== '') return { id: value.trim() };
  const p = rec(value);
  return { ...p, id: requireId(p, 'project') } as Project;
}

export function normaliseProjects(value: unknown): Project[] {
  return listOf(value, ['results', 'projects', 'items', 'content', 'data'], 'projects').map(normaliseProject);
}

export function normaliseModel(value: unknown): Model {
  const m = rec(value);
  const blocks = Array.isArray(m.blocks) ? m.blocks : [];
  return defined({
    ...m,
    id: str(m.id) ?? '',
    name: str(m.name) ?? '',
    description: str(m.description),
    pricePerSqKm: num(m.pricePerSqKm) ?? 0,
    blocks: blocks.map((b): ModelBlock => {
      const block = rec(b);
      return defined({
        ...block,
        name: str(block.name) ?? '',
        displayName: str(block.displayName),
        optional: bool(block.optional) ?? false,
        price: num(block.price) ?? 0,
      }) as ModelBlock;
    }),
  }) as Model;
}

export function normaliseUserStatus(value: unknown): UserStatus {
  if (!isRecord(value)) throw new ShapeError('user status is not an object');
  const user = rec(value.user);
  const pick = (key: string) => value[key] ?? user[key];
  const billing = str(pick('billingType'));
  return defined({
    ...value,
    email: str(pick('email')),
    userId: str(user.id) ?? str(value.userId),
    // The live service's counter is remainingCredits (mapflow-qgis mapflow/mapflow.py lines 3035-3050, set_processing_limit); the spec's is credits.
    credits: num(pick('remainingCredits')) ?? num(pick('credits')),
    billingType: billing === undefined ? undefined : billing.trim().toUpperCase(),
    maxAoisPerProcessing: num(pick('maxAoisPerProcessing')),
    searchAreaLimitSqM: num(pick('searchAreaLimit')),
    dataProviders: (Array.isArray(value.dataProviders) ? value.dataProviders : []).filter(isRecord).map(normaliseDataProvider).filter((p) => p.name !== ''),
    searchDataProviders: Array.isArray(value.searchDataProviders) ? value.searchDataProviders.filter(isRecord).map(normaliseDataProvider).filter((p) => p.name !== '') : undefined,
    processedAreaSqM: num(pick('processedArea')),
    remainingAreaSqM: num(pick('remainingArea')),
    areaLimitSqM: num(pick('areaLimit')),
    aoiAreaLimitSqM: num(pick('aoiAreaLimit')),
    memoryLimitBytes: num(pick('memoryLimit')),
    models: (Array.isArray(value.models) ? value.models : []).map(normaliseModel),
    teams: (Array.isArray(value.teams) ? value.teams : []).filter(isRecord) as Team[],
    raw: value,
  }) as UserStatus;
}

export function normaliseDataProvider(value: unknown): DataProviderInfo {
  const p = rec(value);
  return defined({
    ...p,
    name: str(p.name) ?? str(p.providerName) ?? '',
    displayName: str(p.displayName),
    minAreaSqKm: num(p.minAreaSqKm) ?? num(p.minAreaSqkm) ?? num(p.minArea),
  }) as DataProviderInfo;
}

export function normaliseStats(value: unknown): ProcessingStats {
  const results = listOf(value, ['results', 'items', 'processings', 'content', 'data'], 'processing stats').filter(isRecord);
  const envelope = rec(value);
  return defined({
    ...envelope,
    results,
    total: num(envelope.total),
    count: num(envelope.count),
    totalCost: num(envelope.totalCost),
    totalArea: num(envelope.totalArea),
    raw: value,
  }) as ProcessingStats;
}

// ---------------------------------------------------------------------------
// Data interface

export function normaliseMosaic(value: unknown): Mosaic {
  const m = rec(value);
  const createdAt = str(m.created_at) ?? str(m.createdAt);
  const imageCount = num(m.image_count) ?? num(m.imageCount);
  return defined({
    ...m,
    id: requireId(m, 'mosaic'),
    tags: Array.isArray(m.tags) ? m.tags.filter((t): t is string => typeof t === 'string') : [],
    created_at: createdAt,
    createdAt,
    image_count: imageCount,
    imageCount,
  }) as Mosaic;
}

export function normaliseImage(value: unknown): ImageRecord {
  const i = rec(value);
  const mosaicId = str(i.mosaic_id) ?? str(i.mosaicId);
  const fileSize = num(i.file_size) ?? num(i.fileSize);
  const uploadedAt = str(i.uploaded_at) ?? str(i.uploadedAt);
  const imageUrl = str(i.image_url) ?? str(i.imageUrl);
  const cogLink = str(i.cog_link) ?? str(i.cogLink);
  return defined({
    ...i,
    id: requireId(i, 'image'),
    mosaic_id: mosaicId,
    mosaicId,
    file_size: fileSize,
    fileSize,
    uploaded_at: uploadedAt,
    uploadedAt,
    image_url: imageUrl,
    imageUrl,
    cog_link: cogLink,
    cogLink,
  }) as ImageRecord;
}

/**
 * An upload's answer: the image record (reference) or `{message, mosaic_id}`
 * (raster-service contract, mapflow-qgis spec/002_E_zoom_selector_api.md).
 */
export function normaliseUploadAnswer(value: unknown): UploadAnswer {
  const r = rec(value);
  if (str(r.id)) {
    const image = normaliseImage(r);
    const mosaicId = image.mosaic_id ?? '';
    return defined({ mosaicId, message: str(r.message), image, id: image.id });
  }
  const mosaicId = str(r.mosaic_id) ?? str(r.mosaicId);
  if (!mosaicId) throw new ShapeError('upload answer has neither an image id nor a mosaic_id');
  return defined({ ...r, mosaicId, message: str(r.message) }) as UploadAnswer;
}

/** `GET /rasters/image/{id}/status` or one image of `GET /rasters/mosaic/{id}/status`. */
export function normaliseImageStatus(value: unknown): ImageStatus {
  const s = rec(value);
  const imageId = str(s.image_id) ?? str(s.imageId) ?? str(s.id);
  if (!imageId) throw new ShapeError('image status has no image_id');
  return defined({
    ...s,
    imageId,
    preprocessingStatus: (str(s.preprocessing_status) ?? str(s.preprocessingStatus) ?? 'NONE').toUpperCase(),
    preprocessingError: str(s.preprocessing_error) ?? str(s.preprocessingError),
    dataAvailable: bool(s.data_available) ?? bool(s.dataAvailable),
    filename: str(s.filename),
    uploadedAt: str(s.uploaded_at) ?? str(s.uploadedAt),
  }) as ImageStatus;
}

export function normaliseMosaicStatus(value: unknown): ImageStatus[] {
  const r = rec(value);
  return (Array.isArray(r.images) ? r.images : []).filter(isRecord).map(normaliseImageStatus);
}

export function normaliseMosaics(value: unknown): Mosaic[] {
  return listOf(value, ['results', 'mosaics', 'items', 'data'], 'mosaics').map(normaliseMosaic);
}

export function normaliseImages(value: unknown): ImageRecord[] {
  return listOf(value, ['images', 'results', 'items', 'data'], 'images').map(normaliseImage);
}

const GIB = 1024 ** 3;

export function normaliseStorageUsage(value: unknown): StorageUsage {
  if (!isRecord(value)) throw new ShapeError('storage usage is not an object');
  const gb = (v: unknown) => {
    const n = num(v);
    return n === undefined ? undefined : Math.round(n * GIB);
  };
  const usedBytes = num(value.used_bytes) ?? num(value.memoryUsed) ?? gb(value.used_gb) ?? 0;
  // memoryLimit: null means storage limiting is off (mapflow-qgis spec/002_E_zoom_selector_api.md).
  const unlimited = value.memoryLimit === null || value.limit_bytes === null;
  const limitBytes = unlimited ? undefined : num(value.limit_bytes) ?? num(value.memoryLimit) ?? gb(value.limit_gb);
  if (!unlimited && limitBytes === undefined) throw new ShapeError('storage usage lacks a limit (a number, or null for none)');
  const freeBytes = limitBytes === undefined ? undefined : num(value.memoryFree) ?? Math.max(0, limitBytes - usedBytes);
  return defined({
    ...value,
    usedBytes,
    limitBytes,
    freeBytes,
    usagePercent: num(value.usage_percent) ?? (limitBytes !== undefined && limitBytes > 0 ? (usedBytes / limitBytes) * 100 : undefined),
    maxUploadFileSize: num(value.maxUploadFileSize),
    maxPixelCount: num(value.maxPixelCount),
    raw: value,
  }) as StorageUsage;
}

export function normaliseLinkResult(value: unknown): { message: string; mosaicId: string } {
  const r = rec(value);
  const mosaicId = str(r.mosaic_id) ?? str(r.mosaicId);
  if (!mosaicId) throw new ShapeError('link answer has no mosaic_id');
  return { ...r, message: str(r.message) ?? '', mosaicId };
}

// ---------------------------------------------------------------------------
// Catalog

function normaliseProductType(value: unknown): { productType: string; productTypeRaw?: string } {
  const raw = str(value) ?? '';
  const lower = raw.toLowerCase();
  const productType = lower === 'scene' || lower === 'image' ? 'Scene' : lower === 'mosaic' ? 'Mosaic' : raw;
  return productType === raw ? { productType } : { productType, productTypeRaw: raw };
}

export function normaliseCatalog(value: unknown): CatalogResult {
  const images = listOf(value, ['images', 'results', 'items', 'products', 'data'], 'catalog products').map(
    (entry): CatalogProduct => {
      const p = rec(entry);
      return defined({
        ...p,
        id: requireId(p, 'catalog product'),
        ...normaliseProductType(p.productType),
        pixelResolution: num(p.pixelResolution),
        cloudCover: num(p.cloudCover),
        offNadirAngle: num(p.offNadirAngle),
        // Spelt minAreaSqkm on the live service (mapflow-qgis schema/catalog.py line 82).
        minAreaSqKm: num(p.minAreaSqkm) ?? num(p.minAreaSqKm),
      }) as CatalogProduct;
    },
  );
  const envelope = rec(value);
  return defined({ images, total: num(envelope.total), limit: num(envelope.limit), offset: num(envelope.offset) });
}
