import { describe, expect, it } from 'vitest';
import {
  checkImageAgainstMosaic,
  checkImageForModel,
  checkImageLimits,
  requirementsForModel,
  UnknownModelRequirements,
  type ModelRequirements,
} from '../../../../functions/geotiff/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';

function rejection(check: () => void): InputRejected {
  try {
    check();
  } catch (error) {
    expect(error).toBeInstanceOf(InputRejected);
    return error as InputRejected;
  }
  throw new Error('the check passed');
}

const rgb = { width: 1000, height: 800, bands: 3, dtypes: ['uint8', 'uint8', 'uint8'], pixelSizeM: [0.5, 0.5] as [number, number] };

describe('requirementsForModel', () => {
  it.each([
    // mapflow-docs-en source/userguides/reference.rst: "RGB composite, RGBa or Singleband" and each model's
    // "Required GSD range"; Buildings keeps the spec's 2 bands; Buildings (Aerial) has no range there.
    ['🏠 Buildings', [1, 2, 3, 4], 0.3, 1.5],
    ['buildings', [1, 2, 3, 4], 0.3, 1.5],
    ['🏠⭐️ Buildings (Aerial)', [1, 3, 4], 0, Infinity],
    ['🌲 Forest and trees', [1, 3, 4], 0.15, 0.75],
    ['🚗 Roads', [1, 3, 4], 0.1, 1.2],
    ['🏗️ Construction sites', [1, 3, 4], 0.5, 2.0],
  ])('%s takes %j bands from %d to %d m/px, of any data type', (name, bands, min, max) => {
    // Act
    const req = requirementsForModel(name);

    // Assess
    expect(req.bands).toEqual(bands);
    expect(req.dtypes).toEqual([]);
    expect(req.minPixelSizeM).toBe(min);
    expect(req.maxPixelSizeM).toBe(max);
  });

  it('does not guess requirements for a custom model', () => {
    expect(() => requirementsForModel('🛰️ Solar panels (custom)')).toThrow(UnknownModelRequirements);
  });
});

describe('checkImageForModel', () => {
  const req: ModelRequirements = { bands: [3], dtypes: ['uint8'], minPixelSizeM: 0.2, maxPixelSizeM: 1.2 };

  it('accepts a fitting image', () => {
    expect(() => checkImageForModel(rgb, req)).not.toThrow();
  });

  it.each([
    ['too few bands', { bands: 1, dtypes: ['uint8'] }, 'UNSUPPORTED_BANDS', /it has 1 band\(s\), the model takes 3/],
    ['a signed type', { dtypes: ['int16', 'int16', 'int16'] }, 'UNSUPPORTED_DATA_TYPE', /data type is int16, the model takes uint8/],
    ['coarse pixels on one axis', { pixelSizeM: [0.5, 2] as [number, number] }, 'PIXEL_SIZE_TOO_COARSE', /pixel size is 2 m, coarser than the model's maximum of 1.2 m\/px/],
    ['fine pixels', { pixelSizeM: [0.15, 0.15] as [number, number] }, 'PIXEL_SIZE_TOO_FINE', /pixel size is 0.15 m, finer than the model's minimum of 0.2 m\/px. Resample/],
  ])('rejects %s', (_label, change, code, message) => {
    // Act
    const error = rejection(() => checkImageForModel({ ...rgb, ...change }, req));

    // Assess
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
  });
});

// Issue 36 point 1: the checks before any upload never refuse what the live service takes (reference.rst).
describe('checkImageForModel with the default models: never stricter than Mapflow', () => {
  const image = (bands: number, pixel: number, dtype = 'uint8') => ({ bands, dtypes: Array.from({ length: bands }, () => dtype), pixelSizeM: [pixel, pixel] as [number, number] });

  it.each([
    ['a 4-band RGBA drone orthophoto at 0.5 m', '🏠 Buildings', image(4, 0.5)],
    ['a single-band image at 0.5 m', '🌲 Forest and trees', image(1, 0.5)],
    ['a single-band image at 0.5 m', '🚗 Roads', image(1, 0.5)],
    ['an RGBA image at 1.4 m', '🏠 Buildings', image(4, 1.4)],
    ['an image at 1.8 m', '🏗️ Construction sites', image(3, 1.8)],
    ['a 0.05 m image (Mapflow resamples it to 0.1 m)', '🚗 Roads', image(3, 0.05)],
    ['a uint16 image (Mapflow preprocesses to uint8; its validator decides)', '🏠 Buildings', image(3, 0.5, 'uint16')],
    ['a 0.5 m image on the aerial model (no range in the reference; Mapflow decides)', '🏠⭐️ Buildings (Aerial)', image(3, 0.5)],
  ])('accepts %s on %s', (_label, model, info) => {
    // Act
    const check = () => checkImageForModel(info, requirementsForModel(model));

    // Assess
    expect(check).not.toThrow();
  });

  it.each([
    ['a 0.05 m image', '🏠 Buildings', image(4, 0.05), 'PIXEL_SIZE_TOO_FINE', /0.05 m \(Mapflow resamples it to 0.1 m\), finer than the model's minimum of 0.3 m\/px/],
    ['a 0.05 m single-band image', '🌲 Forest and trees', image(1, 0.05), 'PIXEL_SIZE_TOO_FINE', /minimum of 0.15 m\/px/],
    ['a 1.0 m image', '🌲 Forest and trees', image(3, 1.0), 'PIXEL_SIZE_TOO_COARSE', /1 m, coarser than the model's maximum of 0.75 m\/px/],
    ['a 0.4 m image', '🏗️ Construction sites', image(3, 0.4), 'PIXEL_SIZE_TOO_FINE', /minimum of 0.5 m\/px/],
    ['a 5-band image', '🏠 Buildings', image(5, 0.5), 'UNSUPPORTED_BANDS', /it has 5 band\(s\), the model takes 1 to 4. Mapflow takes RGB, RGBA or single-band images/],
    ['a 2-band image', '🚗 Roads', image(2, 0.5), 'UNSUPPORTED_BANDS', /the model takes 1, 3, 4/],
  ])('refuses %s on %s before the upload', (_label, model, info, code, message) => {
    // Act
    const error = rejection(() => checkImageForModel(info, requirementsForModel(model)));

    // Assess
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
  });
});

describe('checkImageLimits', () => {
  it('accepts an image within the limits, defaulting to 2 GiB and 30,000 px', () => {
    expect(() => checkImageLimits(rgb, 1024 ** 3, {})).not.toThrow();
    expect(() => checkImageLimits({ width: 30_000, height: 30_000 }, 100, { freeBytes: 100 })).not.toThrow();
  });

  it.each([
    ['a file over the upload limit', rgb, 3 * 1024 ** 3, {}, 'FILE_TOO_LARGE', /3.00 GiB; Mapflow accepts uploads up to 2.00 GiB/],
    ['a file over a smaller account limit', rgb, 200 * 1024 ** 2, { maxUploadFileSize: 100 * 1024 ** 2 }, 'FILE_TOO_LARGE', /200.0 MiB/],
    ['too many pixels', { width: 30_001, height: 10 }, 100, {}, 'IMAGE_TOO_MANY_PIXELS', /30001 x 10 pixels; Mapflow accepts at most 30000/],
    ['no storage left', rgb, 5 * 1024 ** 2, { freeBytes: 1024 ** 2 }, 'STORAGE_QUOTA_EXCEEDED', /needs 5.0 MiB but the Mapflow account has 1.0 MiB of storage free/],
  ])('rejects %s', (_label, info, size, limits, code, message) => {
    // Act
    const error = rejection(() => checkImageLimits(info, size, limits));

    // Assess
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
  });
});

describe('checkImageAgainstMosaic', () => {
  const image = { crs: 'EPSG:32632', bands: 3, pixelSizeM: [0.5, 0.5] as [number, number], pixelSize: [0.5, 0.5] as [number, number] };

  it('accepts an image like those in the mosaic, or an empty mosaic', () => {
    // Prepare
    const wkt = 'PROJCS["WGS 84 / UTM zone 32N",GEOGCS["WGS 84",AUTHORITY["EPSG","4326"]],AUTHORITY["EPSG","32632"]]';

    // Act & Assess
    expect(() => checkImageAgainstMosaic(image, [])).not.toThrow();
    expect(() => checkImageAgainstMosaic(image, [{ crs: 'epsg:32632', count: 3, pixel_size: [0.5, -0.5] }])).not.toThrow();
    expect(() => checkImageAgainstMosaic(image, [{ crs: wkt, count: 3, pixel_size: [0.50001, 0.5] }])).not.toThrow();
  });

  it('accepts another CRS or pixel size, which Mapflow reprojects and resamples', () => {
    // Act & Assess
    expect(() => checkImageAgainstMosaic(image, [{ crs: 'EPSG:3857', count: 3, pixel_size: [0.6, 0.6] }])).not.toThrow();
    expect(() => checkImageAgainstMosaic(image, [{ crs: 'EPSG:32632', count: 3, pixel_size: [0.3, 0.3] }])).not.toThrow();
  });

  it('refuses another band count', () => {
    // Act
    const error = rejection(() => checkImageAgainstMosaic({ ...image, bands: 4 }, [{ crs: 'EPSG:3857', count: 3, pixel_size: [0.6, 0.6] }]));

    // Assess
    expect(error.code).toBe('MOSAIC_MISMATCH');
    expect(error.message).toMatch(/4 band\(s\) instead of 3\. All images of a mosaic need the same band count/);
  });
});
