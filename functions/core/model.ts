/**
 * The job model shared by the handlers, the CDK state machine, the local engine
 * and the command line. A job is one input object dropped under the inbox.
 *
 * This file holds types and small pure helpers only; persistence lives in
 * `functions/ledger`, publishing in `functions/events`.
 */

/**
 * The imagery a catalog search picked for the job (GeoJSON with `imagery.search`).
 * functions/events/types.ts publishes it with a JSON Schema that is checked
 * against this type at compile time.
 */
export interface ImageryChoice {
  /** Catalog image id, passed to Mapflow as imagerySearch. */
  productId: string;
  providerName: string;
  /** The pick rule that chose it. */
  rule: 'newest' | 'sharpest' | 'least-cloud';
  acquisitionDate?: string;
  cloudCover?: number;
  offNadirAngle?: number;
  /** Metres per pixel. */
  pixelResolution?: number;
  /** Share of the AOI the image covers, 0 to 100. */
  intersectionPercent: number;
  /** Products the search returned that passed the filters. */
  candidates: number;
}

/** Kind of input, decided from the object key's extension. */
export type JobKind = 'geojson' | 'geotiff';

/**
 * The kind a ledger row and its events record: a JobKind, or 'unsupported'
 * for a file whose extension the bridge does not take (such a job is always
 * REJECTED UNSUPPORTED_FILE_TYPE).
 */
export type InputKind = JobKind | 'unsupported';
/** Every InputKind: the values of the `kind` dimension of the job metrics (functions/runtime/metrics.ts). */
export const INPUT_KINDS = ['geojson', 'geotiff', 'unsupported'] as const satisfies readonly InputKind[];

/**
 * Job statuses in the order a job moves through them. A status only ever moves
 * forward (the ledger enforces it with conditional writes), except that
 * IN_PROGRESS may be re-entered after a restart (same rank), and QUEUED is a
 * waiting status entered from wherever the job is (WAITING_STATUSES).
 */
export const JOB_STATUSES = [
  'RECEIVED', // registered in the ledger
  'QUEUED', // waiting for a concurrency slot
  'UPLOADING', // GeoTIFF being streamed into a mosaic
  'UPLOADED', // GeoTIFF in its mosaic
  'SUBMITTED', // processing create request sent
  'IN_PROGRESS', // Mapflow is processing
  'SUCCEEDED', // final: results written
  'FAILED', // final: Mapflow or the bridge failed
  'REJECTED', // final: the input cannot be processed; nothing was spent
  'CANCELLED', // final: an operator cancelled the job (`jobs cancel`)
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const FINAL_STATUSES: readonly JobStatus[] = ['SUCCEEDED', 'FAILED', 'REJECTED', 'CANCELLED'];

export function isFinalStatus(status: string): status is 'SUCCEEDED' | 'FAILED' | 'REJECTED' | 'CANCELLED' {
  return (FINAL_STATUSES as readonly string[]).includes(status);
}

/** Rank used by the ledger's forward-only condition. */
export function statusRank(status: JobStatus): number {
  return JOB_STATUSES.indexOf(status);
}

/**
 * Statuses that say what a job is waiting for, not how far it got: QUEUED
 * (waiting for a concurrency slot). A job enters one from any status ranked
 * below WAITING_ENDS_AT, whatever it has done so far (a GeoJSON waits right
 * after RECEIVED, a GeoTIFF on a processing route after UPLOADED), and the
 * row keeps the rank of where it was, so it moves on from there; a stale
 * write of an earlier status is still refused.
 */
export const WAITING_STATUSES: readonly JobStatus[] = ['QUEUED'];
export const WAITING_ENDS_AT: JobStatus = 'SUBMITTED';

export function isWaitingStatus(status: string): boolean {
  return (WAITING_STATUSES as readonly string[]).includes(status);
}

/** The S3 object a job was made from. */
export interface InputObject {
  bucket: string;
  /** Decoded key (S3 notifications URL-encode keys; dispatch decodes them). */
  key: string;
  versionId?: string;
  /** ETag without quotes. */
  etag: string;
  size: number;
}

/** Execution input written by the dispatcher (StartExecution name = jobId). */
export interface ExecutionInput {
  jobId: string;
  input: InputObject;
}

/** One EventBridge detail-type per transition. */
export const EVENT_DETAIL_TYPES = {
  RECEIVED: 'Job Received',
  QUEUED: 'Job Queued',
  UPLOADING: 'Image Uploading',
  UPLOADED: 'Image Uploaded',
  SUBMITTED: 'Processing Submitted',
  IN_PROGRESS: 'Processing Started',
  RESTARTED: 'Processing Restarted',
  SUCCEEDED: 'Job Succeeded',
  FAILED: 'Job Failed',
  REJECTED: 'Job Rejected',
  CANCELLED: 'Job Cancelled',
} as const;
export type EventDetailType = (typeof EVENT_DETAIL_TYPES)[keyof typeof EVENT_DETAIL_TYPES];

/** A code and message that tell the user what went wrong and what to fix. */
export interface JobError {
  code: string;
  message: string;
  /** Mapflow processing messages, when the failure came from Mapflow. */
  mapflowMessages?: { code: string; parameters?: Record<string, string> }[];
}

/** One Mapflow processing of a job (a job has one, or one per feature). */
export interface JobPart {
  index: number;
  name: string;
  processingId?: string;
  status?: string; // Mapflow status
  percentCompleted?: number;
  cost?: number;
  attempts?: number; // 1, or 2 after a restart
  /** When Restart Processing asked Mapflow to restart (recorded before the request: a killed bridge's resumed execution still knows). */
  restartRequestedAt?: string;
  resultKey?: string;
  /**
   * The partial results of a processing that FAILED, kept under
   * `failed/<path>/<part>/` (store-results.ts storePartialResults), with their feature count.
   */
  partialResult?: { key: string; features: number };
  /** A raster result Mapflow made, which the bridge does not copy (store-results.ts `rasterResultOf`). */
  rasterResult?: RasterResult;
  error?: JobError;
}

/**
 * A processing's raster result, left in Mapflow: the service offers it as
 * XYZ map tiles (`tileUrl`, a `{z}/{x}/{y}` template, and `tileJsonUrl`), as
 * Geoalert's plugin loads it (mapflow-qgis mapflow/functional/layer_utils.py
 * lines 187-209, 469-471), with no file to download.
 */
export interface RasterResult {
  stored: false;
  tileJsonUrl?: string;
  tileUrl?: string;
}

/** A route as a job keeps it (functions/routing/routes.ts `Route`, structurally: core imports nothing above it). */
export interface PlannedRoute {
  name: string;
  prefix: string;
  [setting: string]: unknown;
}

/** A row of the ledger table (partition key `jobId`). */
export interface LedgerRow {
  jobId: string;
  input: InputObject;
  kind: InputKind;
  routeName: string;
  /**
   * The route as it was when the job was registered (issue 39, point 10): a
   * bridge restarted with other routes resumes the job on this one, so its
   * request, its records and what Mapflow runs agree. Absent on rows of older
   * versions and of jobs that matched no route.
   */
  plannedRoute?: PlannedRoute;
  status: JobStatus;
  statusHistory: { status: JobStatus; at: string; note?: string }[];
  projectId?: string;
  mosaicId?: string;
  imageId?: string;
  /** First processing id (GSI `byProcessingId`); all of them are in `parts`. */
  processingId?: string;
  parts?: JobPart[];
  /** Parts the plan made (a split job has one per feature); `parts` holds only those started. */
  partCount?: number;
  areaSqKm?: number;
  estimatedCost?: number;
  actualCost?: number;
  percentCompleted?: number;
  messages?: string[];
  error?: JobError;
  resultPrefix?: string;
  reportKey?: string;
  /** The catalog product a search picked (GeoJSON with `imagery.search`). */
  imagery?: ImageryChoice;
  executionArn?: string;
  /** `jobs retry`: the job this one runs again, and its attempt number (the first run is 1). */
  retryOf?: string;
  attempt?: number;
  /** `jobs retry`: the job that ran this one again. */
  retriedBy?: string;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
  /**
   * Set with the final status, in the same write, and removed once the final
   * event is out: a final row that still has it lost its event (the process
   * died, or the publish failed, between the two), which the step run again
   * (Retry, Fail Job) or, locally, the next start publishes (ledger.ts
   * `finalEventPublished`, packages/local/src/final-events.ts).
   */
  finalEventPending?: boolean;
  /** Constant `JOB` on job rows so the `byStatus` GSI can be queried by time. */
  entity: 'JOB';
}

