/**
 * What the simulated account has: the default models of the spec (with blocks,
 * prices, zoom ranges and imagery requirements), the built-in data providers,
 * the catalog providers, and the default account limits.
 */

export interface Block {
  name: string;
  displayName: string;
  optional: boolean;
  price: number;
}

/** What kind of features a model produces. */
export type FeatureKind = 'building' | 'forest' | 'road' | 'construction';

export interface Model {
  id: string;
  name: string;
  description: string;
  created: string;
  updated: string;
  pricePerSqKm: number;
  blocks?: Block[];
  /** Simulation details, never sent to clients. */
  sim: {
    kind: FeatureKind;
    minZoom: number;
    maxZoom: number;
    /** Pixel size bounds of user imagery, metres per pixel. */
    minPixelSize: number;
    maxPixelSize: number;
    allowedBandCounts: number[];
    allowedDtypes: string[];
    /** What the live service takes instead (--real-shapes): LIVE_IMAGE_REQUIREMENTS. */
    live: LiveImageRequirements;
  };
}

/**
 * An uploaded image as the live service judges it (--real-shapes), from
 * Geoalert's reference (mapflow-docs-en source/userguides/reference.rst):
 * uploads are "RGB composite, RGBa or Singleband" and "preprocessed in Uint8"
 * (lines 18-21), so any data type is converted rather than refused; images
 * finer than 10 cm/px are resampled to 10 cm/px (line 24); each model then
 * takes its "Required GSD range" (lines 60-98), outside which "the request
 * will fail". Written from those lines, never from the bridge's checks.
 */
export interface LiveImageRequirements {
  bandCounts: number[];
  /** Finest and coarsest pixel size the model takes, m/px. */
  minPixelSize: number;
  maxPixelSize: number;
}

/** reference.rst line 24: finer uploads are resampled to 0.1 m/px. */
export const LIVE_RESAMPLED_BELOW_M = 0.1;

const RGB_RGBA_OR_SINGLE_BAND = [1, 3, 4];

function liveImage(minPixelSize: number, maxPixelSize: number): LiveImageRequirements {
  return { bandCounts: RGB_RGBA_OR_SINGLE_BAND, minPixelSize, maxPixelSize };
}

const CREATED = '2023-01-16T10:00:00Z';
const UPDATED = '2024-06-03T08:30:00Z';

/** The imagery of the satellite models: 0.5 m/px at zoom 17-18, 8-bit, in `bands` band counts. */
function satellite(kind: FeatureKind, bands: number[], live: LiveImageRequirements): Model['sim'] {
  return { kind, minZoom: 17, maxZoom: 18, minPixelSize: 0.1, maxPixelSize: 1.2, allowedBandCounts: bands, allowedDtypes: ['uint8'], live };
}

/**
 * A default model. Its id, stable because clients may store it between runs,
 * ends in `n`. With `options` ([name, displayName, price] each) its blocks are
 * Segmentation (mandatory and free) and those; without, it has no blocks.
 */
function defaultModel(n: number, name: string, description: string, pricePerSqKm: number, sim: Model['sim'], options?: [string, string, number][]): Model {
  const blocks = options && [
    { name: 'Segmentation', displayName: 'Segmentation', optional: false, price: 0 },
    ...options.map(([block, displayName, price]) => ({ name: block, displayName, optional: true, price })),
  ];
  return {
    id: `1a8b3f4e-2c1d-4e5f-9a0b-${String(n).padStart(12, '0')}`,
    name, description, created: CREATED, updated: UPDATED, pricePerSqKm,
    ...(blocks ? { blocks } : {}),
    sim,
  };
}

export const MODELS: readonly Model[] = [
  defaultModel(1, '🏠 Buildings', 'Building footprints from 0.5 m/px satellite imagery (zoom 17-18).', 5, satellite('building', [1, 3], liveImage(0.3, 1.5)), [
    ['Simplification', 'Polygon simplification', 1],
    ['Classification', 'Building classification', 2],
    ['OSM', 'Merge with OSM', 1],
  ]),
  defaultModel(2, '🌲 Forest and trees', 'Forest and tree canopy from 0.5 m/px satellite imagery (zoom 17-18).', 4, satellite('forest', [3], liveImage(0.15, 0.75)), [
    ['Heights', 'Tree heights', 3],
  ]),
  defaultModel(3, '🚗 Roads', 'Road network from 0.5 m/px satellite imagery (zoom 17-18).', 5, satellite('road', [3], liveImage(0.1, 1.2))),
  defaultModel(4, '🏗️ Construction sites', 'Construction sites from 0.5 m/px satellite imagery (zoom 17-18).', 6, satellite('construction', [3], liveImage(0.5, 2.0))),
  defaultModel(5, '🏠⭐️ Buildings (Aerial)', 'Building footprints from 0.1 m/px aerial imagery (zoom 19-20).', 10,
    // Not in reference.rst's table: api_reference.rst lines 1310-1311 give 0.1 m/px at zoom 19-20; its live
    // coarsest, 0.3 m/px, is the simulator's reading of zoom 19 (a ground pixel there), not a source's number.
    { kind: 'building', minZoom: 19, maxZoom: 20, minPixelSize: 0.03, maxPixelSize: 0.3, allowedBandCounts: [3], allowedDtypes: ['uint8'], live: liveImage(0.1, 0.3) }, [
      ['Simplification', 'Polygon simplification', 2],
    ]),
];

/** A model as clients see it (simulation details removed). */
export function publicModel(model: Model): Omit<Model, 'sim'> {
  const { sim: _sim, ...rest } = model;
  return rest;
}

/** Reduces a model name to comparable words: emoji and punctuation dropped, lower case. */
function plainName(name: string): string {
  return name.normalize('NFKC').replace(/[^\p{L}\p{N}()\s]/gu, '').replace(/\s+/g, ' ').trim().toLowerCase();
}

/**
 * Finds a model by id or by name. Names match with or without their emoji,
 * case-insensitively; a first word ("Forest", "Construction") matches when it
 * names exactly one model.
 */
export function findModel(idOrName: string): Model | undefined {
  const byId = MODELS.find((m) => m.id === idOrName);
  if (byId) return byId;
  const wanted = plainName(idOrName);
  if (!wanted) return undefined;
  const exact = MODELS.find((m) => plainName(m.name) === wanted);
  if (exact) return exact;
  const prefixed = MODELS.filter((m) => plainName(m.name).startsWith(`${wanted} `));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

export interface DataProvider {
  /** The name sent in requests (matched case-insensitively). */
  name: string;
  displayName: string;
  /** Smallest processing area the provider takes, km² (ProviderMinAreaError below it). */
  minAreaSqKm?: number;
}

/** Built-in imagery providers of the account (`sourceParams.dataProvider.providerName`). */
export const DATA_PROVIDERS: readonly DataProvider[] = [
  { name: 'Mapbox', displayName: 'Mapbox Satellite' },
  { name: 'arcgis_world_imagery', displayName: 'ArcGIS World Imagery' },
  { name: 'sentinel_l2a', displayName: 'Sentinel-2 L2A', minAreaSqKm: 10 },
];

export function findDataProvider(name: string): DataProvider | undefined {
  return byName(DATA_PROVIDERS, name);
}

/** The entry of `list` whose name is `name`, trimmed, in any case. */
function byName<T extends { name: string }>(list: readonly T[], name: string): T | undefined {
  const wanted = name.trim().toLowerCase();
  return list.find((entry) => entry.name.toLowerCase() === wanted);
}

/** Providers of the imagery catalog (`/catalog/meta`, `imagerySearch`). */
export interface CatalogProvider {
  /** The name a processing's `imagerySearch.dataProvider` takes (lower case). */
  name: string;
  /**
   * The name search results carry with `--real-shapes`: the catalog spells it
   * in mixed case and Geoalert's plugin lower-cases it before it creates a
   * processing (mapflow-qgis mapflow/entity/provider/default.py lines 47-48).
   */
  catalogName: string;
  productType: 'Scene' | 'Mosaic';
  sensors: string[];
  resolution: [number, number];
  /** The zoom its products are processed at (the search answer's `zoom`). */
  zoom: number;
  /** With `--real-shapes`: its scenes carry no cloud cover or off-nadir angle (null), as archive imagery may. */
  sparseMetadata?: boolean;
}

export const CATALOG_PROVIDERS: readonly CatalogProvider[] = [
  { name: 'maxar', catalogName: 'Maxar', productType: 'Scene', sensors: ['WV02', 'WV03', 'GE01'], resolution: [0.3, 0.5], zoom: 18 },
  { name: 'orbview', catalogName: 'OrbView', productType: 'Scene', sensors: ['OrbView-3'], resolution: [1.0, 1.0], zoom: 17, sparseMetadata: true },
  { name: 'pleiades', catalogName: 'Pleiades', productType: 'Scene', sensors: ['PHR1A', 'PHR1B', 'PNEO3'], resolution: [0.3, 0.5], zoom: 18 },
  { name: 'maxar_vivid', catalogName: 'Maxar_Vivid', productType: 'Mosaic', sensors: ['Vivid'], resolution: [0.0, 0.5], zoom: 18 },
];

export function findCatalogProvider(name: string): CatalogProvider | undefined {
  return byName(CATALOG_PROVIDERS, name);
}

/** Account limits; areas in square metres (real-api-notes.md). */
export interface Limits {
  aoiAreaLimitSqM: number;
  areaLimitSqM: number;
  credits: number;
  /** null: no storage limit (`memoryLimit: null` on the live service). */
  storageLimitBytes: number | null;
  maxUploadFileSize: number;
  maxPixelCount: number;
}

export const DEFAULT_LIMITS: Limits = {
  aoiAreaLimitSqM: 1e9, // 1,000 km²
  areaLimitSqM: 1e11, // 100,000 km²
  credits: 100_000,
  storageLimitBytes: 10 * 1024 ** 3,
  maxUploadFileSize: 2 * 1024 ** 3,
  maxPixelCount: 30_000,
};
