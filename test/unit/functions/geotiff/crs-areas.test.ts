/**
 * Issue 23, point 6: the areas of use the inspection checks images against
 * are the EPSG dataset's (epsg-index), for every code the bridge can place,
 * and an image in its CRS's area passes while one far outside does not.
 */
import { describe, expect, it } from 'vitest';
import { deflateSync } from 'node:zlib';
import { CRS_AREAS } from '../../../../functions/geotiff/crs-areas.ts';
import { SUPPORTED_EPSG_CODES } from '../../../../functions/geotiff/crs.ts';
import { inspectGeoTiff } from '../../../../functions/geotiff/index.ts';
import { areaFromPackage } from '../../../../scripts/make-crs-areas.ts';
import { hostileTiff } from '../../../../packages/bench/fixtures/tiff.ts';

const memory = (bytes: Uint8Array) => ({ size: bytes.length, read: async (offset: number, length: number) => bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer });
const image = (epsg: number, origin: [number, number], pixel = 0.5) =>
  hostileTiff({ width: 16, height: 16, compression: 8, blocks: [deflateSync(new Uint8Array(768))], geo: { epsg, origin, pixel } });

describe('areas of use', () => {
  it('match the EPSG dataset (epsg-index) for every supported code that has an entry (regenerate with scripts/make-crs-areas.ts)', () => {
    // Act
    const fromPackage = Object.fromEntries(SUPPORTED_EPSG_CODES.flatMap((code) => {
      const area = areaFromPackage(code);
      return area ? [[code, area]] : [];
    }));

    // Assess
    expect(Object.keys(fromPackage).length).toBeGreaterThan(150);
    expect(CRS_AREAS).toEqual(fromPackage);
  });

  it('pass an image inside its area and one just past a UTM zone\'s edge; refuse one far outside', async () => {
    // Act
    const bern = await inspectGeoTiff(memory(image(32632, [380_000, 5_200_000])));
    const pastEdge = await inspectGeoTiff(memory(image(32632, [900_000, 5_200_000]))); // about 14.2E, in zone 33's range
    const swiss = await inspectGeoTiff(memory(image(2056, [2_600_000, 1_200_000])));
    const far = await inspectGeoTiff(memory(image(2056, [2_600_000, 3_200_000]))).catch((error: unknown) => error);

    // Assess
    expect(bern.bbox4326[0]).toBeCloseTo(7.4, 0);
    expect(pastEdge.bbox4326[0]).toBeGreaterThan(12);
    expect(swiss.epsg).toBe(2056);
    expect(far).toMatchObject({ code: 'NOT_GEOREFERENCED' });
    expect((far as Error).message).toMatch(/outside the area where EPSG:2056 is used \(5\.96° to 10\.49° longitude/);
  });
});
