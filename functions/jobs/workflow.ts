/**
 * The shapes the state machine carries between its Task states.
 *
 * Every Task receives the whole state as its payload and its result is stored
 * at the `resultPath` of its catalogue entry (`functions/core/catalog.ts`).
 * The state stays small: ids, numbers and S3 pointers only; geometries,
 * requests and results live in S3 under `work/<jobId>/` and `results/`.
 */
import type { GeoTiffInfo } from '../geotiff/index.ts';
import type { InputKind, InputObject, JobError, JobKind, JobPart, JobStatus, RasterResult } from '../core/model.ts';
import type { PollEstimate } from '../polling/poll-policy.ts';
import type { Route } from '../routing/index.ts';

/** What Step Functions' Catch writes at `$.error`. `Cause` is the JSON `{errorType, errorMessage}` of a Lambda error. */
export interface TaskError {
  Error: string;
  Cause?: string;
}

/** Result of Register Job (`$.job`). Also the job context handed to each part of the Map. */
export interface RegisterResult {
  jobId: string;
  input: InputObject;
  /** 'unsupported' only on a job that is already final (REJECTED); such a job never reaches a later step. */
  kind: InputKind;
  routeName: string;
  /**
   * The route the job was registered with (the ledger row's `plannedRoute`):
   * every later step plans and stores with it, even after a restart with other
   * routes (issue 39, point 10). Absent for a job that matched no route, or
   * registered by an older version (then the routes by name, routeOf).
   */
  route?: Route;
  /** Status of the ledger row when the task ran (RECEIVED for a new job). */
  status: JobStatus;
  /** The row was already final: the machine ends without redoing anything. */
  alreadyFinal: boolean;
  /** GeoTIFF whose route runs a model on the uploaded image (Has Model? choice). */
  processImages: boolean;
  /** The route names a model to run (always true for GeoJSON). */
  hasModel: boolean;
  executionArn?: string;
  /** ISO time the job was first registered (timings in job.json, maxJobSeconds). */
  createdAt: string;
}

/**
 * Result of Inspect GeoTIFF (`$.image`): what the inspection found (already
 * small: no pixel data), less its read counter, plus the object's size.
 */
export type InspectResult = Omit<GeoTiffInfo, 'bytesRead'> & { size: number };

/** Result of Ensure Mosaic (`$.mosaic`). */
export interface MosaicResult {
  mosaicId: string;
  name: string;
  created: boolean;
  imageCount: number;
}

/** Result of Upload Image (`$.upload`). */
export interface UploadResult {
  mosaicId: string;
  /** '' only while the image is still being looked for (`ready` is then false). */
  imageId: string;
  filename: string;
  fileSize: number;
  /** True when an image uploaded by an earlier attempt was found and reused. */
  reused: boolean;
  /** The image's footprint in EPSG:4326 (from its WKT, or the inspected one). */
  footprint: GeoJsonPolygon | GeoJsonMultiPolygon;
  /**
   * True once Mapflow has preprocessed the image (COMPLETED and data
   * available): the machine goes on. False: it waits `waitSeconds` and runs
   * Upload Image again, which only looks at the image's status then.
   */
  ready: boolean;
  waitSeconds: number;
  /** Mapflow's preprocessing_status at the last look. */
  preprocessingStatus?: string;
  /** Looks at the image's status so far. */
  checks?: number;
  /** ISO time the upload was sent (to find the image when the answer named none). */
  uploadedAt?: string;
  /** SHA-1 of the bytes sent, hex (the image list's `checksum`). */
  checksum?: string;
  /** Ids of the mosaic's images before the upload, while the new one is looked for (never taken for it). */
  priorImageIds?: string[];
}

/** One processing to run (an item of the Process Parts Map). */
export interface PlanPart {
  index: number;
  /** Part name (feature name or the file's base name); also the result folder name. */
  name: string;
  /** Deterministic Mapflow processing name: `<part name> [<jobId8>]`. */
  processingName: string;
  /** S3 key of the part's geometry (GeoJSON geometry object). */
  geometryKey: string;
  /** S3 key of the full create request, minus the geometry (see ProcessingRequest). */
  requestKey: string;
  areaSqKm: number;
  estimatedCost: number;
  projectId: string;
}

/** Result of Plan Processing (`$.plan`). */
export interface PlanResult {
  projectId: string;
  wdId: string;
  modelName: string;
  areaSqKm: number;
  estimatedCost: number;
  creditBudget: number;
  parts: PlanPart[];
  /** Non-areal features skipped in the GeoJSON (reported, not fatal). */
  ignored?: { points: number; lines: number };
}

/** The create request of a part as stored in S3 at `requestKey` (geometry at `geometryKey`). */
export interface ProcessingRequest {
  name: string;
  projectId: string;
  wdId: string;
  params: { sourceParams: Record<string, unknown>; inferenceParams?: Record<string, unknown> };
  blocks?: { name: string; enabled: boolean }[];
  meta: Record<string, string>;
}

/** Top-level state of an execution. */
/**
 * What a part's child execution ends with (Finish Part's output), gathered by
 * the Process Parts Map at `$.partOutcomes`. Only this: the part's full
 * outcome (a JobPart) is in the ledger, where Finish Part recorded it, and
 * Finish Job reads it there. Gathering 100 JobParts (long names, result keys
 * of up to 1,024 bytes, Mapflow's messages) into the job's state could cross
 * Step Functions' 256 KiB per state (issue 37 point 3,
 * test/unit/lib/payload-bound.test.ts).
 */
export interface PartOutcome {
  index: number;
  status: 'OK' | 'FAILED';
}

export interface WorkflowState {
  jobId: string;
  input: InputObject;
  /** `$$.Execution.Id`, when the Register Job task passes it. */
  executionArn?: string;
  job?: RegisterResult;
  image?: InspectResult;
  mosaic?: MosaicResult;
  upload?: UploadResult;
  plan?: PlanResult;
  /** The Process Parts Map's result: each part's outcome in brief. */
  partOutcomes?: PartOutcome[];
  /**
   * The parts' outcomes in full: what the Map gathered before issue 37 point 3
   * (an execution started on that definition still carries them); Finish Job
   * now reads them from the ledger.
   */
  parts?: JobPart[];
  error?: TaskError;
  finish?: FinishResult;
}

/** Result of Acquire Slot (`$.slot`). */
export interface SlotResult {
  acquired: boolean;
  waitSeconds: number;
  attempts: number;
  inUse?: number;
  /** ISO time of the first attempt (to bound the waiting). */
  firstAttemptAt: string;
}

/** Result of Create Processing (`$.processing`). */
export interface ProcessingResult {
  processingId: string;
  /** True when an earlier attempt's processing was found and reused. */
  reused: boolean;
  startedAt: string;
}

export type PollOutcome = 'WAIT' | 'RESTART' | 'OK' | 'FAILED' | 'TIMEOUT';

/** Result of Poll Processing (`$.poll`). */
export interface PollResult {
  outcome: PollOutcome;
  /** Seconds to wait before the next poll (WAIT and RESTART). */
  waitSeconds: number;
  /** Polls made so far (carried from the previous `$.poll`). */
  polls: number;
  status: string;
  percentCompleted: number;
  /** Restarts made so far. */
  restarts: number;
  /**
   * RESTART of a restart the ledger records but whose effect Mapflow does not
   * show (the bridge was killed between recording it and asking): the same restart, asked again.
   */
  resendRestart?: boolean;
  cost?: number;
  messages?: { code: string; parameters?: Record<string, string> }[];
  /** Percent at the previous poll. */
  previousPercent?: number;
  /** The poll policy's estimate of the end, carried to the next poll (a few numbers; see planNextPoll). */
  estimate?: PollEstimate;
  /**
   * Time and polls spent AWAITING (an ordered scene), not counted toward
   * maxJobSeconds and the poll count up to MAX_AWAITING_SECONDS
   * (poll-policy.ts): `seconds` of the spans that ended, `since` the start of
   * the current one, `polls` made while AWAITING.
   */
  awaiting?: { seconds: number; polls: number; since?: string };
}

/** Result of Restart Processing (`$.restart`). */
export interface RestartResult {
  restarts: number;
  restartedAt: string;
}

/** Result of Store Results (`$.results`). */
export interface StoreResult {
  /** Unset when nothing was stored (a FAILED processing without partial results). */
  resultKey?: string;
  /** Unset for partial results (the failure report says what failed). */
  jobJsonKey?: string;
  bytes: number;
  /** A FAILED processing's partial results (resultKey under failed/), with their feature count. */
  partial?: { features: number };
  /** The processing's raster result, not copied (its tile URLs). */
  rasterResult?: RasterResult;
}

/**
 * The job context inside the Map. The state machine's ItemSelector passes the
 * Register Job result (`$.job`); the whole top-level state is accepted too.
 */
export type PartJobContext = RegisterResult | (WorkflowState & { job: RegisterResult });

/** State of one iteration of the Process Parts Map. */
export interface PartState {
  job: PartJobContext;
  part: PlanPart;
  slot?: SlotResult;
  processing?: ProcessingResult;
  poll?: PollResult;
  restart?: RestartResult;
  results?: StoreResult;
  error?: TaskError;
}

/** Result of Finish Job / Fail Job (`$.finish`). */
export interface FinishResult {
  status: 'SUCCEEDED' | 'FAILED' | 'REJECTED';
  resultPrefix?: string;
  reportKey?: string;
  actualCost?: number;
  error?: JobError;
}

/** Minimal GeoJSON geometry types (the state must not depend on heavy libraries). */
export interface GeoJsonPolygon {
  type: 'Polygon';
  coordinates: number[][][];
}
export interface GeoJsonMultiPolygon {
  type: 'MultiPolygon';
  coordinates: number[][][][];
}
