import { describe, expect, it } from 'vitest';
import {
  MapflowNotFound,
  MapflowOutcomeUnknown,
  MapflowRateLimited,
  MapflowRequestError,
  MapflowUnavailable,
} from '../../../../functions/mapflow/index.ts';
import { BASE, JSON_HEADERS, POLYGON, mockClientsClosedAfterEach, netError, rejectionOf } from './helpers.ts';

const PROCESSING = { id: 'p-1', name: 'job', status: 'IN_PROGRESS', percentCompleted: 0, cost: 3, created: '2024-01-01T00:00:00Z' };
const CREATE_BODY = {
  name: 'job',
  projectId: 'proj-1',
  wdName: '🏠 Buildings',
  geometry: POLYGON,
  params: { sourceParams: { dataProvider: { providerName: 'mapbox', zoom: 18 } } },
};

const mockClient = mockClientsClosedAfterEach();

describe('retries of idempotent requests', () => {
  it('retries a GET on 503 and returns the later answer', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processings/p-1/v2`, method: 'GET' }).reply(503, 'busy');
    setup.pool.intercept({ path: `${BASE}/processings/p-1/v2`, method: 'GET' }).reply(200, PROCESSING, JSON_HEADERS);

    // Act
    const processing = await setup.client.getProcessing('p-1');

    // Assess
    expect(processing.id).toBe('p-1');
    expect(setup.delays).toHaveLength(1);
    expect(setup.warnings[0]?.extra).toMatchObject({ method: 'GET', status: 503, attempt: 1 });
  });

  it('backs off exponentially with full jitter, capped, and gives up after maxAttempts', async () => {
    // Prepare: random 0.5 → half of each ceiling; ceilings 100, 200, 400, 800, 1000 (cap), ...
    const setup = mockClient({ retry: { maxAttempts: 6, baseDelayMs: 100, maxDelayMs: 1_000 } });
    setup.pool.intercept({ path: `${BASE}/user/status`, method: 'GET' }).reply(500, { code: 'BOOM', message: 'down' }).times(6);

    // Act
    const error = await rejectionOf(setup.client.getUserStatus());

    // Assess
    expect(error).toBeInstanceOf(MapflowUnavailable);
    expect(error.name).toBe('MapflowUnavailable');
    expect(error.status).toBe(500);
    expect(error.code).toBe('BOOM');
    expect(error.attempts).toBe(6);
    expect(setup.delays).toEqual([50, 100, 200, 400, 500]);
  });

  it('keeps each delay in [0, ceiling] whatever the jitter', async () => {
    // Prepare
    for (const r of [0, 0.999999]) {
      const local = mockClient({ random: () => r, retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 150 } });
      local.pool.intercept({ path: `${BASE}/processings/v2`, method: 'GET' }).reply(502, '').times(3);

      // Act
      await rejectionOf(local.client.listProcessings());

      // Assess
      expect(local.delays).toEqual(r === 0 ? [0, 0] : [99, 149]);
    }
  });

  it('honours Retry-After in seconds', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/rasters/memory`, method: 'GET' })
      .reply(429, { code: 'RATE' }, { headers: { 'retry-after': '2' } });
    setup.pool.intercept({ path: `${BASE}/rasters/memory`, method: 'GET' }).reply(200, { used_bytes: 1, limit_bytes: 10 }, JSON_HEADERS);

    // Act
    const usage = await setup.client.getStorageUsage();

    // Assess
    expect(usage.usedBytes).toBe(1);
    expect(setup.delays).toEqual([2_000]);
  });

  it('honours Retry-After as an HTTP date', async () => {
    // Prepare
    const now = Date.parse('2024-05-01T12:00:00Z');
    const setup = mockClient({ now: () => now });
    setup.pool
      .intercept({ path: `${BASE}/processings/v2`, method: 'GET' })
      .reply(503, 'later', { headers: { 'retry-after': new Date(now + 3_000).toUTCString() } });
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'GET' }).reply(200, [], JSON_HEADERS);

    // Act
    await setup.client.listProcessings();

    // Assess
    expect(setup.delays).toEqual([3_000]);
  });

  it('gives a Retry-After longer than maxRetryAfterMs back to the caller at once', async () => {
    // Prepare
    const setup = mockClient({ retry: { maxAttempts: 4, maxRetryAfterMs: 5_000 } });
    setup.pool
      .intercept({ path: `${BASE}/processings/v2`, method: 'GET' })
      .reply(429, { code: 'RATE', message: 'slow down' }, { headers: { 'retry-after': '120' } });

    // Act
    const error = await rejectionOf(setup.client.listProcessings());

    // Assess
    expect(error).toBeInstanceOf(MapflowRateLimited);
    expect(error.retryAfterMs).toBe(120_000);
    expect(setup.delays).toEqual([]);
  });

  it('ends with MapflowRateLimited when 429 persists', async () => {
    // Prepare
    const setup = mockClient({ retry: { maxAttempts: 3, baseDelayMs: 10 } });
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'GET' }).reply(429, '').times(3);

    // Act
    const error = await rejectionOf(setup.client.listProcessings());

    // Assess
    expect(error.name).toBe('MapflowRateLimited');
    expect(error.status).toBe(429);
    expect(error.attempts).toBe(3);
  });

  it('retries network errors on a GET', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/projects/default`, method: 'GET' }).replyWithError(netError('ECONNRESET', 'socket hang up'));
    setup.pool.intercept({ path: `${BASE}/projects/default`, method: 'GET' }).reply(200, { id: 'd', isDefault: true }, JSON_HEADERS);

    // Act
    const project = await setup.client.getDefaultProject();

    // Assess
    expect(project).toMatchObject({ id: 'd', isDefault: true });
    expect(setup.delays).toHaveLength(1);
  });

  it('times a slow request out and retries it, ending with MapflowUnavailable', async () => {
    // Prepare
    const setup = mockClient({ timeoutMs: 40, retry: { maxAttempts: 2, baseDelayMs: 1 } });
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'GET' }).reply(200, []).delay(500).times(2);

    // Act
    const error = await rejectionOf(setup.client.listProcessings());

    // Assess: the 200 would have come after 500 ms; that the call failed at
    // all, with our timer's abort as its cause, shows it did not wait for it.
    expect(error).toBeInstanceOf(MapflowUnavailable);
    expect(error.message).toMatch(/timed out after 40 ms/);
    expect(error.attempts).toBe(2);
    expect(error.cause).toMatchObject({ code: 'MAPFLOW_TIMEOUT' });
    expect(setup.delays).toHaveLength(1);
  });

  it('retries idempotent POSTs (cost, catalog, stats) on 5xx', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processing/cost/v2`, method: 'POST' }).reply(500, 'oops');
    setup.pool.intercept({ path: `${BASE}/processing/cost/v2`, method: 'POST' }).reply(200, '7');
    setup.pool.intercept({ path: `${BASE}/catalog/meta`, method: 'POST' }).reply(504, '');
    setup.pool.intercept({ path: `${BASE}/catalog/meta`, method: 'POST' }).reply(200, [], JSON_HEADERS);
    setup.pool.intercept({ path: `${BASE}/processings/stats?type=JSON`, method: 'POST' }).reply(502, '');
    setup.pool.intercept({ path: `${BASE}/processings/stats?type=JSON`, method: 'POST' }).reply(200, { results: [] }, JSON_HEADERS);

    // Act
    const cost = await setup.client.estimateCost({ wdId: 'wd', areaSqKm: 2 });
    const catalog = await setup.client.searchCatalog({ aoi: POLYGON });
    const stats = await setup.client.getProcessingStats({ page: 1 });

    // Assess
    expect(cost).toBe(7);
    expect(catalog.images).toEqual([]);
    expect(stats).toMatchObject({ results: [] });
    expect(setup.delays).toHaveLength(3);
  });

  it('does not retry a 4xx', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processings/nope/v2`, method: 'GET' }).reply(404, { code: 'NOT_FOUND', message: 'no such processing' });

    // Act
    const error = await rejectionOf(setup.client.getProcessing('nope'));

    // Assess
    expect(error).toBeInstanceOf(MapflowNotFound);
    expect(setup.delays).toEqual([]);
  });

  it('counts a 404 on a retried DELETE as done (the lost first attempt deleted it)', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processings/p-1`, method: 'DELETE' }).replyWithError(netError('ECONNRESET'));
    setup.pool.intercept({ path: `${BASE}/processings/p-1`, method: 'DELETE' }).reply(404, { code: 'NOT_FOUND' });

    // Act
    const result = await setup.client.deleteProcessing('p-1');

    // Assess
    expect(result).toBeUndefined();
    expect(setup.delays).toHaveLength(1);
  });

  it('reports a 404 on the first DELETE attempt', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/rasters/image/i-1`, method: 'DELETE' }).reply(404, { detail: { code: 'ItemNotFound', parameters: {} } });

    // Act
    const error = await rejectionOf(setup.client.deleteImage('i-1'));

    // Assess
    expect(error).toBeInstanceOf(MapflowNotFound);
    expect(error.code).toBe('ItemNotFound');
  });

  it('retries a download before its stream is handed over', async () => {
    // Prepare
    const setup = mockClient();
    const geojson = JSON.stringify({ type: 'FeatureCollection', features: [] });
    setup.pool.intercept({ path: `${BASE}/processings/p-1/result?aoiId=a-1`, method: 'GET' }).reply(502, '');
    setup.pool.intercept({ path: `${BASE}/processings/p-1/result?aoiId=a-1`, method: 'GET' }).reply(200, geojson);

    // Act
    const stream = await setup.client.downloadResults('p-1', { aoiId: 'a-1' });
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);

    // Assess
    expect(Buffer.concat(chunks).toString()).toBe(geojson);
    expect(setup.delays).toHaveLength(1);
  });
});

describe('creates are never retried blindly', () => {
  it('throws MapflowOutcomeUnknown when a create times out, without sending it again', async () => {
    // Prepare
    const setup = mockClient({ timeoutMs: 40 });
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'POST' }).reply(200, PROCESSING).delay(500);
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'POST' }).reply(200, PROCESSING);

    // Act
    const error = await rejectionOf(setup.client.createProcessing(CREATE_BODY));

    // Assess
    expect(error).toBeInstanceOf(MapflowOutcomeUnknown);
    expect(error.name).toBe('MapflowOutcomeUnknown');
    expect(error.message).toMatch(/may have reached the server/);
    expect(setup.agent.pendingInterceptors()).toHaveLength(1); // the second was never used
    expect(setup.delays).toEqual([]);
  });

  it('throws MapflowOutcomeUnknown when the connection is reset after sending', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/projects`, method: 'POST' }).replyWithError(netError('ECONNRESET', 'socket hang up'));
    setup.pool.intercept({ path: `${BASE}/projects`, method: 'POST' }).reply(200, { id: 'x' });

    // Act
    const error = await rejectionOf(setup.client.createProject({ name: 'p' }));

    // Assess
    expect(error.name).toBe('MapflowOutcomeUnknown');
    expect(error.cause).toBeInstanceOf(Error);
    expect(setup.agent.pendingInterceptors()).toHaveLength(1);
  });

  it.each([500, 502, 504])('throws MapflowOutcomeUnknown on a %i answer to a create', async (status) => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/rasters/mosaic`, method: 'POST' }).reply(status, 'gateway');

    // Act
    const error = await rejectionOf(setup.client.createMosaic({ name: 'm' }));

    // Assess
    expect(error.name).toBe('MapflowOutcomeUnknown');
    expect(error.status).toBe(status);
    expect(setup.delays).toEqual([]);
  });

  it('retries a create whose connection was refused (it never reached the server)', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'POST' }).replyWithError(netError('ECONNREFUSED'));
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'POST' }).reply(200, PROCESSING, JSON_HEADERS);

    // Act
    const processing = await setup.client.createProcessing(CREATE_BODY);

    // Assess
    expect(processing.id).toBe('p-1');
    expect(setup.delays).toHaveLength(1);
  });

  it.each([429, 503])('retries a create the server turned away with %i, honouring Retry-After', async (status) => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/processings`, method: 'POST' })
      .reply(status, { code: 'BUSY' }, { headers: { 'retry-after': '1' } });
    setup.pool.intercept({ path: `${BASE}/processings`, method: 'POST' }).reply(200, PROCESSING, JSON_HEADERS);

    // Act
    const processing = await setup.client.createProcessingV1({ wdName: 'Buildings', geometry: POLYGON });

    // Assess
    expect(processing.status).toBe('IN_PROGRESS');
    expect(setup.delays).toEqual([1_000]);
  });

  it('ends a create refused every time with MapflowUnavailable (safe: nothing was created)', async () => {
    // Prepare
    const setup = mockClient({ retry: { maxAttempts: 2, baseDelayMs: 1 } });
    setup.pool.intercept({ path: `${BASE}/rasters/mosaic/m-1/link-image`, method: 'POST' }).replyWithError(netError('ECONNREFUSED')).times(2);

    // Act
    const error = await rejectionOf(setup.client.linkImage('m-1', 's3://bucket/a.tif'));

    // Assess
    expect(error.name).toBe('MapflowUnavailable');
    expect(error.attempts).toBe(2);
  });

  it('does not retry a create answered 400', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/processings/v2`, method: 'POST' })
      .reply(400, { code: 'TOO_LARGE_PROCESSING', message: 'too large', params: { area: '5', aoiAreaLimit: '1' } });

    // Act
    const error = await rejectionOf(setup.client.createProcessing(CREATE_BODY));

    // Assess
    expect(error).toBeInstanceOf(MapflowRequestError);
    expect(error.code).toBe('TOO_LARGE_PROCESSING');
    expect(error.params).toEqual({ area: '5', aoiAreaLimit: '1' });
    expect(setup.delays).toEqual([]);
  });

  it('retries an upload refused before its stream was read, and not after', async () => {
    // Prepare
    const { Readable } = await import('node:stream');
    const setup = mockClient();
    const bytes = Buffer.from('II*\0fake tiff');
    setup.pool.intercept({ path: `${BASE}/rasters/mosaic/m-1/image`, method: 'POST' }).replyWithError(netError('ECONNREFUSED'));
    setup.pool
      .intercept({ path: `${BASE}/rasters/mosaic/m-1/image`, method: 'POST' })
      .reply(200, { id: 'img-1', mosaic_id: 'm-1', filename: 'a.tif', file_size: bytes.length }, JSON_HEADERS);

    // Act
    const image = await setup.client.uploadImage('m-1', { stream: Readable.from([bytes]), size: bytes.length, filename: 'a.tif' });

    // Assess
    expect(image).toMatchObject({ id: 'img-1', mosaicId: 'm-1', image: { fileSize: bytes.length } });
    expect(setup.delays).toHaveLength(1);
  });
});
