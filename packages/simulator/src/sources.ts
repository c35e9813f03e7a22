/**
 * Imagery sources: v2 `params.sourceParams` and the v1 flat `params` map, read
 * into one ImagerySource, then checked against the model.
 *
 * Two kinds of problems, as the live service reports them:
 * - request errors (thrown SimHttpError): a missing or ambiguous source, a
 *   provider not available to the account (403), an unknown image;
 * - source-validator codes (returned Messages): the processing is created and
 *   then ends FAILED with them in `messages`, as the spec's error table says.
 */
import { badRequest, SimHttpError } from './http.ts';
import { DATA_PROVIDERS, findCatalogProvider, findDataProvider, LIVE_RESAMPLED_BELOW_M, type LiveImageRequirements, type Model } from './catalogue.ts';
import { bboxesIntersect, type BBox } from './geometry.ts';
import type { ImageRecord, ImagerySource, Message } from './store.ts';

// Defined beside the records that hold it (store.ts), so store does not import this file.
export type { ImagerySource } from './store.ts';

export interface ImageLookup {
  image(id: string): ImageRecord | undefined;
  imageByUrl(url: string): ImageRecord | undefined;
  imagesOfMosaic(mosaicId: string): ImageRecord[];
  mosaicExists(mosaicId: string): boolean;
}

export function message(code: string, parameters: Record<string, unknown> = {}): Message {
  const strings: Record<string, string> = { level: 'error' };
  for (const [key, value] of Object.entries(parameters)) strings[key] = typeof value === 'string' ? value : JSON.stringify(value);
  return { code, parameters: strings };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function providerNotAvailable(name: string, live: boolean): SimHttpError {
  // The server: AccessDenied(s"Access denied to Data Provider $dataProviderId") is 403 ACCESS_DENIED
  // (io.geoalert.mapflow.service.Validations.checkDataProviderAccess); the spec mode keeps its own code.
  if (live) return new SimHttpError(403, 'ACCESS_DENIED', `Access denied to Data Provider ${name}`);
  return new SimHttpError(403, 'PROVIDER_NOT_AVAILABLE', `Data provider '${name}' is not available to this account`, {
    providerName: name,
    available: DATA_PROVIDERS.map((p) => p.name),
  });
}

function stringList(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw badRequest(`${field} must be an array of strings`);
  return value as string[];
}

/** Reads v2 `params.sourceParams` (exactly one option). */
export function sourceFromV2(params: unknown, live = false): ImagerySource {
  if (!isObject(params) || !isObject(params.sourceParams)) throw badRequest('params.sourceParams is required');
  const options = Object.entries(params.sourceParams).filter(([, value]) => value !== undefined && value !== null);
  if (options.length !== 1) throw badRequest('params.sourceParams must have exactly one of dataProvider, myImagery, imagerySearch, userDefined');
  const [kind, value] = options[0]!;
  if (!isObject(value)) throw badRequest(`params.sourceParams.${kind} must be an object`);
  switch (kind) {
    case 'dataProvider': {
      if (typeof value.providerName !== 'string' || !value.providerName) throw badRequest('dataProvider.providerName is required');
      const provider = findDataProvider(value.providerName);
      if (!provider) throw providerNotAvailable(value.providerName, live);
      return { kind, providerName: provider.name, zoom: value.zoom };
    }
    case 'myImagery': {
      const imageIds = value.imageIds === undefined ? [] : stringList(value.imageIds, 'myImagery.imageIds');
      const mosaicId = typeof value.mosaicId === 'string' ? value.mosaicId : undefined;
      if (imageIds.length === 0 && !mosaicId) throw badRequest('myImagery needs imageIds or mosaicId');
      return { kind, imageIds, ...(mosaicId ? { mosaicId } : {}) };
    }
    case 'imagerySearch': {
      if (typeof value.dataProvider !== 'string') throw badRequest('imagerySearch.dataProvider is required');
      const provider = findCatalogProvider(value.dataProvider);
      if (!provider) throw providerNotAvailable(value.dataProvider, live);
      // The live service knows a catalog provider by its lower-case name only; the search answer spells it
      // in mixed case and Geoalert's plugin lower-cases it (mapflow-qgis mapflow/entity/provider/default.py
      // lines 47-48). The server's NotFound is 404 NOT_FOUND (io.geoalert.mapflow.exception).
      if (live && value.dataProvider !== provider.name) {
        throw new SimHttpError(404, 'NOT_FOUND', `DataProvider not found by name ${value.dataProvider}`);
      }
      const imageIds = stringList(value.imageIds, 'imagerySearch.imageIds');
      if (imageIds.length === 0) throw badRequest('imagerySearch.imageIds must not be empty');
      return { kind, dataProvider: provider.name, imageIds, zoom: value.zoom };
    }
    case 'userDefined': {
      if (typeof value.sourceType !== 'string') throw badRequest('userDefined.sourceType is required');
      return { kind, sourceType: value.sourceType.toUpperCase(), url: value.url, zoom: value.zoom, ...(typeof value.crs === 'string' ? { crs: value.crs } : {}) };
    }
    default:
      throw badRequest(`Unknown source option params.sourceParams.${kind}`);
  }
}

/**
 * Reads the v1 flat params map: `source_type` + `url` (+ `zoom`), or
 * `data_provider` (alias `name`) with an optional catalog product id in `url`.
 * Without params the first default data source is used.
 */
export function sourceFromV1(params: unknown, live = false): ImagerySource {
  if (params === undefined || params === null) return { kind: 'dataProvider', providerName: DATA_PROVIDERS[0]!.name, zoom: undefined };
  if (!isObject(params)) throw badRequest('params must be a map of string to string');
  const sourceType = typeof params.source_type === 'string' ? params.source_type.toLowerCase() : undefined;
  const providerName = typeof params.data_provider === 'string' ? params.data_provider : typeof params.name === 'string' ? params.name : undefined;
  if (sourceType) {
    return { kind: 'userDefined', sourceType: sourceType.toUpperCase(), url: params.url, zoom: params.zoom };
  }
  if (providerName) {
    const builtIn = findDataProvider(providerName);
    if (builtIn && params.url === undefined) return { kind: 'dataProvider', providerName: builtIn.name, zoom: params.zoom };
    const catalog = findCatalogProvider(providerName);
    if (catalog && typeof params.url === 'string') {
      return { kind: 'imagerySearch', dataProvider: catalog.name, imageIds: [params.url], zoom: params.zoom };
    }
    if (builtIn) return { kind: 'dataProvider', providerName: builtIn.name, zoom: params.zoom };
    throw providerNotAvailable(providerName, live);
  }
  if (params.url !== undefined) return { kind: 'userDefined', sourceType: 'XYZ', url: params.url, zoom: params.zoom };
  return { kind: 'dataProvider', providerName: DATA_PROVIDERS[0]!.name, zoom: params.zoom };
}

/** The images a source reads, or a 400 for ids the account does not have. */
export function imagesOfSource(source: ImagerySource, lookup: ImageLookup): ImageRecord[] | undefined {
  if (source.kind === 'myImagery') {
    if (source.mosaicId && !lookup.mosaicExists(source.mosaicId)) throw badRequest(`Mosaic ${source.mosaicId} not found`, { mosaicId: source.mosaicId });
    if (source.imageIds.length === 0) return lookup.imagesOfMosaic(source.mosaicId!);
    return source.imageIds.map((id) => {
      const image = lookup.image(id);
      if (!image) throw badRequest(`Image ${id} not found`, { imageId: id });
      return image;
    });
  }
  return undefined;
}

/** Zoom checks of the source validator; an empty zoom means the model's default. */
export function zoomMessages(zoom: unknown, model: Model): Message[] {
  if (zoom === undefined || zoom === null || zoom === '') return [];
  const number = typeof zoom === 'number' ? zoom : typeof zoom === 'string' && /^\s*-?\d+\s*$/.test(zoom) ? Number(zoom) : NaN;
  if (!Number.isInteger(number)) return [message('source-validator.ZoomMustBeInteger', { actual_zoom: String(zoom) })];
  if (number < 0 || number > 22) return [message('source-validator.InvalidZoomValue', { actual_zoom: String(number) })];
  if (number > model.sim.maxZoom) return [message('source-validator.TooHighZoom', { max_zoom: String(model.sim.maxZoom), actual_zoom: String(number) })];
  if (number < model.sim.minZoom) return [message('source-validator.TooLowZoom', { min_zoom: String(model.sim.minZoom), actual_zoom: String(number) })];
  return [];
}

/** Tile servers of maps (not imagery): refused as UrlBlacklisted. */
const BLACKLISTED_HOSTS = [/(^|\.)tile\.openstreetmap\.org$/i, /(^|\.)tile\.opentopomap\.org$/i, /(^|\.)basemaps\.cartocdn\.com$/i];

function tileUrlMessages(url: unknown, sourceType: string): Message[] {
  if (typeof url !== 'string') return [message('source-validator.UrlMustBeString', { url_type: url === null ? 'NoneType' : typeof url })];
  if (!/^https?:\/\//i.test(url)) return [message('source-validator.UrlMustBeLink')];
  let host: string;
  try {
    host = new URL(url.replace(/\{[^}]*\}/g, '0')).hostname;
  } catch (cause) {
    return [message('source-validator.UrlFormatInvalid', { parse_error_message: (cause as Error).message })];
  }
  if (BLACKLISTED_HOSTS.some((pattern) => pattern.test(host))) return [message('source-validator.UrlBlacklisted', { url })];
  const has = (placeholder: string) => url.includes(`{${placeholder}}`);
  if (sourceType === 'XYZ' && !(has('x') && has('y') && has('z'))) return [message('source-validator.XYZLinkFormatError')];
  if (sourceType === 'TMS' && !(has('x') && (has('y') || has('-y')) && has('z'))) return [message('source-validator.TMSLinkFormatError')];
  if (sourceType === 'QUADKEY' && !has('q')) return [message('source-validator.QuadkeyLinkFormatError')];
  return [];
}

/** Checks of an uploaded image against the model (resolution, bands, data type) and the AOI. */
export function imageMessages(image: ImageRecord, model: Model, aoiBbox: BBox, live = false): Message[] {
  const found: Message[] = live ? liveImageMessages(image, model.sim.live) : specImageMessages(image, model);
  if (found.length === 0 && !bboxesIntersect(image.footprintBbox, aoiBbox)) found.push(message('source-validator.NoDataInAOI'));
  return found;
}

/**
 * The live service (--real-shapes): RGB, RGBA or one band of any data type (preprocessed to uint8), at a
 * pixel size, once resampled to at least 0.1 m, within the model's range (catalogue.ts LiveImageRequirements).
 */
function liveImageMessages(image: ImageRecord, req: LiveImageRequirements): Message[] {
  if (!req.bandCounts.includes(image.meta_data.count)) {
    return [message('source-validator.NChannelsNotAllowed', { required_nchannels: req.bandCounts, real_nchannels: String(image.meta_data.count) })];
  }
  const size = Math.max(image.groundPixelSize, LIVE_RESAMPLED_BELOW_M);
  const resolution = String(Number(size.toFixed(3)));
  if (size > req.maxPixelSize) return [message('source-validator.PixelSizeTooHigh', { actual_res: resolution, max_res: String(req.maxPixelSize) })];
  if (size < req.minPixelSize) return [message('source-validator.PixelSizeTooLow', { actual_res: resolution, min_res: String(req.minPixelSize) })];
  return [];
}

/** The spec's default-model table (spec mode). */
function specImageMessages(image: ImageRecord, model: Model): Message[] {
  const found: Message[] = [];
  const dtype = image.meta_data.dtypes[0] ?? 'unknown';
  if (!model.sim.allowedDtypes.includes(dtype)) {
    found.push(message('source-validator.DtypeNotAllowed', { required_dtypes: model.sim.allowedDtypes, request_dtype: dtype }));
  }
  if (!model.sim.allowedBandCounts.includes(image.meta_data.count)) {
    found.push(message('source-validator.NChannelsNotAllowed', { required_nchannels: model.sim.allowedBandCounts, real_nchannels: String(image.meta_data.count) }));
  }
  const resolution = Number(image.groundPixelSize.toFixed(3));
  if (image.groundPixelSize > model.sim.maxPixelSize) {
    found.push(message('source-validator.PixelSizeTooHigh', { actual_res: String(resolution), max_res: String(model.sim.maxPixelSize) }));
  } else if (image.groundPixelSize < model.sim.minPixelSize) {
    found.push(message('source-validator.PixelSizeTooLow', { actual_res: String(resolution), min_res: String(model.sim.minPixelSize) }));
  }
  return found;
}

const SENTINEL_GRANULE = /^S2[ABC]_MSIL2A_\d{8}T\d{6}_N\d{4}_R\d{3}_T\d{2}[A-Z]{3}_\d{8}T\d{6}(\.SAFE)?$/;

/** Everything the source validator finds wrong with a source for a model (empty: fine). */
export function sourceMessages(source: ImagerySource, model: Model, aoiBbox: BBox, lookup: ImageLookup, images?: ImageRecord[], live = false): Message[] {
  switch (source.kind) {
    case 'dataProvider':
    case 'imagerySearch':
      return zoomMessages(source.zoom, model);
    case 'myImagery': {
      const selected = images ?? [];
      if (selected.length === 0) return [message('source-validator.NoDataInAOI')];
      const perImage = selected.map((image) => imageMessages(image, model, aoiBbox, live));
      // Data anywhere in the AOI is enough; other problems are reported once.
      const problems = perImage.flat().filter((m) => m.code !== 'source-validator.NoDataInAOI');
      if (problems.length > 0) return dedupe(problems);
      return perImage.every((list) => list.length > 0) ? [message('source-validator.NoDataInAOI')] : [];
    }
    case 'userDefined': {
      switch (source.sourceType) {
        case 'XYZ':
        case 'TMS':
        case 'QUADKEY':
        case 'WMS': {
          const urlProblems = tileUrlMessages(source.url, source.sourceType);
          return urlProblems.length > 0 ? urlProblems : zoomMessages(source.zoom, model);
        }
        case 'SENTINEL_L2A':
          if (typeof source.url !== 'string') return [message('source-validator.SentinelInputStringKeyError')];
          return SENTINEL_GRANULE.test(source.url) ? [] : [message('source-validator.SentinelInputStringFormatError', { input_string: source.url })];
        case 'LOCAL': {
          if (source.url === undefined || source.url === null) return [message('source-validator.LocalRequestKeyError')];
          if (typeof source.url !== 'string' || !source.url.startsWith('s3://')) return [message('source-validator.S3URLError', { actual_s3_link: String(source.url) })];
          const image = lookup.imageByUrl(source.url);
          if (!image) return [message('source-validator.ReadFromS3Failed', { s3_link: source.url })];
          return imageMessages(image, model, aoiBbox, live);
        }
        default:
          return [message('source-validator.SourceTypeIsNotAllowed', { source_type: source.sourceType, allowed_sources: ['XYZ', 'TMS', 'QUADKEY', 'SENTINEL_L2A', 'LOCAL'] })];
      }
    }
  }
}

function dedupe(messages: Message[]): Message[] {
  const seen = new Set<string>();
  return messages.filter((m) => {
    const key = JSON.stringify(m);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
