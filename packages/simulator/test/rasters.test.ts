/**
 * The data interface: mosaics, streamed uploads of real GeoTIFFs read back
 * with their metadata and footprint, refusals (not a GeoTIFF, mosaic
 * mismatch, size, quota), links, previews, storage usage, and uploaded images
 * as a processing source.
 */
import { readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/index.ts';
import { BEARER, call, COGEO_AOI, fileForm, finished, RASTERS, start, v2Body } from './helpers.ts';

const COGEO = join(RASTERS, 'cogeo.tif');
let sim: RunningSimulator;
beforeAll(async () => {
  sim = await start({ processingSeconds: 0.5 });
});
afterAll(async () => {
  await sim.close();
});

async function newMosaic(target: RunningSimulator = sim, name = 'mosaic') {
  const answer = await call(target, 'POST', '/rasters/mosaic', { name, tags: ['a', 'b'] });
  expect(answer.status).toBe(200);
  return answer.json as { id: string; name: string; tags: string[]; created_at: string };
}

async function upload(mosaicId: string, file: string, target: RunningSimulator = sim) {
  return call(target, 'POST', `/rasters/mosaic/${mosaicId}/image`, await fileForm(join(RASTERS, file)));
}

describe('mosaics', () => {
  it('creates, reads with image_count, updates (tags replaced) and deletes', async () => {
    // Act
    const mosaic = await newMosaic();
    const read = await call(sim, 'GET', `/rasters/mosaic/${mosaic.id}`);
    const put = await call(sim, 'PUT', `/rasters/mosaic/${mosaic.id}`, { name: 'renamed', tags: ['c'] });
    const after = await call(sim, 'GET', `/rasters/mosaic/${mosaic.id}`);
    const deleted = await call(sim, 'DELETE', `/rasters/mosaic/${mosaic.id}`);
    const gone = await call(sim, 'GET', `/rasters/mosaic/${mosaic.id}`);
    // Assess
    expect(mosaic).toEqual({ id: expect.any(String), name: 'mosaic', tags: ['a', 'b'], created_at: expect.any(String) });
    expect(read.json).toMatchObject({ id: mosaic.id, image_count: 0 });
    expect(put.status).toBe(200);
    expect(after.json).toMatchObject({ name: 'renamed', tags: ['c'] });
    expect(deleted.status).toBe(200);
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ detail: { code: 'ItemNotFound', parameters: expect.any(Object) } });
  });
});

describe('image upload', () => {
  it('accepts cogeo.tif and reports EPSG:3857, ~0.597 m pixels, bands, dtypes and a WGS84 footprint', async () => {
    // Prepare
    const mosaic = await newMosaic();
    // Act
    const answer = await upload(mosaic.id, 'cogeo.tif');
    const image = answer.json;
    const read = await call(sim, 'GET', `/rasters/image/${image.id}`);
    const list = await call(sim, 'GET', `/rasters/mosaic/${mosaic.id}/image`);
    const count = await call(sim, 'GET', `/rasters/mosaic/${mosaic.id}`);
    // Assess
    expect(answer.status).toBe(200);
    expect(image).toMatchObject({ mosaic_id: mosaic.id, filename: 'cogeo.tif', file_size: statSync(COGEO).size, uploaded_at: expect.any(String) });
    expect(image.meta_data).toMatchObject({ crs: 'EPSG:3857', width: 1024, height: 1024, count: 3, dtypes: ['uint8', 'uint8', 'uint8'], nodata: null });
    expect(image.meta_data.pixel_size[0]).toBeCloseTo(0.597, 3);
    expect(image.footprint).toMatch(/^POLYGON \(\(128\.655\d+ 37\.666\d+, 128\.660\d+ 37\.666\d+/);
    expect(image.image_url).toMatch(/^s3:\/\//);
    // SHA-1, as the raster-service contract's image list (mapflow-qgis spec/002_E_zoom_selector_api.md).
    expect(image.checksum).toBe(createHash('sha1').update(readFileSync(COGEO)).digest('hex'));
    expect(image.preview_url_s).toBe(`${sim.url}/rasters/image/${image.id}/preview/s`);
    expect(read.json).toEqual(image);
    expect(list.json).toEqual([image]);
    expect(count.json.image_count).toBe(1);
  });

  it('reads a UTM image (RGB.byte.tif, EPSG:32618) with its footprint in the Caribbean', async () => {
    // Prepare
    const mosaic = await newMosaic();
    // Act
    const { status, json: image } = await upload(mosaic.id, 'RGB.byte.tif');
    // Assess
    expect(status).toBe(200);
    expect(image.meta_data).toMatchObject({ crs: 'EPSG:32618', width: 791, height: 718, count: 3, nodata: 0 });
    const [lon, lat] = image.footprint.slice('POLYGON (('.length).split(',')[0].trim().split(' ').map(Number);
    expect(lon).toBeGreaterThan(-80);
    expect(lon).toBeLessThan(-76);
    expect(lat).toBeGreaterThan(23);
    expect(lat).toBeLessThan(26);
  });

  // Codes as mapflow-qgis errors/data_errors.py defines them: FileOpenError = cannot be opened as a GeoTIFF,
  // ImageOutOfBounds = extent out of coordinate range ("check CRS and transform").
  it.each([
    ['corrupt.tif', 'FileOpenError'],
    ['rotated.tif', 'ImageOutOfBounds'],
    ['float_nan.tif', 'ImageOutOfBounds'],
  ])('refuses %s with 400 %s (errors/data_errors.py)', async (file, code) => {
    // Prepare
    const mosaic = await newMosaic();
    // Act
    const answer = await upload(mosaic.id, file);
    // Assess
    expect(answer.status).toBe(400);
    expect(answer.json.detail.code).toBe(code);
  });

  it('refuses a file that is not a GeoTIFF', async () => {
    // Prepare
    const mosaic = await newMosaic();
    const form = new FormData();
    form.append('file', new Blob(['{"type":"FeatureCollection","features":[]}']), 'aoi.geojson');
    // Act
    const answer = await call(sim, 'POST', `/rasters/mosaic/${mosaic.id}/image`, form);
    // Assess
    expect(answer.status).toBe(400);
    expect(answer.json.detail).toMatchObject({ code: 'FileOpenError', parameters: expect.any(Object) });
  });

  it('refuses an image whose CRS, bands or resolution differ from the mosaic with 422 FileValidationFailed (errors/data_errors.py: a mismatch with the mosaic)', async () => {
    // Prepare
    const mosaic = await newMosaic();
    await upload(mosaic.id, 'cogeo.tif');
    // Act
    const utm = await upload(mosaic.id, 'RGB.byte.tif');
    const rgba = await upload(mosaic.id, 'RGBA.uint16.tif');
    const same = await upload(mosaic.id, 'cogeo.tif');
    // Assess
    expect(utm.status).toBe(422);
    expect(utm.json.detail).toMatchObject({
      code: 'FileValidationFailed',
      parameters: { filename: 'RGB.byte.tif', mosaic_id: mosaic.id, param_name: 'crs', expected_param: 'EPSG:3857' },
    });
    expect(rgba.status).toBe(422);
    expect(same.status).toBe(200);
  });

  it('refuses a request without a file part or with an unknown mosaic', async () => {
    // Prepare
    const form = new FormData();
    form.append('other', 'x');
    const mosaic = await newMosaic();
    // Act
    const noFile = await call(sim, 'POST', `/rasters/mosaic/${mosaic.id}/image`, form);
    const unknown = await call(sim, 'POST', '/rasters/mosaic/00000000-0000-0000-0000-000000000000/image', await fileForm(COGEO));
    // Assess
    expect(noFile.status).toBe(400);
    expect(unknown.status).toBe(404);
  });

  it('creates a mosaic together with its first image', async () => {
    // Act
    const answer = await call(sim, 'POST', '/rasters/mosaic/image?name=together&tags=x&tags=y', await fileForm(COGEO));
    const mosaic = await call(sim, 'GET', `/rasters/mosaic/${answer.json.mosaic_id}`);
    // Assess
    expect(answer.status).toBe(200);
    expect(mosaic.json).toMatchObject({ name: 'together', tags: ['x', 'y'], image_count: 1 });
  });

  it('renames and deletes an image', async () => {
    // Prepare
    const mosaic = await newMosaic();
    const image = (await upload(mosaic.id, 'cogeo.tif')).json;
    // Act
    const renamed = await call(sim, 'PUT', `/rasters/image/${image.id}?name=better.tif`);
    const read = await call(sim, 'GET', `/rasters/image/${image.id}`);
    const deleted = await call(sim, 'DELETE', `/rasters/image/${image.id}`);
    const gone = await call(sim, 'GET', `/rasters/image/${image.id}`);
    // Assess
    expect(renamed.status).toBe(200);
    expect(read.json.filename).toBe('better.tif');
    expect(deleted.status).toBe(200);
    expect(gone.status).toBe(404);
  });
});

describe('link-image', () => {
  it('links an image already in storage by its s3:// URL and refuses other URLs', async () => {
    // Prepare
    const source = (await upload((await newMosaic()).id, 'cogeo.tif')).json;
    const target = await newMosaic();
    // Act
    const linked = await call(sim, 'POST', `/rasters/mosaic/${target.id}/link-image`, { url: source.image_url });
    const https = await call(sim, 'POST', `/rasters/mosaic/${target.id}/link-image`, { url: 'https://example.com/a.tif' });
    const missing = await call(sim, 'POST', `/rasters/mosaic/${target.id}/link-image`, { url: 's3://bucket/none.tif' });
    const images = await call(sim, 'GET', `/rasters/mosaic/${target.id}/image`);
    // Assess
    expect(linked.json).toEqual({ message: expect.any(String), mosaic_id: target.id });
    expect(https.status).toBe(400);
    expect(missing.status).toBe(400);
    expect(missing.json.detail.code).toBe('FileOpenError');
    expect(images.json).toHaveLength(1);
    expect(images.json[0].meta_data).toEqual(source.meta_data);
  });
});

describe('previews', () => {
  it.each([['s', 256], ['l', 1024]])('answers preview %s as a JPEG of %i pixels square', async (size, pixels) => {
    // Prepare
    const image = (await upload((await newMosaic()).id, 'cogeo.tif')).json;
    // Act
    const response = await fetch(`${sim.url}/rasters/image/${image.id}/preview/${size}`, { headers: { authorization: BEARER } });
    const decoded = jpeg.decode(Buffer.from(await response.arrayBuffer()));
    // Assess
    expect(response.headers.get('content-type')).toBe('image/jpeg');
    expect(decoded.width).toBe(pixels);
    expect(decoded.height).toBe(pixels);
    // the image, not a flat or placeholder picture: pixels vary and colour channels differ somewhere
    const reds = new Set<number>();
    let coloured = false;
    for (let p = 0; p < decoded.data.length; p += 4 * 97) {
      reds.add(decoded.data[p]!);
      if (Math.abs(decoded.data[p]! - decoded.data[p + 2]!) > 20) coloured = true;
    }
    expect(reds.size).toBeGreaterThan(20);
    expect(coloured).toBe(true);
  });

  it('refuses an unknown preview size', async () => {
    // Prepare
    const image = (await upload((await newMosaic()).id, 'cogeo.tif')).json;
    // Act
    const answer = await call(sim, 'GET', `/rasters/image/${image.id}/preview/xl`);
    // Assess
    expect(answer.status).toBe(400);
  });
});

describe('storage', () => {
  it('reports usage in the spec shape and frees storage on delete', async () => {
    // Prepare
    const fresh = await start();
    try {
      const mosaic = await newMosaic(fresh);
      const before = (await call(fresh, 'GET', '/rasters/memory')).json;
      // Act
      await upload(mosaic.id, 'cogeo.tif', fresh);
      const during = (await call(fresh, 'GET', '/rasters/memory')).json;
      await call(fresh, 'DELETE', `/rasters/mosaic/${mosaic.id}`);
      const after = (await call(fresh, 'GET', '/rasters/memory')).json;
      // Assess
      expect(before).toEqual({ used_bytes: 0, limit_bytes: expect.any(Number), used_gb: 0, limit_gb: expect.any(Number), usage_percent: 0 });
      expect(during.used_bytes).toBe(statSync(COGEO).size);
      expect(during.usage_percent).toBeGreaterThan(0);
      expect(after.used_bytes).toBe(0);
    } finally {
      await fresh.close();
    }
  });

  it('reports the live shape with realShapes', async () => {
    // Prepare
    const real = await start({ realShapes: true, limits: { storageLimitBytes: 5_000_000, maxUploadFileSize: 1_000_000, maxPixelCount: 20_000 } });
    try {
      // Act
      const memory = (await call(real, 'GET', '/rasters/memory')).json;
      // Assess
      expect(memory).toEqual({ memoryLimit: 5_000_000, memoryUsed: 0, memoryFree: 5_000_000, maxUploadFileSize: 1_000_000, maxPixelCount: 20_000 });
    } finally {
      await real.close();
    }
  });

  it('refuses a file over maxUploadFileSize (FileTooBig) and one over the free storage (MemoryLimitExceeded)', async () => {
    // Prepare
    const small = await start({ limits: { maxUploadFileSize: 100_000 } });
    const full = await start({ limits: { storageLimitBytes: 400_000 } });
    try {
      const smallMosaic = await newMosaic(small);
      const fullMosaic = await newMosaic(full);
      // Act
      const tooBig = await upload(smallMosaic.id, 'cogeo.tif', small);
      const first = await upload(fullMosaic.id, 'cogeo.tif', full);
      const second = await upload(fullMosaic.id, 'cogeo.tif', full);
      const memory = (await call(full, 'GET', '/rasters/memory')).json;
      // Assess
      expect(tooBig.status).toBe(413);
      expect(tooBig.json.detail.code).toBe('FileTooBig');
      expect(first.status).toBe(200);
      expect(second.status).toBe(413);
      expect(second.json.detail.code).toBe('MemoryLimitExceeded');
      expect(memory.used_bytes).toBe(statSync(COGEO).size);
    } finally {
      await small.close();
      await full.close();
    }
  });
});

describe('uploaded images as a processing source', () => {
  it('processes cogeo.tif with Buildings to OK over its footprint (v2 myImagery and v1 local)', async () => {
    // Prepare
    const image = (await upload((await newMosaic()).id, 'cogeo.tif')).json;
    // Act
    const v2 = await call(sim, 'POST', '/processings/v2', v2Body({ geometry: COGEO_AOI, params: { sourceParams: { myImagery: { imageIds: [image.id] } } } }));
    const v1 = await call(sim, 'POST', '/processings', { wdName: 'Buildings', geometry: COGEO_AOI, params: { source_type: 'local', url: image.image_url } });
    // Assess
    expect((await finished(sim, v2.json.id)).status).toBe('OK');
    expect((await finished(sim, v1.json.id)).status).toBe('OK');
  });

  it('fails a coarse image with PixelSizeTooHigh, a 4-band uint16 one with band and dtype codes, an AOI elsewhere with NoDataInAOI', async () => {
    // Prepare
    const coarse = (await upload((await newMosaic()).id, 'RGB.byte.tif')).json;
    const rgba = (await upload((await newMosaic()).id, 'RGBA.uint16.tif')).json;
    const good = (await upload((await newMosaic()).id, 'cogeo.tif')).json;
    const source = (id: string) => ({ params: { sourceParams: { myImagery: { imageIds: [id] } } } });
    // Act
    const results = await Promise.all(
      [source(coarse.id), source(rgba.id), { ...source(good.id) }].map(async (overrides, i) => {
        const created = await call(sim, 'POST', '/processings/v2', v2Body({ ...overrides, ...(i === 2 ? {} : { geometry: COGEO_AOI }) }));
        return finished(sim, created.json.id);
      }),
    );
    // Assess
    expect(results[0].messages).toEqual([{ code: 'source-validator.PixelSizeTooHigh', parameters: { level: 'error', actual_res: '300.042', max_res: '1.2' } }]);
    expect(results[1].messages.map((m: { code: string }) => m.code)).toEqual(['source-validator.DtypeNotAllowed', 'source-validator.NChannelsNotAllowed', 'source-validator.PixelSizeTooHigh']);
    expect(results[2].messages.map((m: { code: string }) => m.code)).toEqual(['source-validator.NoDataInAOI']);
  });

  it('answers 400 for an image id the account does not have', async () => {
    // Act
    const answer = await call(sim, 'POST', '/processings/v2', v2Body({ params: { sourceParams: { myImagery: { imageIds: ['00000000-0000-0000-0000-000000000000'] } } } }));
    // Assess
    expect(answer.status).toBe(400);
  });
});
