/**
 * The simulator's --real-shapes behaviours beyond what the contract test
 * drives through the client: image preprocessing that fails, the lifecycle
 * null -> UNPROCESSED -> AWAITING -> IN_PROGRESS, the result delay, the CLI
 * options that set them, and a malformed percent-escape answered 400 (issue 11).
 */
import { openAsBlob } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/index.ts';
import { parseSimArgs } from '../src/cli.ts';
import { processingState } from '../src/lifecycle.ts';
import type { ProcessingRecord } from '../src/store.ts';
import { call, RASTERS, start, v2Body, waitFor } from './helpers.ts';

describe('simulator in --real-shapes mode', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await start({ realShapes: true, preprocessingSeconds: 0.6, resultDelaySeconds: 0.5, billingType: 'AREA' });
  });
  afterAll(async () => {
    await sim?.close();
  });

  it('fails the preprocessing of a file named *preprocessing-fail* with a preprocessing_error (spec/002_E_zoom_selector_api.md)', async () => {
    // Prepare
    const mosaic = (await call(sim, 'POST', '/rasters/mosaic', { name: 'p' })).json;
    const form = new FormData();
    form.append('file', await openAsBlob(join(RASTERS, 'cogeo.tif')), 'x-preprocessing-fail.tif');
    // Act
    const answer = await call(sim, 'POST', `/rasters/mosaic/${mosaic.id}/image`, form);
    const first = await call(sim, 'GET', `/rasters/mosaic/${mosaic.id}/status`);
    const imageId = first.json.images[0].image_id as string;
    const final = await waitFor(() => call(sim, 'GET', `/rasters/image/${imageId}/status`), (a) => a.json.preprocessing_status === 'FAILED');
    const finalMosaic = await call(sim, 'GET', `/rasters/mosaic/${mosaic.id}/status`);
    // Assess
    expect(answer.json).toEqual({ message: 'Files successfully uploaded', mosaic_id: mosaic.id });
    expect(first.json).toMatchObject({ total_images: 1, ready_images: 0 });
    expect(['PENDING', 'IN_PROGRESS']).toContain(first.json.images[0].preprocessing_status);
    expect(final.json).toMatchObject({ image_id: imageId, data_available: false, preprocessing_error: expect.stringContaining('COG') });
    expect(finalMosaic.json).toMatchObject({ failed_images: 1, ready_images: 0 });
  });

  it('bills by area with remainingCredits 0 (the unused counter) when --billing-type AREA', async () => {
    // Act
    const status = await call(sim, 'GET', '/user/status');
    // Assess
    expect(status.json).toMatchObject({ billingType: 'AREA', remainingCredits: 0 });
    expect(status.json.remainingArea).toBeGreaterThan(0);
    expect(status.json).not.toHaveProperty('credits');
  });

  it('holds back the first byte of a result for --result-delay-seconds', async () => {
    // Prepare: a processing run to OK
    const created = (await call(sim, 'POST', '/processings/v2', v2Body())).json;
    await waitFor(() => call(sim, 'GET', `/processings/${created.id}/v2`), (a) => a.json.status === 'OK', 20_000);
    // Act
    const began = Date.now();
    const result = await call(sim, 'GET', `/processings/${created.id}/result`);
    const waited = Date.now() - began;
    // Assess: a lower bound only (the machine may be slow, never fast)
    expect(result.status).toBe(200);
    expect(waited).toBeGreaterThanOrEqual(450);
  });

  it('answers a malformed percent-escape in a path with 400, not 500 (issue 11)', async () => {
    // Act
    const api = await call(sim, 'GET', '/processings/%E0%A4%A/v2');
    const data = await call(sim, 'GET', '/rasters/image/%zz');
    // Assess
    expect(api.status).toBe(400);
    expect(api.json).toMatchObject({ code: 'BAD_REQUEST' });
    expect(data.status).toBe(400);
    expect(data.json.detail).toMatchObject({ code: 'BAD_REQUEST' });
  });
});

describe('live lifecycle (real-api-notes: status null or UNPROCESSED at first, AWAITING can last)', () => {
  it('goes null, UNPROCESSED, AWAITING, IN_PROGRESS, OK', () => {
    // Prepare
    const record = { runStartedAt: 0, durationMs: 1000, queuedMs: 500, awaitingMs: 10_000, validationMessages: [], source: { kind: 'dataProvider', providerName: 'Mapbox', zoom: 18 }, attempt: 1 } as unknown as ProcessingRecord;
    // Act
    const at = (ms: number) => processingState(record, ms).status;
    // Assess
    expect([at(50), at(300), at(600), at(9_000), at(10_700), at(11_600)]).toEqual([null, 'UNPROCESSED', 'AWAITING', 'AWAITING', 'IN_PROGRESS', 'OK']);
  });
});

describe('sim command line', () => {
  it('sets billing, storage, result delay, preprocessing, queue, awaiting and AOI-count options', () => {
    // Act
    const options = parseSimArgs([
      '--port', '0', '--token', 't', '--email', 'a@b.c', '--real-shapes', '--billing-type', 'credits', '--storage-limit', 'none',
      '--result-delay-seconds', '45', '--preprocessing-seconds', '3', '--queued-seconds', '1', '--awaiting-seconds', '3600', '--max-aois', '5',
    ]);
    // Assess
    expect(options).toMatchObject({
      realShapes: true, billingType: 'CREDITS', limits: { storageLimitBytes: null }, resultDelaySeconds: 45,
      preprocessingSeconds: 3, queuedSeconds: 1, awaitingSeconds: 3600, maxAoisPerProcessing: 5,
    });
  });

  it.each([
    [['--billing-type', 'FREE'], /--billing-type must be AREA, CREDITS or NONE/],
    [['--storage-limit', 'lots'], /--storage-limit must be/],
    [['--result-delay-seconds=-1'], /--result-delay-seconds must be/],
    [['--max-aois', '0'], /--max-aois must be/],
  ])('refuses %j', (extra, message) => {
    // Act and Assess
    expect(() => parseSimArgs(['--port', '0', '--token', 't', '--email', 'a@b.c', ...extra])).toThrow(message);
  });
});
