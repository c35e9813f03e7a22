/**
 * Issue 25 point 4: with --real-shapes the simulator sends only error codes
 * the sources show. Every error path below is exercised in both modes; the
 * codes --real-shapes answers must all be in SOURCED (each with its source),
 * and the same requests in the reference mode must reach the reference's own
 * codes, so a path that stopped being exercised would show here.
 *
 * Sources: the server's exceptions (package io.geoalert.mapflow.exception and
 * service.Validations, as stored by the code index: docs/integration-notes.md
 * point 16); mapflow-qgis mapflow/errors/api_errors.py and
 * mapflow/errors/data_errors.py (commit a5ff130).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator, SimulatorOptions } from '../src/index.ts';
import { BERN, RASTERS, call, fileForm, start, type Answer } from './helpers.ts';

const SOURCED: Record<string, string> = {
  NOT_FOUND: 'server NotFound (404)',
  ACCESS_DENIED: 'server AccessDenied (403, Validations.checkDataProviderAccess)',
  FORBIDDEN: 'server Forbidden (403, Validations.canRunProcessing)',
  TOO_LARGE_PROCESSING: 'server TooLargeProcessing (400); mapflow-qgis errors/api_errors.py lines 15-18',
  AREA_LIMIT_EXCEEDED: 'server AreaLimitExceeded (400)',
  CONFLICT: 'server Conflict (409)',
  BAD_REQUEST: 'server BadRequest (400)',
  AUTHENTICATION_ERROR: 'server AuthenticationError (401)',
  ProviderMinAreaError: 'mapflow-qgis errors/api_errors.py',
  ItemNotFound: 'mapflow-qgis errors/data_errors.py',
  AccessDenied: 'mapflow-qgis errors/data_errors.py',
  FileTooBig: 'mapflow-qgis errors/data_errors.py',
  MemoryLimitExceeded: 'mapflow-qgis errors/data_errors.py',
  FileValidationFailed: 'mapflow-qgis errors/data_errors.py',
  ImageOutOfBounds: 'mapflow-qgis errors/data_errors.py',
  FileOpenError: 'mapflow-qgis errors/data_errors.py',
  ImageExtentTooBig: 'mapflow-qgis errors/data_errors.py',
  FileCheckFailed: 'mapflow-qgis errors/data_errors.py',
};
/** Codes of the reference mode that no source shows the live service sending (issue 25 point 4). */
const INVENTED = ['NOT_ENOUGH_CREDITS', 'WORKFLOW_DEF_NOT_FOUND', 'PROVIDER_NOT_AVAILABLE', 'IMAGE_NOT_READY', 'PROCESSING_NOT_COMPLETED'];

const BUILDINGS = '1a8b3f4e-2c1d-4e5f-9a0b-000000000001';
const HUGE = { type: 'Polygon', coordinates: [[[5, 45], [7, 45], [7, 47], [5, 47], [5, 45]]] };
const BROKEN = { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.45, 46.94]]] };
/** Eleven separate squares: one over the server's default of 10 AOIs per processing. */
const ELEVEN = {
  type: 'MultiPolygon',
  coordinates: Array.from({ length: 11 }, (_, i) => [[[7.4 + i * 0.01, 46.9], [7.405 + i * 0.01, 46.9], [7.405 + i * 0.01, 46.905], [7.4 + i * 0.01, 46.905], [7.4 + i * 0.01, 46.9]]]),
};
const create = (params: unknown, extra: Record<string, unknown> = {}) => ({ name: 'p', wdId: BUILDINGS, geometry: BERN, params, ...extra });
const mapbox = { sourceParams: { dataProvider: { providerName: 'Mapbox' } } };

/** The error code of an answer, in either family's shape; undefined for a success or an answer without a code. */
function codeOf(answer: Answer): string | undefined {
  if (answer.status < 400) return undefined;
  const body = answer.json;
  if (typeof body?.code === 'string' && body.code) return body.code;
  if (typeof body?.detail?.code === 'string') return body.detail.code;
  return undefined;
}

/** Every error path a client can reach, in the order run; returns the codes answered. */
async function exercise(sim: RunningSimulator, realShapes: boolean): Promise<Map<string, string>> {
  const seen = new Map<string, string>();
  const note = (what: string, answer: Answer) => {
    expect(answer.status, what).toBeGreaterThanOrEqual(400);
    const code = codeOf(answer);
    if (code) seen.set(code, what);
  };
  const v2 = (id: string) => (realShapes ? `/processings/${id}/v2` : `/processings/${id}`);
  // processings and cost
  note('unknown model', await call(sim, 'POST', '/processings/v2', create(mapbox, { wdId: '00000000-0000-4000-8000-000000000000' })));
  note('provider not available', await call(sim, 'POST', '/processings/v2', create({ sourceParams: { dataProvider: { providerName: 'nope' } } })));
  note('too few credits', await call(sim, 'POST', '/processings/v2', create(mapbox, { geometry: { type: 'Polygon', coordinates: [[[7.3, 46.9], [7.5, 46.9], [7.5, 47], [7.3, 47], [7.3, 46.9]]] } })));
  note('broken geometry (create)', await call(sim, 'POST', '/processings/v2', create(mapbox, { geometry: BROKEN })));
  note('broken geometry (cost)', await call(sim, 'POST', '/processing/cost/v2', create(mapbox, { geometry: BROKEN })));
  note('area over aoiAreaLimit', await call(sim, 'POST', '/processings/v2', create(mapbox, { geometry: HUGE })));
  if (realShapes) note('too many AOIs', await call(sim, 'POST', '/processings/v2', create(mapbox, { geometry: ELEVEN })));
  note('no source', await call(sim, 'POST', '/processings/v2', create({})));
  const created = await call(sim, 'POST', '/processings/v2', create(mapbox));
  expect(created.status).toBe(200);
  note('result of a processing not OK', await call(sim, 'GET', `/processings/${created.json.id}/result`));
  note('restart of a processing not FAILED', await call(sim, 'POST', `/processings/${created.json.id}/restart`));
  note('missing processing', await call(sim, 'GET', v2('00000000-0000-4000-8000-00000000dead')));
  note('missing project', await call(sim, 'GET', '/projects/00000000-0000-4000-8000-00000000dead'));
  note('wrong token', await call(sim, 'GET', '/user/status', undefined, 'Bearer wrong'));
  // catalog
  note('broken search AOI', await call(sim, 'POST', '/catalog/meta', { aoi: BROKEN }));
  note('search AOI too large', await call(sim, 'POST', '/catalog/meta', { aoi: HUGE }));
  // data API
  note('missing image', await call(sim, 'GET', '/rasters/image/00000000-0000-4000-8000-00000000dead'));
  note('missing mosaic', await call(sim, 'GET', '/rasters/mosaic/00000000-0000-4000-8000-00000000dead'));
  note('mosaic without a name', await call(sim, 'POST', '/rasters/mosaic', {}));
  const mosaic = await call(sim, 'POST', '/rasters/mosaic', { name: 'codes' });
  note('upload not multipart', await call(sim, 'POST', `/rasters/mosaic/${mosaic.json.id}/image`, { file: 'x' }));
  const notTiff = new FormData();
  notTiff.append('file', new Blob([readFileSync(join(RASTERS, '..', 'aoi', 'bern-quarters.geojson'))]), 'aoi.tif');
  note('not a GeoTIFF', await call(sim, 'POST', `/rasters/mosaic/${mosaic.json.id}/image`, notTiff));
  note('link without url', await call(sim, 'POST', `/rasters/mosaic/${mosaic.json.id}/link-image`, {}));
  note('method without a route (data API)', await call(sim, 'PATCH', `/rasters/mosaic/${mosaic.json.id}`, {}));
  // An image still preprocessing (--real-shapes; the reference's images are ready at once) used by a processing
  const upload = await call(sim, 'POST', `/rasters/mosaic/${mosaic.json.id}/image`, await fileForm(join(RASTERS, 'cogeo.tif')));
  expect(upload.status).toBe(200);
  const processOwn = await call(sim, 'POST', '/processings/v2', create({ sourceParams: { myImagery: { mosaicId: mosaic.json.id } } }, { geometry: { type: 'Polygon', coordinates: [[[128.656, 37.667], [128.66, 37.667], [128.66, 37.67], [128.656, 37.67], [128.656, 37.667]]] } }));
  if (realShapes) note('image not ready', processOwn);
  return seen;
}

describe('error codes: --real-shapes sends only those the sources show (issue 25 point 4)', () => {
  const common: Partial<SimulatorOptions> = { limits: { credits: 10 }, preprocessingSeconds: 60, queuedSeconds: 0, awaitingSeconds: 0, searchAreaLimitSqM: 1e8 };
  let live: RunningSimulator;
  let reference: RunningSimulator;
  let suspended: RunningSimulator;
  let areaBilled: RunningSimulator;
  beforeAll(async () => {
    [live, reference, suspended, areaBilled] = await Promise.all([
      start({ ...common, realShapes: true }),
      start({ ...common }),
      start({ realShapes: true, suspended: true }),
      start({ realShapes: true, billingType: 'AREA', limits: { areaLimitSqM: 100_000 } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([live, reference, suspended, areaBilled].map((sim) => sim?.close()));
  });

  it('answers every error path with a code of the server or of the plugin, never one of the reference\'s own', async () => {
    // Act
    const seen = await exercise(live, true);
    note(seen, 'suspended account', await call(suspended, 'POST', '/processings/v2', create(mapbox)));
    note(seen, 'accumulated area limit', await call(areaBilled, 'POST', '/processings/v2', create(mapbox)));
    // Assess
    const unsourced = [...seen].filter(([code]) => !(code in SOURCED)).map(([code, what]) => `${code} (${what})`);
    expect(unsourced).toEqual([]);
    for (const code of INVENTED) expect(seen.has(code), code).toBe(false);
    // The paths of the five invented codes were reached, with the server's codes
    expect([...seen.keys()]).toEqual(expect.arrayContaining(['NOT_FOUND', 'ACCESS_DENIED', 'BAD_REQUEST', 'CONFLICT', 'FORBIDDEN', 'AREA_LIMIT_EXCEEDED', 'TOO_LARGE_PROCESSING', 'AUTHENTICATION_ERROR', 'ItemNotFound', 'FileOpenError']));
  });

  it('answers an unknown model on the v1 create with 400 BAD_REQUEST "Workflow Definition not found" (RunProcessingService, issue 36 point 8), on v2 with 404 NOT_FOUND', async () => {
    // Prepare
    const unknown = '00000000-0000-4000-8000-000000000000';
    // Act
    const v1 = await call(live, 'POST', '/processings', { wdId: unknown, geometry: BERN });
    const v2 = await call(live, 'POST', '/processings/v2', create(mapbox, { wdId: unknown }));
    // Assess
    expect(v1.status).toBe(400);
    expect(v1.json).toMatchObject({ code: 'BAD_REQUEST', message: 'Workflow Definition not found' });
    expect(v2.status).toBe(404);
    expect(v2.json).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('keeps the reference\'s codes in the reference mode, on the same requests (so the paths above are the ones that sent them)', async () => {
    // Act
    const seen = await exercise(reference, false);
    // Assess: the reference mode's own codes, named in docs/simulator.md (the reference has no IMAGE_NOT_READY path)
    expect([...seen.keys()]).toEqual(expect.arrayContaining(['WORKFLOW_DEF_NOT_FOUND', 'PROVIDER_NOT_AVAILABLE', 'NOT_ENOUGH_CREDITS', 'PROCESSING_NOT_COMPLETED', 'InvalidRequest', 'METHOD_NOT_ALLOWED', 'geometry.Invalid']));
  });
});

function note(seen: Map<string, string>, what: string, answer: Answer): void {
  expect(answer.status, what).toBeGreaterThanOrEqual(400);
  const code = codeOf(answer);
  if (code) seen.set(code, what);
}
