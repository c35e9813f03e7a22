/**
 * The simulator's state: projects, processings, mosaics and images of the one
 * account, kept in memory and written to `<dataDir>/state.json` after every
 * change (atomically: temp file + rename), so a restarted simulator keeps its
 * data. Uploaded files live beside it in `<dataDir>/files/`.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Polygon } from 'geojson';
import type { AoiGeometry, BBox } from './geometry.ts';

/** Where a processing's imagery comes from (parsed from v1/v2 params by ./sources.ts; kept here, with the records that hold it). */
export type ImagerySource =
  | { kind: 'dataProvider'; providerName: string; zoom: unknown }
  | { kind: 'myImagery'; imageIds: string[]; mosaicId?: string }
  | { kind: 'imagerySearch'; dataProvider: string; imageIds: string[]; zoom: unknown }
  | { kind: 'userDefined'; sourceType: string; url: unknown; zoom: unknown; crs?: string };

export interface Message {
  code: string;
  parameters: Record<string, string>;
}

export interface ProjectRecord {
  id: string;
  name: string;
  description: string | null;
  isDefault: boolean;
  created: string;
  updated: string;
  /**
   * A project another account owns and shares with this one (realShapes): its `user` is the owner,
   * whose `aoiAreaLimit` applies to processings in it (mapflow-qgis schema/project.py lines 57-66,
   * functional/service/project_service.py lines 50-56).
   */
  owner?: { email: string; aoiAreaLimitSqM: number };
}

export interface AoiRecord {
  id: string;
  geometry: Polygon;
  areaSqM: number;
}

export interface ProcessingRecord {
  id: string;
  name: string;
  description: string | null;
  projectId: string;
  wdId: string;
  apiVersion: 'v1' | 'v2';
  geometry: AoiGeometry;
  aois: AoiRecord[];
  areaSqM: number;
  cost: number;
  /** The source parameters exactly as the request sent them. */
  params: Record<string, unknown>;
  blocks: Array<{ name: string; enabled: boolean }>;
  meta: Record<string, string>;
  source: ImagerySource;
  /** Problems found in the request that end the processing FAILED (empty: none). */
  validationMessages: Message[];
  /** The failure trigger of meta.simulate, if any. */
  simulate?: { mode: 'fail' | 'fail-once'; code: string };
  /** 1 for the first run, +1 per restart. */
  attempt: number;
  runStartedAt: number;
  durationMs: number;
  /** unevenProgress: the seed of this processing's progress profile (with the attempt). */
  progressSeed?: number;
  /** realShapes: time the run first reports status null, then UNPROCESSED (before it starts). */
  queuedMs?: number;
  /** realShapes: time it then waits AWAITING for its imagery provider. */
  awaitingMs?: number;
  vectorLayerId: string;
  rasterLayerId: string;
  created: string;
  updated: string;
}

export interface MosaicRecord {
  id: string;
  name: string;
  tags: string[];
  created_at: string;
}

export interface ImageMetadata {
  crs: string;
  width: number;
  height: number;
  count: number;
  dtypes: string[];
  pixel_size: [number, number];
  nodata: number | null;
}

export interface ImageRecord {
  id: string;
  mosaicId: string;
  filename: string;
  /** Name of the stored file under `<dataDir>/files/` (shared by linked copies). */
  fileKey: string;
  file_size: number;
  uploaded_at: string;
  meta_data: ImageMetadata;
  /** WKT polygon in EPSG:4326. */
  footprint: string;
  footprintBbox: BBox;
  /** Pixel size in metres (for model checks), whatever the CRS unit. */
  groundPixelSize: number;
  checksum: string;
  image_url: string;
  cog_link: string;
  /** realShapes: when preprocessing ends (ms since epoch); absent: ready at once. */
  readyAt?: number;
  /** realShapes: preprocessing ends FAILED with this preprocessing_error. */
  preprocessingError?: string;
}

export interface SimState {
  version: 1;
  userId: string;
  processedAreaSqM: number;
  creditsUsed: number;
  projects: ProjectRecord[];
  processings: ProcessingRecord[];
  mosaics: MosaicRecord[];
  images: ImageRecord[];
}

export class StateStore {
  readonly state: SimState;
  readonly filesDir: string;
  private readonly statePath: string;

  private constructor(dataDir: string, state: SimState) {
    this.statePath = join(dataDir, 'state.json');
    this.filesDir = join(dataDir, 'files');
    this.state = state;
  }

  /** Opens the state of a data directory, or starts a fresh one from `initial`. */
  static open(dataDir: string, initial: () => SimState): StateStore {
    mkdirSync(join(dataDir, 'files'), { recursive: true });
    const statePath = join(dataDir, 'state.json');
    let state: SimState;
    if (existsSync(statePath)) {
      try {
        state = JSON.parse(readFileSync(statePath, 'utf8')) as SimState;
      } catch (cause) {
        throw new Error(`Simulator state ${statePath} cannot be read`, { cause });
      }
    } else {
      state = initial();
    }
    const store = new StateStore(dataDir, state);
    store.save();
    return store;
  }

  /** Whether the last save met a full disk (the file lags the memory until a save succeeds). */
  unsaved = false;

  /**
   * Writes the state; called after every change so a crash loses nothing acknowledged.
   * On a full disk (ENOSPC) the change stays in memory, which answers every request, and
   * the next save writes it with the rest: a full disk under the bridge's state folder,
   * where `mapflow-bridge start` keeps the embedded simulator's data, must not fail the
   * requests of jobs in flight (Mapflow itself is not on that disk).
   */
  save(): void {
    const temporary = `${this.statePath}.tmp`;
    try {
      writeFileSync(temporary, JSON.stringify(this.state));
      renameSync(temporary, this.statePath);
      this.unsaved = false;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      this.unsaved = true;
    }
  }

  filePath(fileKey: string): string {
    return join(this.filesDir, fileKey);
  }

  defaultProject(): ProjectRecord {
    const project = this.state.projects.find((p) => p.isDefault);
    if (!project) throw new Error('Simulator state has no default project');
    return project;
  }

  /** Bytes used by stored files (a file shared by linked images counts once). */
  storageUsed(): number {
    const sizes = new Map<string, number>();
    for (const image of this.state.images) sizes.set(image.fileKey, image.file_size);
    let total = 0;
    for (const size of sizes.values()) total += size;
    return total;
  }
}
