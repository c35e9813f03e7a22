/**
 * Processings v2 and v1: creation, cost, the lifecycle to OK with results
 * inside the AOI, failures (trigger and validation codes), restart, rename,
 * move, delete, AOIs and history.
 */
import { booleanPointInPolygon } from '@turf/boolean-point-in-polygon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/index.ts';
import { BERN, call, finished, start, v2Body, waitFor } from './helpers.ts';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await start({ processingSeconds: 0.6 });
});
afterAll(async () => {
  await sim.close();
});

const TWO_SQUARES = {
  type: 'MultiPolygon',
  coordinates: [
    BERN.coordinates,
    [[[7.46, 46.94], [7.465, 46.94], [7.465, 46.945], [7.46, 46.945], [7.46, 46.94]]],
  ],
};

async function create(body: Record<string, unknown>) {
  return call(sim, 'POST', '/processings/v2', body);
}

async function failureOf(body: Record<string, unknown>) {
  const created = await create(body);
  expect(created.status).toBe(200);
  const record = await finished(sim, created.json.id);
  expect(record.status).toBe('FAILED');
  return record.messages as Array<{ code: string; parameters: Record<string, string> }>;
}

describe('cost', () => {
  it('answers a bare number: km² (1 km² minimum) x price plus enabled blocks, rounded up', async () => {
    // Prepare
    const { json: status } = await call(sim, 'GET', '/user/status');
    const buildings = status.models.find((m: { name: string }) => m.name === '🏠 Buildings');
    // Act
    const small = await call(sim, 'POST', '/processing/cost/v2', { wdId: buildings.id, geometry: BERN });
    const big = await call(sim, 'POST', '/processing/cost/v2', { wdId: buildings.id, areaSqKm: 10.2 });
    const withBlock = await call(sim, 'POST', '/processing/cost/v2', { wdId: buildings.id, areaSqKm: 10, blocks: [{ name: 'Classification', enabled: true }] });
    const v1 = await call(sim, 'POST', '/processing/cost', { wdId: buildings.id, geometry: BERN, params: { data_provider: 'mapbox' } });
    // Assess
    expect(small.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(small.text).toBe(String(buildings.pricePerSqKm)); // 0.84 km² billed as 1 km²
    expect(big.text).toBe(String(Math.ceil(10.2 * buildings.pricePerSqKm)));
    const classification = buildings.blocks.find((b: { name: string }) => b.name === 'Classification');
    expect(withBlock.text).toBe(String(10 * (buildings.pricePerSqKm + classification.price)));
    expect(v1.text).toBe(small.text);
  });

  it('needs a model and an area', async () => {
    // Act
    const noArea = await call(sim, 'POST', '/processing/cost/v2', { wdName: 'Roads' });
    const noModel = await call(sim, 'POST', '/processing/cost/v2', { geometry: BERN });
    // Assess
    expect(noArea.status).toBe(400);
    expect(noModel.status).toBe(400);
  });
});

describe('lifecycle', () => {
  it('runs IN_PROGRESS from 0 % to OK and deducts the cost from the credits', async () => {
    // Prepare
    const before = (await call(sim, 'GET', '/user/status')).json.user.credits;
    // Act
    const created = await create(v2Body());
    const percents: number[] = [];
    const done = await waitFor(
      () => call(sim, 'GET', `/processings/${created.json.id}/v2`),
      (a) => {
        percents.push(a.json.percentCompleted);
        return a.json.status === 'OK';
      },
    );
    const after = (await call(sim, 'GET', '/user/status')).json.user.credits;
    // Assess
    expect(created.json).toEqual({ id: expect.any(String), name: 'test processing', status: 'IN_PROGRESS', percentCompleted: 0, cost: 5, created: expect.any(String) });
    expect(done.json).toMatchObject({ status: 'OK', percentCompleted: 100, area: expect.any(Number), cost: 5, vectorLayer: { id: expect.any(String), tileUrl: expect.stringContaining('{z}/{x}/{y}') } });
    expect(percents).toEqual([...percents].sort((a, b) => a - b));
    expect(after).toBe(before - 5);
  });

  it('streams a deterministic FeatureCollection whose features lie inside their AOI, per AOI on request', async () => {
    // Prepare
    const created = await create(v2Body({ geometry: TWO_SQUARES }));
    await finished(sim, created.json.id);
    const aois = (await call(sim, 'GET', `/processings/${created.json.id}/aois`)).json;
    // Act
    const all = await call(sim, 'GET', `/processings/${created.json.id}/result`);
    const again = await call(sim, 'GET', `/processings/${created.json.id}/result`);
    const second = await call(sim, 'GET', `/processings/${created.json.id}/result?aoiId=${aois[1].id}`);
    // Assess
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toBe('application/octet-stream');
    expect(all.text).toBe(again.text);
    expect(all.json.type).toBe('FeatureCollection');
    expect(all.json.features.length).toBeGreaterThan(10);
    for (const feature of all.json.features) {
      expect(feature.geometry.type).toBe('Polygon');
      expect(feature.properties).toMatchObject({ id: expect.any(Number), object_type: 'building', area: expect.any(Number) });
      expect(Number.isInteger(feature.properties.area)).toBe(true);
      for (const point of feature.geometry.coordinates[0]) expect(booleanPointInPolygon(point, TWO_SQUARES as never)).toBe(true);
    }
    expect(second.json.features.length).toBeGreaterThan(0);
    for (const feature of second.json.features) {
      for (const point of feature.geometry.coordinates[0]) expect(booleanPointInPolygon(point, aois[1].geometry)).toBe(true);
    }
    expect(aois).toHaveLength(2);
    expect(aois[0]).toMatchObject({ id: expect.any(String), status: 'OK', percentCompleted: 100, geometry: { type: 'Polygon' }, area: expect.any(Number), messages: [] });
  });

  it('gives roads as line strings and forest as polygons, with heights when the Heights block is on', async () => {
    // Prepare
    const roads = await create(v2Body({ wdName: 'Roads' }));
    const forest = await create(v2Body({ wdName: '🌲 Forest and trees', blocks: [{ name: 'Heights', enabled: true }] }));
    await finished(sim, roads.json.id);
    await finished(sim, forest.json.id);
    // Act
    const roadResult = (await call(sim, 'GET', `/processings/${roads.json.id}/result`)).json;
    const forestResult = (await call(sim, 'GET', `/processings/${forest.json.id}/result`)).json;
    // Assess
    expect(roadResult.features.every((f: any) => f.geometry.type === 'LineString' && f.properties.object_type === 'road')).toBe(true);
    for (const f of roadResult.features) for (const point of f.geometry.coordinates) expect(booleanPointInPolygon(point, BERN as never)).toBe(true);
    expect(forestResult.features.every((f: any) => f.geometry.type === 'Polygon' && typeof f.properties.height === 'number')).toBe(true);
  });

  it('refuses the result of a processing that is not OK with 409', async () => {
    // Prepare
    const slow = await start({ processingSeconds: 60 });
    try {
      const created = await call(slow, 'POST', '/processings/v2', v2Body());
      // Act
      const answer = await call(slow, 'GET', `/processings/${created.json.id}/result`);
      // Assess
      expect(answer.status).toBe(409);
      expect(answer.json.code).toBe('PROCESSING_NOT_COMPLETED');
    } finally {
      await slow.close();
    }
  });

  it('passes an imagerySearch source through AWAITING', async () => {
    // Prepare
    const slow = await start({ processingSeconds: 3 });
    try {
      const created = await call(slow, 'POST', '/processings/v2', v2Body({ params: { sourceParams: { imagerySearch: { dataProvider: 'maxar', imageIds: ['10300100ABCDEF00'] } } } }));
      // Act
      const statuses = new Set<string>();
      await waitFor(() => call(slow, 'GET', `/processings/${created.json.id}`), (a) => {
        statuses.add(a.json.status);
        return a.json.status === 'OK';
      });
      // Assess
      expect([...statuses]).toEqual(expect.arrayContaining(['AWAITING', 'IN_PROGRESS', 'OK']));
    } finally {
      await slow.close();
    }
  });
});

describe('the failure trigger (meta.simulate)', () => {
  it('ends FAILED with the asked code, and fails again after a restart', async () => {
    // Prepare
    const created = await create(v2Body({ meta: { simulate: 'fail:dataloader.TileNotReadable' } }));
    // Act
    const first = await finished(sim, created.json.id);
    const restart = await call(sim, 'POST', `/processings/${created.json.id}/restart`);
    const second = await finished(sim, created.json.id);
    const aois = await call(sim, 'GET', `/processings/${created.json.id}/aois`);
    // Assess
    expect(first.status).toBe('FAILED');
    expect(first.messages).toEqual([{ code: 'dataloader.TileNotReadable', parameters: { level: 'error' } }]);
    expect(restart.status).toBe(200);
    expect(second.status).toBe('FAILED');
    expect(aois.json[0].messages).toEqual(first.messages);
  });

  it('fail-once fails the first run and succeeds after POST /restart', async () => {
    // Prepare
    const created = await create(v2Body({ meta: { simulate: 'fail-once:inference.internalError' } }));
    const failed = await finished(sim, created.json.id);
    // Act
    const restart = await call(sim, 'POST', `/processings/${created.json.id}/restart`);
    const afterRestart = await call(sim, 'GET', `/processings/${created.json.id}`);
    const final = await finished(sim, created.json.id);
    // Assess
    expect(failed.status).toBe('FAILED');
    expect(failed.messages[0].code).toBe('inference.internalError');
    expect(restart.status).toBe(200);
    expect(afterRestart.json.status).toBe('IN_PROGRESS');
    expect(final.status).toBe('OK');
    expect(final.messages).toEqual([]);
  });

  it('only restarts a FAILED processing', async () => {
    // Prepare
    const created = await create(v2Body());
    await finished(sim, created.json.id);
    // Act
    const restart = await call(sim, 'POST', `/processings/${created.json.id}/restart`);
    // Assess
    expect(restart.status).toBe(400);
  });
});

describe('validation', () => {
  const dataProvider = (zoom: unknown) => ({ sourceParams: { dataProvider: { providerName: 'mapbox', zoom } } });
  const userDefined = (sourceType: string, url: unknown, zoom: unknown = 18) => ({ sourceParams: { userDefined: { sourceType, url, zoom, crs: 'EPSG:3857' } } });

  it.each([
    ['a self-intersecting polygon', { geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.45, 46.95], [7.45, 46.94], [7.44, 46.95], [7.44, 46.94]]] } }, 'geometry.Invalid', {}],
    ['a zoom outside 0-22', { params: dataProvider(25) }, 'source-validator.InvalidZoomValue', { actual_zoom: '25' }],
    ['a zoom that is not an integer', { params: dataProvider(17.5) }, 'source-validator.ZoomMustBeInteger', { actual_zoom: '17.5' }],
    ['a zoom above the model range', { params: dataProvider(20) }, 'source-validator.TooHighZoom', { max_zoom: '18', actual_zoom: '20' }],
    ['a zoom below the model range', { params: dataProvider(12) }, 'source-validator.TooLowZoom', { min_zoom: '17', actual_zoom: '12' }],
    ['an XYZ url without placeholders', { params: userDefined('XYZ', 'https://tiles.example.com/img.png') }, 'source-validator.XYZLinkFormatError', {}],
    ['a TMS url without placeholders', { params: userDefined('TMS', 'https://tiles.example.com/{z}/{x}.png') }, 'source-validator.TMSLinkFormatError', {}],
    ['a quadkey url without {q}', { params: userDefined('QUADKEY', 'https://tiles.example.com/{z}/{x}/{y}') }, 'source-validator.QuadkeyLinkFormatError', {}],
    ['a url that is not a link', { params: userDefined('XYZ', 'ftp://x/{z}/{x}/{y}') }, 'source-validator.UrlMustBeLink', {}],
    ['a url that is not a string', { params: userDefined('XYZ', 42) }, 'source-validator.UrlMustBeString', { url_type: 'number' }],
    ['a map instead of imagery', { params: userDefined('XYZ', 'https://tile.openstreetmap.org/{z}/{x}/{y}.png') }, 'source-validator.UrlBlacklisted', {}],
    ['an unknown source type', { params: userDefined('WMTS', 'https://x/{z}/{x}/{y}') }, 'source-validator.SourceTypeIsNotAllowed', { source_type: 'WMTS' }],
    ['a local source that is not s3', { params: userDefined('LOCAL', 'https://x/a.tif') }, 'source-validator.S3URLError', {}],
    ['a local source not in storage', { params: userDefined('LOCAL', 's3://nowhere/a.tif') }, 'source-validator.ReadFromS3Failed', { s3_link: 's3://nowhere/a.tif' }],
    ['a Sentinel id that is not a granule', { params: userDefined('SENTINEL_L2A', 'not-a-granule') }, 'source-validator.SentinelInputStringFormatError', {}],
  ])('ends FAILED for %s (%s)', async (_what, overrides, code, parameters) => {
    // Act
    const messages = await failureOf(v2Body(overrides));
    // Assess
    expect(messages[0]).toEqual({ code, parameters: expect.objectContaining({ level: 'error', ...parameters }) });
  });

  it('accepts a well-formed XYZ source and a wdName without its emoji', async () => {
    // Act
    const created = await create(v2Body({ wdName: 'construction sites', params: userDefined('XYZ', 'https://tiles.example.com/{z}/{x}/{y}.jpg', 17) }));
    const record = await finished(sim, created.json.id);
    // Assess
    expect(record.status).toBe('OK');
    expect(record.workflowDef.name).toBe('🏗️ Construction sites');
  });

  it('answers malformed geometry with 400 geometry.Invalid', async () => {
    // Act
    const unclosed = await create(v2Body({ geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95]]] } }));
    const point = await create(v2Body({ geometry: { type: 'Point', coordinates: [7.44, 46.94] } }));
    // Assess
    expect(unclosed.status).toBe(400);
    expect(unclosed.json.code).toBe('geometry.Invalid');
    expect(point.status).toBe(400);
  });

  it('answers 400 TOO_LARGE_PROCESSING with area and aoiAreaLimit over the AOI limit', async () => {
    // Prepare: a 0.5° square, about 2,000 km²
    const big = { type: 'Polygon', coordinates: [[[7, 46.5], [7.5, 46.5], [7.5, 47], [7, 47], [7, 46.5]]] };
    // Act
    const answer = await create(v2Body({ geometry: big }));
    // Assess
    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({ code: 'TOO_LARGE_PROCESSING', message: expect.any(String), params: { area: expect.any(Number), aoiAreaLimit: 1e9 } });
    expect(answer.json.params.area).toBeGreaterThan(1e9);
  });

  it('answers 403 for a provider the account does not have, 400 for an unknown model or block', async () => {
    // Act
    const provider = await create(v2Body({ params: { sourceParams: { dataProvider: { providerName: 'google', zoom: 18 } } } }));
    const model = await create(v2Body({ wdName: 'Cars' }));
    const block = await create(v2Body({ blocks: [{ name: 'Heights', enabled: true }] }));
    const mandatory = await create(v2Body({ blocks: [{ name: 'Segmentation', enabled: false }] }));
    // Assess
    expect(provider.status).toBe(403);
    expect(provider.json.code).toBe('PROVIDER_NOT_AVAILABLE');
    expect(model.status).toBe(400);
    expect(model.json.code).toBe('WORKFLOW_DEF_NOT_FOUND');
    expect(block.status).toBe(400);
    expect(mandatory.status).toBe(400);
  });

  it('refuses a processing the credits do not cover', async () => {
    // Prepare
    const poor = await start({ limits: { credits: 3 } });
    try {
      // Act
      const answer = await call(poor, 'POST', '/processings/v2', v2Body());
      // Assess
      expect(answer.status).toBe(400);
      expect(answer.json.code).toBe('NOT_ENOUGH_CREDITS');
    } finally {
      await poor.close();
    }
  });
});

describe('v1 and management endpoints', () => {
  it('creates with a flat params map, uses the default project, and lists v1 and v2', async () => {
    // Prepare
    const { json: defaultProject } = await call(sim, 'GET', '/projects/default');
    // Act
    const created = await call(sim, 'POST', '/processings', { wdName: '🚗 Roads', geometry: BERN, params: { data_provider: 'Mapbox', zoom: '18' }, meta: { 'source-app': 'test' } });
    const v1List = await call(sim, 'GET', '/processings');
    const v1Project = await call(sim, 'GET', `/projects/${defaultProject.id}/processings`);
    const v2List = await call(sim, 'GET', '/processings/v2');
    const v2Project = await call(sim, 'GET', `/projects/${defaultProject.id}/processings/v2`);
    const record = await finished(sim, created.json.id);
    // Assess
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ name: created.json.id, projectId: defaultProject.id, status: 'IN_PROGRESS', percentCompleted: 0, params: { data_provider: 'Mapbox', zoom: '18' }, meta: { 'source-app': 'test' } });
    for (const list of [v1List, v1Project, v2List, v2Project]) expect(list.json.map((p: { id: string }) => p.id)).toContain(created.json.id);
    expect(v2List.json.find((p: { id: string }) => p.id === created.json.id)).toEqual({ id: created.json.id, name: created.json.id, projectId: defaultProject.id, status: expect.any(String), percentCompleted: expect.any(Number) });
    expect(record).toMatchObject({ status: 'OK', reviewStatus: null, rating: null, aoiCount: 1, workflowDef: { name: '🚗 Roads' }, rasterLayer: { tileUrl: expect.stringContaining('{z}/{x}/{y}') } });
  });

  it('renames on both paths, moves to another project, and deletes', async () => {
    // Prepare
    const project = (await call(sim, 'POST', '/projects', { name: 'target' })).json;
    const created = await create(v2Body());
    const id = created.json.id;
    // Act
    const rename1 = await call(sim, 'PUT', `/processing/${id}`, { name: 'renamed', description: 'd1' });
    const rename2 = await call(sim, 'PUT', `/processings/${id}`, { name: 'renamed again', projectId: project.id });
    const moved = await call(sim, 'GET', `/processings/${id}`);
    const inTarget = await call(sim, 'GET', `/projects/${project.id}/processings/v2`);
    const badMove = await call(sim, 'PUT', `/processings/${id}`, { projectId: '00000000-0000-0000-0000-000000000000' });
    const deleted = await call(sim, 'DELETE', `/processings/${id}`);
    const gone = await call(sim, 'GET', `/processings/${id}/v2`);
    // Assess
    expect(rename1.status).toBe(200);
    expect(rename2.status).toBe(200);
    expect(moved.json).toMatchObject({ name: 'renamed again', description: 'd1', projectId: project.id });
    expect(inTarget.json.map((p: { id: string }) => p.id)).toEqual([id]);
    expect(badMove.status).toBe(404);
    expect(deleted.status).toBe(200);
    expect(gone.status).toBe(404);
  });

  it('deleting a project deletes its processings', async () => {
    // Prepare
    const project = (await call(sim, 'POST', '/projects', { name: 'doomed' })).json;
    const created = await create(v2Body({ projectId: project.id }));
    // Act
    await call(sim, 'DELETE', `/projects/${project.id}`);
    const gone = await call(sim, 'GET', `/processings/${created.json.id}`);
    // Assess
    expect(gone.status).toBe(404);
  });
});

describe('POST /processings/stats', () => {
  it('pages, sorts (both separators) and filters, as JSON and as CSV', async () => {
    // Prepare: one FAILED and several OK processings exist from this suite; add two more
    const a = await create(v2Body({ name: 'stats-a' }));
    const b = await create(v2Body({ name: 'stats-b' }));
    await finished(sim, a.json.id);
    await finished(sim, b.json.id);
    // Act
    const colon = await call(sim, 'POST', '/processings/stats', { page: 1, perPage: 2, sort: 'created:desc' });
    const comma = await call(sim, 'POST', '/processings/stats?type=JSON', { page: 1, perPage: 2, sort: 'created,desc' });
    const ok = await call(sim, 'POST', '/processings/stats', { page: 1, perPage: 100, filter: 'status=OK' });
    const all = await call(sim, 'POST', '/processings/stats', { page: 1, perPage: 1000 });
    const csv = await call(sim, 'POST', '/processings/stats?type=CSV', { page: 1, perPage: 3, sort: 'name:asc' });
    // Assess
    expect(colon.json).toMatchObject({ total: expect.any(Number), count: 2, totalCost: expect.any(Number), totalArea: expect.any(Number) });
    expect(colon.json.results.map((r: { name: string }) => r.name)).toEqual(['stats-b', 'stats-a']);
    expect(comma.json.results).toEqual(colon.json.results);
    expect(ok.json.results.length).toBeGreaterThan(0);
    expect(ok.json.results.every((r: { status: string }) => r.status === 'OK')).toBe(true);
    expect(ok.json.total).toBeLessThan(all.json.total);
    expect(all.json.totalCost).toBe(all.json.results.reduce((s: number, r: { cost: number }) => s + r.cost, 0));
    const lines = csv.text.trim().split('\n');
    expect(lines[0]).toBe('id,name,projectId,projectName,workflowDefName,status,percentCompleted,area,cost,created,updated');
    expect(lines).toHaveLength(4);
  });

  it('refuses a malformed sort or filter', async () => {
    // Act
    const sort = await call(sim, 'POST', '/processings/stats', { sort: 'nonsense:sideways' });
    const filter = await call(sim, 'POST', '/processings/stats', { filter: 'colour=blue' });
    // Assess
    expect(sort.status).toBe(400);
    expect(filter.status).toBe(400);
  });
});
