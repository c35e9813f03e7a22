/**
 * The client against the live service's answers, as Geoalert's own clients
 * show them (each test names its source). Every answer here is the live shape;
 * the reference shapes are covered by shapes.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  MapflowClient,
  MapflowUnavailable,
  padToken,
  resolveAuth,
  timeoutsFromEnv,
} from '../../../../functions/mapflow/index.ts';
import { BASE, EMAIL, JSON_HEADERS, ORIGIN, TOKEN, mockClientsClosedAfterEach, rejectionOf } from './helpers.ts';
import { Readable } from 'node:stream';

const mockClient = mockClientsClosedAfterEach();

const upload = (bytes: Buffer) => ({ stream: Readable.from([bytes]), size: bytes.length, filename: 'a.tif' });

describe('point 1: upload answers without an image (mapflow-qgis spec/002_E_zoom_selector_api.md)', () => {
  it('accepts {"message": "Files successfully uploaded", "mosaic_id"} and gives the mosaic id, no image', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/rasters/mosaic/m-1/image`, method: 'POST' })
      .reply(200, { message: 'Files successfully uploaded', mosaic_id: 'm-1' }, JSON_HEADERS);
    // Act
    const answer = await setup.client.uploadImage('m-1', upload(Buffer.from('II*\0')));
    // Assess
    expect(answer).toMatchObject({ mosaicId: 'm-1', message: 'Files successfully uploaded' });
    expect(answer.image).toBeUndefined();
    expect(answer.id).toBeUndefined();
  });

  it('reads link-image\'s {"message": "File successfully linked to a mosaic", "mosaic_id"}', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/rasters/mosaic/m-1/link-image`, method: 'POST' })
      .reply(200, { message: 'File successfully linked to a mosaic', mosaic_id: 'm-1' }, JSON_HEADERS);
    // Act
    const answer = await setup.client.linkImage('m-1', 's3://bucket/a.tif');
    // Assess
    expect(answer).toMatchObject({ mosaicId: 'm-1', message: 'File successfully linked to a mosaic' });
  });

  it('reads the image and mosaic preprocessing status (preprocessing_status, preprocessing_error, data_available)', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/rasters/image/i-1/status`, method: 'GET' }).reply(
      200,
      { image_id: 'i-1', filename: 'a.tif', preprocessing_status: 'FAILED', preprocessing_error: 'bad tiles', data_available: false, uploaded_at: '2026-03-22T12:34:56Z' },
      JSON_HEADERS,
    );
    setup.pool.intercept({ path: `${BASE}/rasters/mosaic/m-1/status`, method: 'GET' }).reply(
      200,
      {
        mosaic_id: 'm-1', total_images: 1, ready_images: 0, pending_images: 1, in_progress_images: 0, failed_images: 0,
        images: [{ image_id: 'i-2', filename: 'b.tif', preprocessing_status: 'PENDING', preprocessing_error: null, data_available: false, uploaded_at: '2026-03-22T12:35:00Z' }],
      },
      JSON_HEADERS,
    );
    // Act
    const image = await setup.client.getImageStatus('i-1');
    const mosaic = await setup.client.getMosaicStatus('m-1');
    // Assess
    expect(image).toMatchObject({ imageId: 'i-1', preprocessingStatus: 'FAILED', preprocessingError: 'bad tiles', dataAvailable: false });
    expect(mosaic).toEqual([expect.objectContaining({ imageId: 'i-2', preprocessingStatus: 'PENDING', dataAvailable: false, uploadedAt: '2026-03-22T12:35:00Z' })]);
  });
});

describe('point 2: billing (mapflow-qgis mapflow/mapflow.py set_processing_limit, mapflow-mcp src/schemas.ts)', () => {
  it('reads billingType, remainingCredits (as credits), remainingArea, maxAoisPerProcessing and dataProviders', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/user/status`, method: 'GET' }).reply(
      200,
      {
        email: EMAIL, billingType: 'CREDITS', remainingArea: 0, remainingCredits: 120, processedArea: 5, areaLimit: 0,
        maxAoisPerProcessing: 10, models: [],
        dataProviders: [{ id: '2b7c4d5e-0000-4000-8000-000000000001', name: 'Mapbox', displayName: 'Mapbox Satellite', price: [{ zoom: 18, priceSqKm: 1 }] }],
      },
      JSON_HEADERS,
    );
    // Act
    const status = await setup.client.getUserStatus();
    // Assess
    expect(status).toMatchObject({ billingType: 'CREDITS', credits: 120, remainingAreaSqM: 0, maxAoisPerProcessing: 10 });
    expect(status.dataProviders).toEqual([expect.objectContaining({ name: 'Mapbox', displayName: 'Mapbox Satellite' })]);
  });
});

describe('point 3: no storage limit (spec/002_E_zoom_selector_api.md: "memoryLimit and memoryFree may be null")', () => {
  it('reads memoryLimit: null as no limit, without failing', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/rasters/memory`, method: 'GET' })
      .reply(200, { memoryLimit: null, memoryUsed: 524288000, memoryFree: null, maxUploadFileSize: 10737418240, maxPixelCount: 100000 }, JSON_HEADERS);
    // Act
    const usage = await setup.client.getStorageUsage();
    // Assess
    expect(usage.usedBytes).toBe(524288000);
    expect(usage.limitBytes).toBeUndefined();
    expect(usage.freeBytes).toBeUndefined();
    expect(usage.maxUploadFileSize).toBe(10737418240);
  });
});

describe('point 4: per-call timeouts (mapflow-qgis: results 300 s, uploads 3600 s in data_catalog_api.py, status 5 s in processing_api.py)', () => {
  it('defaults to a long result and upload wait and a short status wait', () => {
    // Act
    const client = new MapflowClient({ baseUrl: `${ORIGIN}${BASE}`, token: TOKEN, authScheme: 'bearer' });
    // Assess
    expect(client.timeouts).toEqual({ requestMs: 30_000, statusMs: 20_000, resultMs: 300_000, uploadMs: 3_600_000 });
  });

  it('waits longer for a result\'s first byte than for a status read', async () => {
    // Prepare: both answers come after 300 ms
    const setup = mockClient({ timeouts: { requestMs: 100, statusMs: 100, resultMs: 2_000 }, retry: { maxAttempts: 1 } });
    setup.pool.intercept({ path: `${BASE}/processings/p-1/result`, method: 'GET' }).reply(200, '{"type":"FeatureCollection","features":[]}').delay(300);
    setup.pool.intercept({ path: `${BASE}/processings/p-1/v2`, method: 'GET' }).reply(200, { id: 'p-1', status: 'OK' }, JSON_HEADERS).delay(300);
    // Act
    const stream = await setup.client.downloadResults('p-1');
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const statusError = await rejectionOf(setup.client.getProcessing('p-1'));
    // Assess
    expect(Buffer.concat(chunks).toString()).toContain('FeatureCollection');
    expect(statusError).toBeInstanceOf(MapflowUnavailable);
    expect(statusError.message).toMatch(/timed out after 100 ms/);
  });

  it('reads the timeouts from MAPFLOW_*_TIMEOUT_SECONDS and refuses nonsense', () => {
    // Act
    const timeouts = timeoutsFromEnv({ MAPFLOW_RESULT_TIMEOUT_SECONDS: '600', MAPFLOW_STATUS_TIMEOUT_SECONDS: '5' });
    // Assess
    expect(timeouts).toEqual({ resultMs: 600_000, statusMs: 5_000 });
    expect(() => timeoutsFromEnv({ MAPFLOW_UPLOAD_TIMEOUT_SECONDS: '-1' })).toThrow(/MAPFLOW_UPLOAD_TIMEOUT_SECONDS/);
  });
});

describe('point 6: tokens (mapflow-qgis mapflow/mapflow.py line 4025 and login_basic, then "Basic {token}")', () => {
  const encoded = Buffer.from(`${EMAIL}:${TOKEN}x`).toString('base64'); // length not a multiple of 4 once unpadded
  const unpadded = encoded.replace(/=+$/, '');

  it('pads a pasted token to a multiple of 4', () => {
    // Assess
    expect(unpadded.length % 4).not.toBe(0);
    expect(padToken(unpadded)).toBe(encoded);
  });

  it('sends an unpadded web-app token as Basic with its padding (auto), never as Bearer', () => {
    // Act
    const auth = resolveAuth({ token: unpadded, authScheme: 'auto' });
    // Assess
    expect(auth).toMatchObject({ scheme: 'basic', header: `Basic ${encoded}` });
  });

  it('never encodes a pre-encoded token a second time when an email is given (basic)', () => {
    // Act
    const auth = resolveAuth({ token: unpadded, email: EMAIL, authScheme: 'basic' });
    // Assess
    expect(auth.header).toBe(`Basic ${encoded}`);
  });
});

describe('point 9: newer paths with fallback, and every page (mapflow-qgis processing_api.py, project_api.py)', () => {
  const processing = (i: number) => ({ id: `p-${i}`, name: `n-${i}`, status: 'OK' });

  it('reads every page of POST projects/{id}/processings/v2/page', async () => {
    // Prepare: 250 processings, 100 per page
    const setup = mockClient();
    const all = Array.from({ length: 250 }, (_, i) => processing(i));
    for (const offset of [0, 100, 200]) {
      setup.pool
        .intercept({ path: `${BASE}/projects/pr-1/processings/v2/page`, method: 'POST', body: JSON.stringify({ limit: 100, offset }) })
        .reply(200, { results: all.slice(offset, offset + 100), total: 250, count: Math.min(100, 250 - offset) }, JSON_HEADERS);
    }
    // Act
    const list = await setup.client.listProjectProcessings('pr-1');
    // Assess
    expect(list).toHaveLength(250);
    expect(list.at(-1)?.id).toBe('p-249');
  });

  it('falls back to GET projects/{id}/processings/v2 on a route-not-found 404, and to GET projects on 405', async () => {
    // Prepare: akka-http's answer for a path without a route (the server seals its routes: HttpServer.scala)
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/projects/pr-1/processings/v2/page`, method: 'POST' }).reply(404, 'The requested resource could not be found.');
    setup.pool.intercept({ path: `${BASE}/projects/pr-1/processings/v2`, method: 'GET' }).reply(200, [processing(1)], JSON_HEADERS);
    setup.pool.intercept({ path: `${BASE}/projects/page`, method: 'POST' }).reply(405, { code: 'METHOD_NOT_ALLOWED', message: 'no' });
    setup.pool.intercept({ path: `${BASE}/projects`, method: 'GET' }).reply(200, [{ id: 'pr-1', name: 'Default' }], JSON_HEADERS);
    // Act
    const processings = await setup.client.listProjectProcessings('pr-1');
    const projects = await setup.client.listProjects();
    // Assess
    expect(processings.map((p) => p.id)).toEqual(['p-1']);
    expect(projects.map((p) => p.id)).toEqual(['pr-1']);
  });

  it('restarts with POST processings/{id}/restart/v2, else POST processings/{id}/restart', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processings/p-1/restart/v2`, method: 'POST' }).reply(200, '');
    setup.pool.intercept({ path: `${BASE}/processings/p-2/restart/v2`, method: 'POST' }).reply(404, '');
    setup.pool.intercept({ path: `${BASE}/processings/p-2/restart`, method: 'POST' }).reply(200, '');
    // Act and Assess: both resolve (an unmatched call would fail with a mock error)
    await setup.client.restartProcessing('p-1');
    const fresh = mockClient();
    fresh.pool.intercept({ path: `${BASE}/processings/p-2/restart/v2`, method: 'POST' }).reply(404, '');
    fresh.pool.intercept({ path: `${BASE}/processings/p-2/restart`, method: 'POST' }).reply(200, '');
    await fresh.client.restartProcessing('p-2');
  });

  it('lists mosaics with GET /rasters/mosaic (data_catalog_api.py get_mosaics)', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/rasters/mosaic`, method: 'GET' }).reply(
      200,
      [{ id: 'm-1', name: 'route mosaic', tags: [], created_at: '2026-03-22T12:34:56Z', rasterLayer: { tileUrl: 'x', tileJsonUrl: 'y' }, footprint: 'MULTIPOLYGON EMPTY', sizeInBytes: 1 }],
      JSON_HEADERS,
    );
    // Act
    const mosaics = await setup.client.listMosaics();
    // Assess
    expect(mosaics).toEqual([expect.objectContaining({ id: 'm-1', name: 'route mosaic' })]);
  });
});

describe('point 10: first status null, naive timestamps (real-api-notes; processings of the live service)', () => {
  it('reads status null as UNPROCESSED and a time without zone as UTC', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/processings/p-1/v2`, method: 'GET' })
      .reply(200, { id: 'p-1', status: null, created: '2023-01-26T13:58:32.122099', updated: '2023-01-26T13:58:33' }, JSON_HEADERS);
    // Act
    const processing = await setup.client.getProcessing('p-1');
    // Assess
    expect(processing.status).toBe('UNPROCESSED');
    expect(processing.created).toBe('2023-01-26T13:58:32.122099Z');
    expect(Date.parse(processing.updated as string)).toBe(Date.UTC(2023, 0, 26, 13, 58, 33));
  });
});
