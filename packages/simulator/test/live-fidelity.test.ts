/**
 * How --real-shapes plays issue 25 (plain fetch, no bridge code): catalog
 * names and metadata, the server's error codes, searchAreaLimit, blocks by
 * API name, the source's price, route-not-found answers and the record's
 * shape. Each case names its source.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/index.ts';
import { parseSimArgs } from '../src/cli.ts';
import { BERN, call, start } from './helpers.ts';

const BUILDINGS = '1a8b3f4e-2c1d-4e5f-9a0b-000000000001';
const create = (params: unknown, extra: Record<string, unknown> = {}) => ({ name: 'p', wdId: BUILDINGS, geometry: BERN, params, ...extra });

describe('simulator --real-shapes, issue 25', () => {
  let sim: RunningSimulator;
  let suspended: RunningSimulator;
  beforeAll(async () => {
    sim = await start({ realShapes: true, queuedSeconds: 0, awaitingSeconds: 0, searchAreaLimitSqM: 500_000 });
    suspended = await start({ realShapes: true, suspended: true });
  });
  afterAll(async () => {
    await sim?.close();
    await suspended?.close();
  });

  it('catalog: mixed-case provider names, a zoom per product, null metadata that passes the filters (mapflow-qgis entity/provider/default.py lines 47-48, schema/catalog.py line 81, spec/002_D_search_api.md lines 31-35)', async () => {
    // Prepare: a 0.005° square, under the 0.5 km² searchAreaLimit
    const aoi = { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.445, 46.94], [7.445, 46.945], [7.44, 46.945], [7.44, 46.94]]] };
    // Act
    const answer = await call(sim, 'POST', '/catalog/meta', { aoi, maxCloudCover: 5, dataProviders: ['orbview'] });
    // Assess
    expect(answer.status).toBe(200);
    expect(answer.json.images.length).toBeGreaterThan(0);
    for (const image of answer.json.images) expect(image).toMatchObject({ providerName: 'OrbView', zoom: '17', cloudCover: null, offNadirAngle: null });
  });

  it('imagerySearch knows the provider by its lower-case name only: 404 NOT_FOUND otherwise', async () => {
    const mixed = await call(sim, 'POST', '/processings/v2', create({ sourceParams: { imagerySearch: { dataProvider: 'Maxar', imageIds: ['X'] } } }));
    const lower = await call(sim, 'POST', '/processings/v2', create({ sourceParams: { imagerySearch: { dataProvider: 'maxar', imageIds: ['X'], zoom: 18 } } }));
    expect(mixed.status).toBe(404);
    expect(mixed.json.code).toBe('NOT_FOUND');
    expect(lower.status).toBe(200);
  });

  it('answers the server\'s codes (io.geoalert.mapflow.exception, service.Validations): NOT_FOUND for a workflow definition, ACCESS_DENIED for a provider, FORBIDDEN when suspended', async () => {
    // Act
    const model = await call(sim, 'POST', '/processings/v2', { ...create({ sourceParams: { dataProvider: { providerName: 'Mapbox' } } }), wdId: 'no-such-model' });
    const provider = await call(sim, 'POST', '/processings/v2', create({ sourceParams: { dataProvider: { providerName: 'no-such-provider' } } }));
    const blocked = await call(suspended, 'POST', '/processings/v2', create({ sourceParams: { dataProvider: { providerName: 'Mapbox' } } }));
    // Assess
    expect(model).toMatchObject({ status: 404, json: { code: 'NOT_FOUND', message: expect.stringMatching(/^WorkflowDef not found by id/) } });
    expect(provider).toMatchObject({ status: 403, json: { code: 'ACCESS_DENIED', message: expect.stringMatching(/^Access denied to Data Provider/) } });
    expect(blocked).toMatchObject({ status: 403, json: { code: 'FORBIDDEN', message: expect.stringMatching(/suspended/) } });
  });

  it('reports searchAreaLimit and refuses a search above it (spec/002_F_plan_processing_api.md lines 328-341)', async () => {
    // Act: BERN is about 0.85 km²
    const status = await call(sim, 'GET', '/user/status');
    const search = await call(sim, 'POST', '/catalog/meta', { aoi: BERN });
    // Assess
    expect(status.json.searchAreaLimit).toBe(500_000);
    expect(search).toMatchObject({ status: 400, json: { code: 'BAD_REQUEST' } });
  });

  it('prices blocks by API name only, and the data provider with the source (mapflow-qgis schema/workflow_def.py lines 51-57, functional/api/processing_api.py lines 93-99)', async () => {
    // Prepare: a 1 km²-billed area; Classification costs 2 credits/km², Mapbox 1
    const base = { wdId: BUILDINGS, geometry: BERN };
    const mapbox = { sourceParams: { dataProvider: { providerName: 'Mapbox' } } };
    // Act
    const plain = Number((await call(sim, 'POST', '/processing/cost/v2', base)).text);
    const byApiName = Number((await call(sim, 'POST', '/processing/cost/v2', { ...base, blocks: [{ name: 'Classification', enabled: true }] })).text);
    const byDisplayName = Number((await call(sim, 'POST', '/processing/cost/v2', { ...base, blocks: [{ name: 'Building classification', enabled: true }] })).text);
    const withSource = Number((await call(sim, 'POST', '/processing/cost/v2', { ...base, params: mapbox })).text);
    // Assess
    expect(byApiName).toBe(plain + 2);
    expect(byDisplayName).toBe(plain);
    expect(withSource).toBe(plain + 1);
  });

  it('answers a path without a route as the web frameworks do, with no code; a missing object with NOT_FOUND (io.geoalert.mapflow.HttpServer: Route.seal)', async () => {
    const route = await call(sim, 'POST', '/projects/x/processings/v3/page', {});
    const data = await call(sim, 'GET', '/rasters/nothing/here');
    const object = await call(sim, 'GET', '/projects/00000000-0000-4000-8000-000000000000');
    expect(route).toMatchObject({ status: 404, text: 'The requested resource could not be found.' });
    expect(data).toMatchObject({ status: 404, json: { detail: 'Not Found' } });
    expect(object).toMatchObject({ status: 404, json: { code: 'NOT_FOUND' } });
  });

  it('answers a wrong credential with the server\'s AUTHENTICATION_ERROR and a method without a route as akka-http does', async () => {
    const wrong = await call(sim, 'GET', '/projects', undefined, 'Bearer nope');
    const method = await call(sim, 'DELETE', '/user/status');
    expect(wrong).toMatchObject({ status: 401, json: { code: 'AUTHENTICATION_ERROR' } });
    expect(method.status).toBe(405);
    expect(method.text).toMatch(/^HTTP method not allowed, supported methods: GET/);
  });

  it('gives a processing aoiArea beside area (mapflow-qgis mapflow/entity/processing.py line 58)', async () => {
    const created = await call(sim, 'POST', '/processings/v2', create({ sourceParams: { dataProvider: { providerName: 'Mapbox' } } }));
    const record = await call(sim, 'GET', `/processings/${created.json.id}`);
    expect(record.json.aoiArea).toBe(record.json.area);
    expect(record.json.resultRasterLayer).toBeNull();
  });

  it('takes --search-area-limit and --suspended on the command line', () => {
    expect(parseSimArgs(['--port', '0', '--token', 't', '--email', 'a@b.c', '--real-shapes', '--search-area-limit', '0', '--suspended'])).toMatchObject({ searchAreaLimitSqM: 0, suspended: true });
    expect(() => parseSimArgs(['--port', '0', '--token', 't', '--email', 'a@b.c', '--search-area-limit', 'lots'])).toThrow(/--search-area-limit must be/);
  });
});
