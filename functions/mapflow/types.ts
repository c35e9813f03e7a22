/**
 * Types of the Mapflow API as the client returns them.
 *
 * Read types are tolerant: every field the spec lists is optional unless the
 * client guarantees it (ids, normalised fields), and every extra field the
 * server sends is kept (index signatures). Field names are the API's own
 * (camelCase for processings/projects, snake_case for the data interface);
 * the data-interface records also get camelCase aliases for the fields the
 * bridge uses.
 *
 * Units: areas reported by the account (`areaLimit`, `remainingArea`,
 * `aoiAreaLimit`, `processedArea`) are square metres; normalised names say so
 * (`areaLimitSqM`, ...). Costs are credits. Sizes are bytes.
 */
import type { Readable } from 'node:stream';

type Extra = { [key: string]: unknown };

/** A GeoJSON geometry (Polygon or MultiPolygon for AOIs). */
export interface Geometry extends Extra {
  type: string;
  coordinates?: unknown;
}

// ---------------------------------------------------------------------------
// Processings

export type ProcessingStatus =
  | 'UNPROCESSED'
  | 'IN_PROGRESS'
  | 'AWAITING'
  | 'OK'
  | 'FAILED'
  | 'CANCELLED'
  | 'REFUNDED'
  | 'IN_REVIEW'
  | (string & {});

/** Statuses the official plugin treats as final. */
export const TERMINAL_PROCESSING_STATUSES: readonly string[] = ['OK', 'FAILED', 'CANCELLED', 'REFUNDED'];

/** An error record inside `messages` of a processing or AOI. */
export interface ProcessingMessage extends Extra {
  code: string;
  /** String values; includes `level`. */
  parameters: Record<string, string>;
}

/**
 * Review status normalised over a string, `{reviewStatus, inReviewUntil}`,
 * `{status, feedback}` or null: `status` is the value (ACCEPTED, NOT_ACCEPTED,
 * REFUNDED, IN_REVIEW, ...) or null; `raw` is what the server sent.
 */
export interface ReviewStatus {
  status: string | null;
  raw: unknown;
}

export interface Layer extends Extra {
  id?: string;
  name?: string;
  tileJsonUrl?: string;
  tileUrl?: string;
}

export interface ModelBlock extends Extra {
  name: string;
  displayName?: string;
  optional: boolean;
  price: number;
}

/** A model (workflow definition). */
export interface Model extends Extra {
  id: string;
  name: string;
  description?: string;
  pricePerSqKm: number;
  blocks: ModelBlock[];
  created?: string;
  updated?: string;
}

export interface Processing extends Extra {
  id: string;
  name?: string;
  description?: string | null;
  projectId?: string;
  status: ProcessingStatus;
  percentCompleted?: number;
  /** m²; `area` and `aoiArea` are both on the live record (mapflow-mcp src/schemas.ts), each filled from the other. */
  area?: number;
  aoiArea?: number;
  cost?: number;
  reviewStatus: ReviewStatus;
  /** Always an array (empty when the server sent none). */
  messages: ProcessingMessage[];
  vectorLayer?: Layer;
  rasterLayer?: Layer;
  /** A raster result, for the models that make one (mapflow-mcp src/schemas.ts); null or absent otherwise. */
  resultRasterLayer?: Layer | null;
  workflowDef?: Partial<Model> & Extra;
  aoiCount?: number;
  rating?: unknown;
  params?: Extra;
  blocks?: { name: string; enabled: boolean }[];
  meta?: Record<string, string>;
  created?: string;
  updated?: string;
}

export interface ProcessingAoi extends Extra {
  id: string;
  status?: ProcessingStatus;
  percentCompleted?: number;
  geometry?: Geometry;
  area?: number;
  messages: ProcessingMessage[];
}

export interface BlockToggle {
  name: string;
  enabled: boolean;
}

/** v2 imagery source: exactly one key. */
export type SourceParams =
  | { dataProvider: { providerName: string; zoom?: number } }
  | { myImagery: { imageIds?: string[]; mosaicId?: string } }
  | { imagerySearch: { dataProvider: string; imageIds: string[]; zoom?: number } }
  | {
      userDefined: {
        sourceType: 'XYZ' | 'TMS' | 'QUADKEY' | 'SENTINEL_L2A' | 'LOCAL' | (string & {});
        url: string;
        zoom?: number;
        crs?: string;
        rasterLogin?: string;
        rasterPassword?: string;
      };
    };

/** A model named by id or by name (one of the two). */
export type ModelRef = { wdId: string; wdName?: string } | { wdId?: string; wdName: string };

export type CreateProcessingV2 = ModelRef & {
  name: string;
  /** Omitted: the account's default project is used. */
  projectId?: string;
  geometry: Geometry;
  params: { sourceParams: SourceParams; inferenceParams?: Extra };
  blocks?: BlockToggle[];
  description?: string;
  /** Custom metadata; the client adds `source-app` and `version` unless given. */
  meta?: Record<string, string>;
};

export type CreateProcessingV1 = ModelRef & {
  geometry: Geometry;
  name?: string;
  description?: string;
  projectId?: string;
  /** Flat source map: data_provider, url, source_type, zoom (strings). */
  params?: Record<string, string>;
  blocks?: BlockToggle[];
  meta?: Record<string, string>;
};

/**
 * The cost call's body. Geoalert's plugin posts the whole create body
 * (mapflow-qgis mapflow/functional/api/processing_api.py lines 93-99), so the
 * create's fields are accepted here too; `meta` gets what the create's gets.
 */
export interface CostRequestV2 {
  wdId: string;
  geometry?: Geometry;
  areaSqKm?: number;
  params?: { sourceParams?: SourceParams; inferenceParams?: Extra } & Extra;
  blocks?: BlockToggle[];
  name?: string;
  description?: string;
  projectId?: string;
  meta?: Record<string, string>;
}

export interface CostRequestV1 {
  wdId: string;
  geometry: Geometry;
  params?: Record<string, string>;
}

// ---------------------------------------------------------------------------
// Projects and account

export interface ProjectUser extends Extra {
  id?: string;
  login?: string;
  email?: string;
  role?: string;
  created?: string;
  areaLimit?: number;
  aoiAreaLimit?: number;
  processedArea?: number;
  updated?: string;
  isPremium?: boolean;
}

export interface Project extends Extra {
  id: string;
  name?: string;
  description?: string | null;
  progress?: Extra & { status?: string; percentCompleted?: number; details?: unknown[]; completionDate?: string };
  aoiCount?: number;
  area?: number;
  user?: ProjectUser;
  isDefault?: boolean;
  created?: string;
  updated?: string;
  workflowDefs?: (Partial<Model> & Extra)[];
}

export interface Team extends Extra {
  teamId?: string;
  name?: string;
  role?: string;
  activeUntil?: string | null;
  creditsLimit?: number | null;
}

/**
 * User status normalised over the spec's shape A (`email`, `processedArea`,
 * `remainingArea`, `areaLimit`, `memoryLimit`, `models`, `teams`) and shape B
 * (`user: {id, email, credits}`, `models`). The server's fields are kept too.
 */
export interface UserStatus extends Extra {
  email?: string;
  userId?: string;
  /**
   * Credits left: `remainingCredits` (live service, mapflow-qgis
   * mapflow/mapflow.py lines 3035-3050, set_processing_limit), else the spec's `credits`.
   */
  credits?: number;
  /**
   * Which counter bills this account: `AREA`, `CREDITS` or `NONE`
   * (mapflow-qgis schema/__init__ BillingType). Undefined when the answer
   * has no `billingType` (the spec's shapes): then every counter given is checked.
   */
  billingType?: 'AREA' | 'CREDITS' | 'NONE' | (string & {});
  /** Most polygons one processing may have (server: `input.geometry.getNumGeometries > user.maxAoisPerProcessing`). */
  maxAoisPerProcessing?: number;
  /**
   * Largest AOI of an immediate catalog search, m² (`searchAreaLimit`;
   * mapflow-qgis spec/002_F_plan_processing_api.md lines 328-341). Missing or 0: no limit.
   */
  searchAreaLimitSqM?: number;
  /** Imagery providers the account may use, as the account names them. */
  dataProviders: DataProviderInfo[];
  /**
   * Catalog providers the account may search (`searchDataProviders`, with
   * `minAreaSqkm`: mapflow-qgis mapflow/mapflow.py lines 3069-3114). Undefined
   * when the status does not list them (the spec's shapes).
   */
  searchDataProviders?: DataProviderInfo[];
  processedAreaSqM?: number;
  remainingAreaSqM?: number;
  areaLimitSqM?: number;
  aoiAreaLimitSqM?: number;
  memoryLimitBytes?: number;
  models: Model[];
  teams: Team[];
  raw: unknown;
}

export interface ProcessingStatsQuery {
  page?: number;
  perPage?: number;
  /** `<field>:<asc|desc>` (also seen as `<field>,<desc>`); sent as given. */
  sort?: string;
  /** `<field>=<value>`. */
  filter?: string;
}

export interface ProcessingStats extends Extra {
  results: Extra[];
  total?: number;
  count?: number;
  totalCost?: number;
  totalArea?: number;
  raw: unknown;
}

// ---------------------------------------------------------------------------
// Data interface

export interface Mosaic extends Extra {
  id: string;
  name?: string;
  tags: string[];
  created_at?: string;
  image_count?: number;
  /** Aliases of the snake_case fields. */
  createdAt?: string;
  imageCount?: number;
}

export interface ImageMetadata extends Extra {
  crs?: string;
  width?: number;
  height?: number;
  count?: number;
  dtypes?: string[];
  pixel_size?: number[];
  nodata?: number | null;
}

export interface ImageRecord extends Extra {
  id: string;
  mosaic_id?: string;
  filename?: string;
  file_size?: number;
  uploaded_at?: string;
  footprint?: string;
  preview_url_s?: string;
  preview_url_l?: string;
  meta_data?: ImageMetadata;
  cog_link?: string;
  image_url?: string;
  checksum?: string;
  /** Aliases of the snake_case fields. */
  mosaicId?: string;
  fileSize?: number;
  uploadedAt?: string;
  imageUrl?: string;
  cogLink?: string;
}

/**
 * Storage usage normalised over `{used_bytes, limit_bytes, ...}` and
 * `{memoryLimit, memoryUsed, memoryFree, maxUploadFileSize, maxPixelCount}`.
 */
export interface StorageUsage extends Extra {
  usedBytes: number;
  /**
   * Undefined when the service has no storage limit: `memoryLimit: null`
   * (mapflow-qgis spec/002_E_zoom_selector_api.md: "may be null when memory
   * limiting is disabled").
   */
  limitBytes?: number;
  /** Undefined when there is no limit. */
  freeBytes?: number;
  usagePercent?: number;
  maxUploadFileSize?: number;
  maxPixelCount?: number;
  raw: unknown;
}

/**
 * What an upload answers. The raster-service contract (mapflow-qgis
 * spec/002_E_zoom_selector_api.md) answers `{message, mosaic_id}` without an
 * image record; the bridge's reference answered the image record. `image` is
 * set only in the second case.
 */
export interface UploadAnswer extends Extra {
  mosaicId: string;
  message?: string;
  image?: ImageRecord;
  /** The image id, when the answer carried one. */
  id?: string;
}

/** Preprocessing state of one uploaded image (`GET /rasters/image/{id}/status`). */
export interface ImageStatus extends Extra {
  imageId: string;
  /** NONE, PENDING, IN_PROGRESS, COMPLETED or FAILED. */
  preprocessingStatus: string;
  preprocessingError?: string;
  dataAvailable?: boolean;
  filename?: string;
  uploadedAt?: string;
}

/** One image of `GET /rasters/mosaic/{id}/status` (images that are not ready yet included). */
export interface MosaicImageStatus extends ImageStatus {}

/** An imagery provider of `/user/status` `dataProviders`. */
export interface DataProviderInfo extends Extra {
  name: string;
  displayName?: string;
  /** Smallest AOI the provider accepts, km², when the account states one. */
  minAreaSqKm?: number;
}

/** One page of a paged list (`{limit, offset}` -> `{results, total, count}`). */
export interface Page<T> {
  results: T[];
  total?: number;
  count?: number;
}

/** A file to upload: a stream of exactly `size` bytes. */
export interface UploadSource {
  stream: Readable;
  size: number;
  filename: string;
  /** Default `image/tiff`. */
  contentType?: string;
}

// ---------------------------------------------------------------------------
// Catalog

export interface CatalogSearch extends Extra {
  aoi: Geometry;
  acquisitionDateFrom?: string;
  acquisitionDateTo?: string;
  minResolution?: number;
  maxResolution?: number;
  maxCloudCover?: number;
  minOffNadirAngle?: number;
  maxOffNadirAngle?: number;
  minAoiIntersectionPercent?: number;
  limit?: number;
  offset?: number;
  sortBy?: string;
  sortOrder?: 'ASC' | 'DESC';
  hideUnavailable?: boolean;
  dataProviders?: string[];
  productTypes?: ('IMAGE' | 'MOSAIC' | (string & {}))[];
}

export interface CatalogProduct extends Extra {
  id: string;
  /** `Scene` (also sent as `Image`) or `Mosaic`; other values pass through. */
  productType: 'Scene' | 'Mosaic' | (string & {});
  /** What the server sent, when it differs from `productType`. */
  productTypeRaw?: string;
  acquisitionDate?: string;
  sensor?: string;
  pixelResolution?: number;
  cloudCover?: number;
  offNadirAngle?: number;
  colorBandOrder?: string;
  providerName?: string;
  previewType?: string;
  previewUrl?: string;
  footprint?: Geometry;
  /** The zoom the product is processed at (a string on the live service: mapflow-qgis schema/catalog.py). */
  zoom?: string | number;
  /** Least area (km²) of a processing on it, the search result's `minAreaSqkm` (mapflow-qgis schema/catalog.py line 82). */
  minAreaSqKm?: number;
}

export interface CatalogResult {
  images: CatalogProduct[];
  total?: number;
  limit?: number;
  offset?: number;
}
