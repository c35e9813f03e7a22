/**
 * Issue 36 point 1: the simulator's --real-shapes mode judges uploaded images
 * as Geoalert's reference says the live service does (mapflow-docs-en
 * source/userguides/reference.rst): RGB, RGBA or one band, of any data type
 * (preprocessed to uint8), resampled to 0.1 m when finer, then each model's
 * required pixel-size range; a processing outside it ends FAILED.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tiff } from '../../bench/fixtures/tiff.ts';
import type { RunningSimulator } from '../src/index.ts';
import { call, fileForm, finished, start, v2Body, waitFor } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'sim-drone-'));

/** A 64 x 64 px GeoTIFF in UTM 32N (near Bern) at `pixel` m, `bands` bands of `bits` bits. */
function droneImage(name: string, bands: number, pixel: number, bits = 8): string {
  const size = 64;
  const path = join(dir, name);
  writeFileSync(path, tiff({ width: size, height: size, bands, bits, blocks: [new Uint8Array(size * size * bands * (bits / 8)).fill(90)], geo: { epsg: 32632, origin: [380000, 5200000], pixel } }));
  return path;
}

/** The lon/lat box of an image record's WKT footprint, as a polygon. */
function boxOf(wkt: string) {
  const numbers = [...wkt.matchAll(/-?\d+(?:\.\d+)?/g)].map((m) => Number(m[0]));
  const lons = numbers.filter((_, i) => i % 2 === 0);
  const lats = numbers.filter((_, i) => i % 2 === 1);
  const [w, e, s, n] = [Math.min(...lons), Math.max(...lons), Math.min(...lats), Math.max(...lats)];
  return { type: 'Polygon', coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] };
}

describe('simulator --real-shapes: drone orthophotos as the live service takes them', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await start({ realShapes: true, preprocessingSeconds: 0.2, queuedSeconds: 0, awaitingSeconds: 0, processingSeconds: 0.5 });
  });
  afterAll(async () => {
    await sim?.close();
  });

  /** Uploads the image into a new mosaic, waits for its preprocessing, and runs `model` on it. */
  async function process(path: string, model: string) {
    const mosaic = (await call(sim, 'POST', '/rasters/mosaic', { name: path })).json;
    const upload = await call(sim, 'POST', `/rasters/mosaic/${mosaic.id}/image`, await fileForm(path));
    expect(upload.status).toBe(200);
    const imageId = (await call(sim, 'GET', `/rasters/mosaic/${mosaic.id}/status`)).json.images[0].image_id as string;
    await waitFor(() => call(sim, 'GET', `/rasters/image/${imageId}/status`), (a) => a.json.preprocessing_status === 'COMPLETED');
    const image = (await call(sim, 'GET', `/rasters/image/${imageId}`)).json;
    const created = await call(sim, 'POST', '/processings/v2', v2Body({ wdName: model, geometry: boxOf(image.footprint), params: { sourceParams: { myImagery: { imageIds: [imageId], mosaicId: mosaic.id } } } }));
    expect(created.status).toBe(200);
    return finished(sim, created.json.id);
  }

  it.each([
    ['a 4-band RGBA uint8 image at 0.5 m', '🏠 Buildings', 'rgba-05.tif', 4, 0.5, 8],
    ['a single-band uint8 image at 0.5 m', '🌲 Forest and trees', 'single-05.tif', 1, 0.5, 8],
    ['an RGB uint16 image at 0.5 m (preprocessed to uint8)', '🏠 Buildings', 'rgb16-05.tif', 3, 0.5, 16],
    ['an RGB image at 0.05 m (resampled to 0.1 m)', '🚗 Roads', 'rgb-005.tif', 3, 0.05, 8],
    ['an RGB image at 1.8 m', '🏗️ Construction sites', 'rgb-18.tif', 3, 1.8, 8],
  ])('processes %s on %s', async (_label, model, name, bands, pixel, bits) => {
    // Prepare
    const path = droneImage(name, bands, pixel, bits);

    // Act
    const processing = await process(path, model);

    // Assess
    expect(processing.messages).toEqual([]);
    expect(processing.status).toBe('OK');
  });

  it.each([
    ['a single-band image at 0.05 m', '🌲 Forest and trees', 'single-005.tif', 1, 0.05, { code: 'source-validator.PixelSizeTooLow', parameters: { level: 'error', actual_res: '0.1', min_res: '0.15' } }],
    ['an RGBA image at 0.05 m', '🏠 Buildings', 'rgba-005.tif', 4, 0.05, { code: 'source-validator.PixelSizeTooLow', parameters: { level: 'error', actual_res: '0.1', min_res: '0.3' } }],
    ['an RGB image at 1.0 m', '🌲 Forest and trees', 'rgb-10.tif', 3, 1.0, { code: 'source-validator.PixelSizeTooHigh', parameters: { level: 'error', actual_res: '1', max_res: '0.75' } }],
    ['a 2-band image at 0.5 m', '🏠 Buildings', 'two-05.tif', 2, 0.5, { code: 'source-validator.NChannelsNotAllowed', parameters: { level: 'error', required_nchannels: '[1,3,4]', real_nchannels: '2' } }],
  ])('fails %s on %s', async (_label, model, name, bands, pixel, expected) => {
    // Prepare
    const path = droneImage(name, bands, pixel);

    // Act
    const processing = await process(path, model);

    // Assess
    expect(processing.status).toBe('FAILED');
    expect(processing.messages).toEqual([expected]);
  });
});
