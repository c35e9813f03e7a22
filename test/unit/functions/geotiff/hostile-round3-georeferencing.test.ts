/**
 * Issue 38, point 1 (the GeoTIFF part): images that will fail or are
 * nonsense are refused before anything is spent, and valid images GDAL reads
 * (EPSG:31467, EPSG:3006, a user-defined Transverse Mercator) are read, with
 * their footprint placed right. Every file is written here with the
 * fixtures' TIFF writer and run through the Inspect function's reader.
 */
import { describe, expect, it } from 'vitest';
import { brotliDecompressSync, deflateSync } from 'node:zlib';
import packed from '../../../../functions/geotiff/crs-definitions.json' with { type: 'json' };
import { definitionRows } from '../../../../scripts/make-crs-definitions.ts';
import proj4 from 'proj4';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { checkImageForModel, inspectGeoTiff, requirementsForModel } from '../../../../functions/geotiff/index.ts';
import { tiff, type TiffGeo } from '../../../../packages/bench/fixtures/tiff.ts';

const memory = (bytes: Uint8Array) => ({ size: bytes.length, read: async (offset: number, length: number) => bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer });
const rgb = (geo: TiffGeo, size = 64) => tiff({ width: size, height: size, compression: 8, blocks: [deflateSync(new Uint8Array(size * size * 3).fill(80))], geo });
const outcome = async (bytes: Uint8Array) =>
  inspectGeoTiff(memory(bytes), { probePixels: true }).then(
    (info) => info,
    (error: unknown) => error,
  );

/** A user-defined Transverse Mercator (ProjectedCSTypeGeoKey 32767) that is Gauss-Kruger zone 3 on Bessel: EPSG:31467 spelt out. */
const userDefinedTm: TiffGeo = {
  origin: [3_500_000, 5_400_000],
  pixel: 0.5,
  geoKeys: [
    [1024, 1], // GTModelTypeGeoKey: projected
    [1025, 1], // GTRasterTypeGeoKey: PixelIsArea
    [2048, 4314], // GeographicTypeGeoKey: DHDN
    [3072, 32767], // ProjectedCSTypeGeoKey: user-defined
    [3074, 32767], // ProjectionGeoKey: user-defined
    [3075, 1], // ProjCoordTransGeoKey: Transverse Mercator
    [3076, 9001], // ProjLinearUnitsGeoKey: metre
    [3081, [0]], // ProjNatOriginLatGeoKey
    [3080, [9]], // ProjNatOriginLongGeoKey
    [3092, [1]], // ProjScaleAtNatOriginGeoKey
    [3082, [3_500_000]], // ProjFalseEastingGeoKey
    [3083, [0]], // ProjFalseNorthingGeoKey
  ],
};

describe('hostile corpus, third round: GeoTIFFs', () => {
  it('carries the EPSG dataset\'s definitions as epsg-index has them (regenerate with scripts/make-crs-definitions.ts)', () => {
    // Act
    const carried = brotliDecompressSync(Buffer.from(packed.brotliBase64, 'base64')).toString('utf8').split('\n');

    // Assess
    expect(carried).toEqual(definitionRows());
    expect(carried.length).toBe(packed.rows);
    expect(carried.length).toBeGreaterThan(6_900);
  });

  it.each([
    ['EPSG:31467 (DHDN / 3-degree Gauss-Kruger zone 3)', { epsg: 31467, origin: [3_500_000, 5_400_000], pixel: 0.5 }, [9, 48.7]],
    ['EPSG:3006 (SWEREF99 TM)', { epsg: 3006, origin: [674_000, 6_580_000], pixel: 0.5 }, [18.07, 59.33]],
    ['a user-defined Transverse Mercator (32767) on DHDN', userDefinedTm, [9, 48.7]],
  ] as const)('reads %s as GDAL does and places its footprint', async (_name, geo, [lon, lat]) => {
    // Prepare
    const bytes = rgb(geo as TiffGeo);

    // Act
    const info = await outcome(bytes);

    // Assess: the upper-left corner where the CRS puts it (DHDN without its datum shift: within a few hundred metres)
    expect(info).not.toBeInstanceOf(Error);
    const { bbox4326, pixelSizeM, footprint4326 } = info as Awaited<ReturnType<typeof inspectGeoTiff>>;
    expect(bbox4326[0]).toBeCloseTo(lon, 1);
    expect(bbox4326[3]).toBeCloseTo(lat, 1);
    expect(pixelSizeM[0]).toBeCloseTo(0.5, 6);
    expect(footprint4326.coordinates[0]!.length).toBeGreaterThan(4);
  });

  it('places EPSG:3006 where proj4 with the EPSG definition does, and the user-defined TM where EPSG:31467 is', async () => {
    // Prepare
    const sweref = '+proj=utm +zone=33 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs';

    // Act
    const swedish = (await outcome(rgb({ epsg: 3006, origin: [674_000, 6_580_000], pixel: 0.5 }))) as Awaited<ReturnType<typeof inspectGeoTiff>>;
    const coded = (await outcome(rgb({ epsg: 31467, origin: [3_500_000, 5_400_000], pixel: 0.5 }))) as Awaited<ReturnType<typeof inspectGeoTiff>>;
    const spelt = (await outcome(rgb(userDefinedTm))) as Awaited<ReturnType<typeof inspectGeoTiff>>;

    // Assess
    const [west, north] = proj4(sweref, 'EPSG:4326', [674_000, 6_580_000]);
    const upperLeft = swedish.footprint4326.coordinates[0]![0]!;
    expect(upperLeft[0]).toBeCloseTo(west!, 9);
    expect(upperLeft[1]).toBeCloseTo(north!, 9);
    expect(swedish.crs).toBe('EPSG:3006');
    expect(spelt.crs).toMatch(/^USER:[0-9a-f]{8}$/);
    expect(spelt.epsg).toBeUndefined();
    spelt.bbox4326.forEach((v, i) => expect(v).toBeCloseTo(coded.bbox4326[i]!, 6));
  });

  it('refuses a ModelTransformation of 0.3 m beside a tiepoint and pixel scale of 30 m (GEOTRANSFORM_CONFLICT)', async () => {
    // Prepare
    const matrix = [0.3, 0, 0, 380_000, 0, -0.3, 0, 5_200_000, 0, 0, 0, 0, 0, 0, 0, 1];
    const bytes = rgb({ epsg: 32632, origin: [380_000, 5_200_000], pixel: 30, transformation: matrix });

    // Act
    const error = await outcome(bytes);

    // Assess
    expect(error).toBeInstanceOf(InputRejected);
    expect((error as InputRejected).code).toBe('GEOTRANSFORM_CONFLICT');
    expect((error as Error).message).toMatch(/pixels of 30 x 30 .* ModelTransformation 0\.3 x 0\.3/);
  });

  it('reads a lone ModelTransformation, and one beside a tiepoint and scale that agree with it', async () => {
    // Prepare
    const matrix = [0.3, 0, 0, 380_000, 0, -0.3, 0, 5_200_000, 0, 0, 0, 0, 0, 0, 0, 1];

    // Act
    const alone = (await outcome(rgb({ epsg: 32632, transformation: matrix }))) as Awaited<ReturnType<typeof inspectGeoTiff>>;
    const both = (await outcome(rgb({ epsg: 32632, origin: [380_000, 5_200_000], pixel: 0.3, transformation: matrix }))) as Awaited<ReturnType<typeof inspectGeoTiff>>;

    // Assess
    expect(alone.pixelSizeM[0]).toBeCloseTo(0.3, 9);
    expect(both.pixelSizeM[0]).toBeCloseTo(0.3, 9);
  });

  it('refuses a one-pixel image (IMAGE_TOO_SMALL) and an image whose tiles are all empty (NO_PIXEL_DATA)', async () => {
    // Prepare
    const geo = { epsg: 32632, origin: [380_000, 5_200_000] as [number, number], pixel: 0.5 };
    const onePixel = tiff({ width: 1, height: 1, blocks: [new Uint8Array(3)], geo });
    const sparse = tiff({ width: 64, height: 64, tile: [16, 16], blocks: [], declaredBlocks: 16, declaredOffsets: Array(16).fill(0), declaredByteCounts: Array(16).fill(0), geo });

    // Act
    const tiny = await outcome(onePixel);
    const empty = await outcome(sparse);

    // Assess
    expect(tiny).toMatchObject({ code: 'IMAGE_TOO_SMALL' });
    expect(empty).toMatchObject({ code: 'NO_PIXEL_DATA' });
  });

  it.each([
    ['single band', { bands: 1, blocks: [new Uint8Array(64 * 64)] }],
    ['planar RGB', { bands: 3, planar: true, blocks: [0, 1, 2].map(() => new Uint8Array(64 * 64)) }],
    ['RGB with predictor 2', { bands: 3, compression: 8, predictor: 2, blocks: [deflateSync(new Uint8Array(64 * 64 * 3))] }],
  ] as const)('refuses a 0.05 m drone image (%s) on Buildings before the upload (PIXEL_SIZE_TOO_FINE)', async (_kind, layout) => {
    // Prepare
    const bytes = tiff({ width: 64, height: 64, ...layout, blocks: [...layout.blocks], geo: { epsg: 32632, origin: [380_000, 5_200_000], pixel: 0.05 } });

    // Act
    const info = (await outcome(bytes)) as Awaited<ReturnType<typeof inspectGeoTiff>>;
    const refusal = (() => {
      try {
        checkImageForModel(info, requirementsForModel('🏠 Buildings'));
        return undefined;
      } catch (error) {
        return error;
      }
    })();

    // Assess
    expect(refusal).toMatchObject({ code: 'PIXEL_SIZE_TOO_FINE' });
  });
});
