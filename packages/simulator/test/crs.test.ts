/**
 * Issue 38: the simulator reads an upload's CRS as the live service's GDAL
 * does: EPSG:31467 (DHDN / Gauss-Kruger zone 3), EPSG:3006 (SWEREF99 TM) and
 * a user-defined Transverse Mercator (32767) are placed, a vertical CRS is
 * ImageOutOfBounds as before.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectRaster, RasterRejected } from '../src/raster-file.ts';
import { tiff, type TiffGeo } from '../../bench/fixtures/tiff.ts';

const userDefinedTm: TiffGeo = {
  origin: [3_500_000, 5_400_000],
  pixel: 0.5,
  geoKeys: [[1024, 1], [1025, 1], [2048, 4314], [3072, 32767], [3074, 32767], [3075, 1], [3076, 9001], [3081, [0]], [3080, [9]], [3092, [1]], [3082, [3_500_000]], [3083, [0]]],
};

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function read(geo: TiffGeo): Promise<unknown> {
  const dir = await mkdtemp(join(tmpdir(), 'sim-crs-'));
  dirs.push(dir);
  const file = join(dir, 'image.tif');
  await writeFile(file, tiff({ width: 32, height: 32, compression: 8, blocks: [deflateSync(new Uint8Array(32 * 32 * 3))], geo }));
  return inspectRaster(file, { maxPixelCount: 30_000 }).catch((error: unknown) => error);
}

describe('CRSs the simulator reads', () => {
  it.each([
    ['EPSG:31467', { epsg: 31467, origin: [3_500_000, 5_400_000], pixel: 0.5 }, 'EPSG:31467', [9, 48.7]],
    ['EPSG:3006', { epsg: 3006, origin: [674_000, 6_580_000], pixel: 0.5 }, 'EPSG:3006', [18.07, 59.33]],
    ['a user-defined Transverse Mercator', userDefinedTm, 'USER', [9, 48.7]],
  ] as const)('places %s', async (_name, geo, crs, [lon, lat]) => {
    // Act
    const info = (await read(geo as TiffGeo)) as Awaited<ReturnType<typeof inspectRaster>>;

    // Assess
    expect(info.meta.crs).toBe(crs);
    expect(info.footprintBbox[0]).toBeCloseTo(lon, 1);
    expect(info.footprintBbox[3]).toBeCloseTo(lat, 1);
  });

  it('refuses a vertical CRS as ImageOutOfBounds', async () => {
    // Act
    const error = await read({ epsg: 5703, origin: [0, 0], pixel: 1 });

    // Assess
    expect(error).toBeInstanceOf(RasterRejected);
    expect((error as RasterRejected).code).toBe('ImageOutOfBounds');
  });
});
