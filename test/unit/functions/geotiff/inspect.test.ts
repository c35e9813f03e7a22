import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import {
  checkImageForModel,
  fileRangeSource,
  inspectGeoTiff,
  requirementsForModel,
  s3RangeSource,
  toWgs84,
  type RangeSource,
} from '../../../../functions/geotiff/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';

const raster = (name: string) => fileURLToPath(new URL(`../../../../samples/rasters/${name}`, import.meta.url));
const corpusFile = (name: string) => fileURLToPath(new URL(`../../../fixtures/bad-inputs/${name}`, import.meta.url));

async function rejectionOf(promise: Promise<unknown>): Promise<InputRejected> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(InputRejected);
  return outcome as InputRejected;
}

/** Wraps a source to record every read it serves. */
function recording(source: RangeSource): RangeSource & { reads: [number, number][] } {
  const reads: [number, number][] = [];
  return { size: source.size, reads, read: (offset, length) => (reads.push([offset, length]), source.read(offset, length)) };
}

describe('inspectGeoTiff on the sample rasters', () => {
  it('reads cogeo.tif from its header alone, with a small fraction of the file', async () => {
    // Prepare
    const source = recording(await fileRangeSource(raster('cogeo.tif')));

    // Act
    const info = await inspectGeoTiff(source);

    // Assess
    expect(info).toMatchObject({ width: 1024, height: 1024, bands: 3, dtypes: ['uint8', 'uint8', 'uint8'], epsg: 3857, crs: 'EPSG:3857', tiled: true, rotated: false, nodata: null });
    expect(info.pixelSizeM[0]).toBeCloseTo(0.597, 3);
    expect(info.pixelSizeM[1]).toBeCloseTo(0.597, 3);
    expect(info.bytesRead).toBeLessThan(source.size / 10);
    expect(info.bytesRead).toBe(source.reads.reduce((n, [, length]) => n + length, 0));
    expect(Math.max(...source.reads.map(([offset, length]) => offset + length))).toBeLessThan(131_731); // before the first full-resolution tile
    // 1024 px * 0.597 m = 611 m of Web Mercator at about 37.7° N
    const [w, s, e, n] = info.bbox4326;
    expect(w).toBeCloseTo(128.6554, 3);
    expect(n).toBeCloseTo(37.6708, 3);
    expect(e - w).toBeCloseTo((611.5 / 6378137) * (180 / Math.PI), 5);
    expect(s).toBeLessThan(n);
    const ring = info.footprint4326.coordinates[0]!;
    expect(ring[0]).toEqual(ring[ring.length - 1]);
    expect(ring.every(([lon, lat]) => lon! >= w && lon! <= e && lat! >= s && lat! <= n)).toBe(true);
  });

  it('passes cogeo.tif with the pixel probe and accepts it for Buildings', async () => {
    // Act
    const info = await inspectGeoTiff(await fileRangeSource(raster('cogeo.tif')), { probePixels: true });

    // Assess
    expect(() => checkImageForModel(info, requirementsForModel('🏠 Buildings'))).not.toThrow();
    expect(info.bytesRead).toBeLessThan(statSync(raster('cogeo.tif')).size);
  });

  it('places RGB.byte.tif (UTM 18N) and finds it too coarse for Buildings', async () => {
    // Act
    const info = await inspectGeoTiff(await fileRangeSource(raster('RGB.byte.tif')), { probePixels: true });
    let rejection: InputRejected | undefined;
    try {
      checkImageForModel(info, requirementsForModel('Buildings'));
    } catch (error) {
      rejection = error as InputRejected;
    }

    // Assess
    expect(info).toMatchObject({ width: 791, height: 718, bands: 3, epsg: 32618, tiled: false, nodata: 0 });
    expect(info.pixelSizeM[0]).toBeCloseTo(300.04, 2);
    expect(info.bbox).toEqual([101985, 2611485, 339315, 2826915]);
    const [w, s, e, n] = info.bbox4326;
    expect([w, s, e, n].map((v) => +v.toFixed(2))).toEqual([-78.96, 23.56, -76.57, 25.55]);
    expect(rejection?.code).toBe('PIXEL_SIZE_TOO_COARSE');
    expect(rejection?.message).toMatch(/pixel size is 300 m, coarser than the model's maximum of 1.5 m\/px/);
  });

  it('lets RGBA.uint16.tif go up for Buildings (RGBA at 1.38 m; uint16 is for Mapflow to judge) but not for Forest', async () => {
    // Prepare
    const info = await inspectGeoTiff(await fileRangeSource(raster('RGBA.uint16.tif')), { probePixels: true });

    // Act
    const buildings = () => checkImageForModel(info, requirementsForModel('🏠 Buildings'));
    let rejection: InputRejected | undefined;
    try {
      checkImageForModel(info, requirementsForModel('🌲 Forest and trees'));
    } catch (error) {
      rejection = error as InputRejected;
    }

    // Assess
    expect(info).toMatchObject({ bands: 4, dtypes: ['uint16', 'uint16', 'uint16', 'uint16'], epsg: 32612 });
    expect(buildings).not.toThrow();
    expect(rejection?.code).toBe('PIXEL_SIZE_TOO_COARSE');
    expect(rejection?.message).toMatch(/pixel size is 1.38 m, coarser than the model's maximum of 0.75 m\/px/);
    expect(rejection?.details?.problems).toEqual(['PIXEL_SIZE_TOO_COARSE']);
  });

  it('reads the header of corrupt.tif but rejects its pixel data with TIFF_CORRUPT', async () => {
    // Prepare
    const source = await fileRangeSource(raster('corrupt.tif'));

    // Act
    const header = await inspectGeoTiff(source);
    const rejection = await rejectionOf(inspectGeoTiff(source, { probePixels: true }));

    // Assess
    expect(header.width).toBe(1024);
    expect(rejection.code).toBe('TIFF_CORRUPT');
    expect(rejection.message).toMatch(/tile 3 is said to span bytes 260000-307086 but the file ends at byte 298232/);
  });

  it.each([
    ['rotated.tif', /no coordinate reference system .* also rotated/],
    ['float_nan.tif', /has a geotransform but no coordinate reference system/],
  ])('rejects %s as NOT_GEOREFERENCED: a transform without CRS cannot be placed', async (file, message) => {
    // Act
    const rejection = await rejectionOf(inspectGeoTiff(await fileRangeSource(raster(file))));

    // Assess
    expect(rejection.code).toBe('NOT_GEOREFERENCED');
    expect(rejection.message).toMatch(message);
  });

  it('converts a geographic pixel size to metres at the image centre', async () => {
    // Act: 0.0001° pixels at 46.95° N
    const info = await inspectGeoTiff(await fileRangeSource(corpusFile('coarse-geographic.tif')));

    // Assess
    expect(info.crs).toBe('EPSG:4326');
    expect(info.pixelSize).toEqual([0.0001, 0.0001]);
    expect(info.pixelSizeM[0]).toBeCloseTo(7.61, 1);
    expect(info.pixelSizeM[1]).toBeCloseTo(11.12, 1);
  });
});

describe('ranged reads', () => {
  it('inspects an S3 object through GetObject ranges only', async () => {
    // Prepare
    const bytes = readFileSync(raster('cogeo.tif'));
    const s3 = mockClient(S3Client);
    s3.on(GetObjectCommand).callsFake((input: { Range: string }) => {
      const [, from, to] = /^bytes=(\d+)-(\d+)$/.exec(input.Range)!;
      const slice = bytes.subarray(Number(from), Number(to) + 1);
      return { Body: { transformToByteArray: async () => new Uint8Array(slice) } };
    });
    const source = s3RangeSource(new S3Client({ region: 'eu-central-1' }), { bucket: 'drop', key: 'inbox/cogeo.tif', versionId: 'v1', size: bytes.length });

    // Act
    const info = await inspectGeoTiff(source);

    // Assess
    const calls = s3.commandCalls(GetObjectCommand);
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(call.args[0].input).toMatchObject({ Bucket: 'drop', Key: 'inbox/cogeo.tif', VersionId: 'v1', Range: expect.stringMatching(/^bytes=\d+-\d+$/) });
    }
    expect(info.epsg).toBe(3857);
    expect(info.bytesRead).toBeLessThan(bytes.length / 10);
    s3.restore();
  });

  it('turns an object that returns fewer bytes than its size into TIFF_TRUNCATED', async () => {
    // Prepare: announces the full size, serves only the first 20 kB
    const file = await fileRangeSource(raster('RGB.byte.tif'));
    const shrunk: RangeSource = { size: file.size, read: async (offset, length) => (await file.read(offset, length)).slice(0, Math.max(0, 20_000 - offset)) };

    // Act
    const rejection = await rejectionOf(inspectGeoTiff(shrunk, { probePixels: true }));

    // Assess
    expect(rejection.code).toBe('TIFF_TRUNCATED');
  });
});

describe('reprojection to EPSG:4326', () => {
  it.each([
    [3857, [20037508.342789244, 0], [180, 0]],
    [3857, [0, 7361866.113051188], [0, 55]],
    [32632, [500000, 5200000], [9, 46.95]],
    [32733, [500000, 9000000], [15, -9.0466]],
    [25832, [500000, 5200000], [9, 46.95]],
    [2056, [2600000, 1200000], [7.4396, 46.9524]],
    [28992, [155000, 463000], [5.3876, 52.1552]],
  ])('EPSG:%i %j -> %j', (epsg, position, expected) => {
    // Act
    const [lon, lat] = toWgs84(epsg)(position as [number, number]);

    // Assess
    expect(lon).toBeCloseTo(expected[0]!, 2);
    expect(lat).toBeCloseTo(expected[1]!, 2);
  });
});

describe('storage failures', () => {
  it('passes a failing source on unchanged, so the caller can retry', async () => {
    // Prepare
    const failure = Object.assign(new Error('SlowDown'), { name: 'SlowDown' });
    const failing: RangeSource = { size: 1000, read: async () => Promise.reject(failure) };

    // Act
    const outcome = await inspectGeoTiff(failing).catch((error: unknown) => error);

    // Assess
    expect(outcome).toBe(failure);
  });
});
