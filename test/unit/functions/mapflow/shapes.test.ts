import { afterEach, describe, expect, it } from 'vitest';
import { BASE, JSON_HEADERS, POLYGON, mockClient, type MockSetup } from './helpers.ts';

let setup: MockSetup | undefined;
afterEach(async () => {
  await setup?.agent.close();
  setup = undefined;
});

function replyOnce(method: string, path: string, body: unknown, headers = JSON_HEADERS) {
  setup!.pool.intercept({ path: `${BASE}${path}`, method }).reply(200, body as object, headers);
}

describe('catalog search', () => {
  it('accepts a bare array and the {images, total, limit, offset} envelope, Image as Scene', async () => {
    // Prepare
    setup = mockClient();
    const scene = { id: 'a', productType: 'Scene', providerName: 'maxar', cloudCover: 5, extraField: 'kept' };
    const image = { id: 'b', productType: 'Image', providerName: 'orbview', pixelResolution: '0.5' };
    const mosaic = { id: 'c', productType: 'Mosaic', previewType: 'xyz' };
    replyOnce('POST', '/catalog/meta', [scene, mosaic]);
    replyOnce('POST', '/catalog/meta', { images: [image], total: 41, limit: 1, offset: 0 });

    // Act
    const bare = await setup.client.searchCatalog({ aoi: POLYGON });
    const envelope = await setup.client.searchCatalog({ aoi: POLYGON, limit: 1 });

    // Assess
    expect(bare.images.map((p) => p.productType)).toEqual(['Scene', 'Mosaic']);
    expect(bare.images[0]?.extraField).toBe('kept');
    expect(bare.total).toBeUndefined();
    expect(envelope).toMatchObject({ total: 41, limit: 1, offset: 0 });
    expect(envelope.images[0]).toMatchObject({ id: 'b', productType: 'Scene', productTypeRaw: 'Image', pixelResolution: 0.5 });
  });
});

describe('storage usage', () => {
  it('normalises the spec shape', async () => {
    // Prepare
    setup = mockClient();
    replyOnce('GET', '/rasters/memory', { used_bytes: 250, limit_bytes: 1000, used_gb: 0, limit_gb: 0, usage_percent: 25 });

    // Act
    const usage = await setup.client.getStorageUsage();

    // Assess
    expect(usage).toMatchObject({ usedBytes: 250, limitBytes: 1000, freeBytes: 750, usagePercent: 25 });
    expect(usage.maxUploadFileSize).toBeUndefined();
  });

  it('normalises the {memoryLimit, memoryUsed, memoryFree, maxUploadFileSize, maxPixelCount} shape', async () => {
    // Prepare
    setup = mockClient();
    const raw = { memoryLimit: 5_000, memoryUsed: 1_000, memoryFree: 4_000, maxUploadFileSize: 2_147_483_648, maxPixelCount: 30_000 };
    replyOnce('GET', '/rasters/memory', raw);

    // Act
    const usage = await setup.client.getStorageUsage();

    // Assess
    expect(usage).toMatchObject({ usedBytes: 1_000, limitBytes: 5_000, freeBytes: 4_000, maxUploadFileSize: 2_147_483_648, maxPixelCount: 30_000, raw });
  });
});

describe('processings', () => {
  it.each([
    ['a string', 'ACCEPTED', 'ACCEPTED'],
    ['{reviewStatus, inReviewUntil}', { reviewStatus: 'IN_REVIEW', inReviewUntil: '2024-01-01' }, 'IN_REVIEW'],
    ['{status, feedback}', { status: 'NOT_ACCEPTED', feedback: 'blurry' }, 'NOT_ACCEPTED'],
    ['null', null, null],
    ['absent', undefined, null],
  ])('normalises reviewStatus given as %s', async (_label, reviewStatus, expected) => {
    // Prepare
    setup = mockClient();
    replyOnce('GET', '/processings/p/v2', { id: 'p', status: 'OK', reviewStatus });

    // Act
    const processing = await setup.client.getProcessing('p');

    // Assess
    expect(processing.reviewStatus.status).toBe(expected);
    expect(processing.reviewStatus.raw).toEqual(reviewStatus ?? null);
  });

  it('keeps the full record where the spec shows a short one, extra fields included', async () => {
    // Prepare
    setup = mockClient();
    const full = {
      id: 'p',
      name: 'n',
      status: 'FAILED',
      percentCompleted: 100,
      cost: 4,
      area: 1_200_000,
      messages: [{ code: 'dataloader.TileNotReadable', parameters: { level: 'error', tile: 3 } }],
      params: { sourceParams: { myImagery: { imageIds: ['i'] } } },
      blocks: [{ name: 'Simplification', enabled: true }],
      meta: { 'source-app': 'x' },
      rasterLayer: { id: 'r', tileUrl: 'https://t/{z}/{x}/{y}' },
      somethingNew: { nested: true },
    };
    replyOnce('POST', '/processings/v2', full);

    // Act
    const processing = await setup.client.createProcessing({
      name: 'n',
      wdName: 'Buildings',
      geometry: POLYGON,
      params: { sourceParams: { myImagery: { imageIds: ['i'] } } },
    });

    // Assess
    expect(processing).toMatchObject({ ...full, messages: [{ code: 'dataloader.TileNotReadable', parameters: { level: 'error', tile: '3' } }] });
    expect(processing.somethingNew).toEqual({ nested: true });
  });

  it('gives an empty messages array and the short v2 list items as they are', async () => {
    // Prepare
    setup = mockClient();
    replyOnce('GET', '/processings/v2', [{ id: 'a', name: 'a', status: 'IN_PROGRESS', percentCompleted: 10 }, { id: 'b', status: 'OK' }]);
    replyOnce('GET', '/projects/pr/processings', { results: [{ id: 'c', status: 'OK' }] });

    // Act
    const v2 = await setup.client.listProcessings();
    const v1 = await setup.client.listProjectProcessingsV1('pr');

    // Assess
    expect(v2.map((p) => p.id)).toEqual(['a', 'b']);
    expect(v2[0]).toMatchObject({ messages: [], reviewStatus: { status: null }, percentCompleted: 10 });
    expect(v2[1]?.projectId).toBeUndefined();
    expect(v1.map((p) => p.id)).toEqual(['c']);
  });

  it('reads AOIs with their messages', async () => {
    // Prepare
    setup = mockClient();
    replyOnce('GET', '/processings/p/aois', [{ id: 'a1', status: 'FAILED', geometry: POLYGON, area: 10, messages: [{ code: 'geometry.Invalid', parameters: { level: 'error' } }] }]);

    // Act
    const aois = await setup.client.getProcessingAois('p');

    // Assess
    expect(aois[0]).toMatchObject({ id: 'a1', status: 'FAILED', area: 10, messages: [{ code: 'geometry.Invalid' }] });
  });
});

describe('cost', () => {
  it.each([
    ['a bare number in a text body', '12', { 'content-type': 'text/plain' }, 12],
    ['a decimal with a newline', '12.5\n', { 'content-type': 'text/plain' }, 12.5],
    ['a JSON number', '3', { 'content-type': 'application/json' }, 3],
    ['a JSON string', '"4"', { 'content-type': 'application/json' }, 4],
  ])('reads %s', async (_label, body, headers, expected) => {
    // Prepare
    setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processing/cost`, method: 'POST' }).reply(200, body, { headers });

    // Act
    const cost = await setup.client.estimateCostV1({ wdId: 'w', geometry: POLYGON });

    // Assess
    expect(cost).toBe(expected);
  });
});

describe('account', () => {
  it('normalises user status shape A (areas in square metres)', async () => {
    // Prepare
    setup = mockClient();
    replyOnce('GET', '/user/status', {
      email: 'a@b.c',
      processedArea: 1_000_000,
      remainingArea: 9_000_000,
      areaLimit: 10_000_000,
      memoryLimit: 5_368_709_120,
      models: [
        { id: 'm1', name: '🌲 Forest', pricePerSqKm: 2.5, blocks: [{ name: 'Segmentation', optional: false, price: 0 }, { name: 'Heights', displayName: 'Heights', optional: true, price: 1.5 }] },
        { id: 'm2', name: '🚗 Roads', pricePerSqKm: '1' },
      ],
      teams: [{ teamId: 't', name: 'team', role: 'MEMBER', activeUntil: null, creditsLimit: null }],
    });

    // Act
    const status = await setup.client.getUserStatus();

    // Assess
    expect(status).toMatchObject({
      email: 'a@b.c',
      processedAreaSqM: 1_000_000,
      remainingAreaSqM: 9_000_000,
      areaLimitSqM: 10_000_000,
      memoryLimitBytes: 5_368_709_120,
      teams: [{ teamId: 't' }],
    });
    expect(status.models[0]?.blocks).toEqual([
      { name: 'Segmentation', optional: false, price: 0 },
      { name: 'Heights', displayName: 'Heights', optional: true, price: 1.5 },
    ]);
    expect(status.models[1]).toMatchObject({ pricePerSqKm: 1, blocks: [] });
  });

  it('normalises user status shape B', async () => {
    // Prepare
    setup = mockClient();
    replyOnce('GET', '/user/status', { user: { id: 'u', email: 'a@b.c', credits: 120 }, models: [{ id: 'm', name: 'B', pricePerSqKm: 1, blocks: [] }] });

    // Act
    const status = await setup.client.getUserStatus();

    // Assess
    expect(status).toMatchObject({ email: 'a@b.c', userId: 'u', credits: 120, teams: [] });
    expect(status.models).toHaveLength(1);
  });

  it('reads the stats envelope and CSV text', async () => {
    // Prepare
    setup = mockClient();
    let sentBody: unknown;
    setup.pool.intercept({ path: `${BASE}/processings/stats?type=JSON`, method: 'POST' }).reply(
      200,
      (opts) => {
        sentBody = JSON.parse(String(opts.body));
        return { results: [{ id: 'p', cost: 2 }], total: 1, count: 1, totalCost: 2, totalArea: 3 };
      },
      JSON_HEADERS,
    );
    setup.pool.intercept({ path: `${BASE}/processings/stats?type=CSV`, method: 'POST' }).reply(200, 'id,cost\np,2\n', { headers: { 'content-type': 'text/csv' } });

    // Act
    const stats = await setup.client.getProcessingStats({ page: 1, perPage: 10, sort: 'created:desc', filter: 'status=OK' });
    const csv = await setup.client.getProcessingStats({ page: 1 }, 'CSV');

    // Assess
    expect(sentBody).toEqual({ page: 1, perPage: 10, sort: 'created:desc', filter: 'status=OK' });
    expect(stats).toMatchObject({ results: [{ id: 'p', cost: 2 }], total: 1, count: 1, totalCost: 2, totalArea: 3 });
    expect(csv).toBe('id,cost\np,2\n');
  });
});

describe('data interface', () => {
  it('reads mosaics, images and link answers with camelCase aliases', async () => {
    // Prepare
    setup = mockClient();
    replyOnce('POST', '/rasters/mosaic', { id: 'm', name: 'n', tags: ['a'], created_at: '2024-01-01T00:00:00Z' });
    replyOnce('GET', '/rasters/mosaic/m', { id: 'm', name: 'n', tags: [], created_at: 'x', image_count: 2 });
    replyOnce('GET', '/rasters/mosaic/m/image', [{ id: 'i', filename: 'a.tif', image_url: 's3://b/a.tif', meta_data: { crs: 'EPSG:3857', count: 3 } }]);
    replyOnce('POST', '/rasters/mosaic/m/link-image', { message: 'ok', mosaic_id: 'm' });

    // Act
    const created = await setup.client.createMosaic({ name: 'n', tags: ['a'] });
    const mosaic = await setup.client.getMosaic('m');
    const images = await setup.client.listMosaicImages('m');
    const link = await setup.client.linkImage('m', 's3://b/a.tif');

    // Assess
    expect(created).toMatchObject({ id: 'm', tags: ['a'], createdAt: '2024-01-01T00:00:00Z' });
    expect(mosaic).toMatchObject({ image_count: 2, imageCount: 2 });
    expect(images[0]).toMatchObject({ imageUrl: 's3://b/a.tif', meta_data: { crs: 'EPSG:3857' } });
    expect(link).toMatchObject({ message: 'ok', mosaicId: 'm' });
  });

  it('sends the rename as a query and returns preview bytes', async () => {
    // Prepare
    setup = mockClient();
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
    setup.pool.intercept({ path: `${BASE}/rasters/image/i?name=new%20name`, method: 'PUT' }).reply(200, '');
    setup.pool.intercept({ path: `${BASE}/rasters/image/i/preview/s`, method: 'GET' }).reply(200, jpeg, { headers: { 'content-type': 'image/jpeg' } });

    // Act
    await setup.client.renameImage('i', 'new name');
    const preview = await setup.client.getImagePreview('i', 's');

    // Assess
    expect(preview.equals(jpeg)).toBe(true);
    expect(setup.agent.pendingInterceptors()).toHaveLength(0);
  });
});
