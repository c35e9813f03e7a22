/**
 * Issue 38, point 5: a GeoTIFF in longitude/latitude (EPSG:4326) whose
 * footprint runs past 180° (179.5° to 180.5°) straddles the antimeridian: it
 * is CROSSES_ANTIMERIDIAN, as a projected one is, not NOT_GEOREFERENCED.
 */
import { describe, expect, it } from 'vitest';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { inspectGeoTiff, type RangeSource } from '../../../../functions/geotiff/index.ts';
import { hostileTiff } from '../../../../packages/bench/fixtures/tiff.ts';

function memorySource(bytes: Uint8Array): RangeSource {
  return {
    size: bytes.length,
    async read(offset: number, length: number) {
      return bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer;
    },
  };
}

const rgbStrip = (w: number) => new Uint8Array(w * 3).map((_, i) => (i * 7) & 0xff);

/** 100 x 100 px of 0.01° from `west`, 10° N. */
function geographicTiff(west: number): Uint8Array {
  return hostileTiff({ width: 100, height: 100, compression: 1, rowsPerStrip: 1, blocks: Array.from({ length: 100 }, () => rgbStrip(100)), geo: { epsg: 4326, origin: [west, 10], pixel: 0.01 } });
}

async function outcomeOf(bytes: Uint8Array): Promise<unknown> {
  return inspectGeoTiff(memorySource(bytes), { probePixels: true }).then((info) => info, (error: unknown) => error);
}

describe('a geographic GeoTIFF at the antimeridian', () => {
  it.each([
    ['east of 180° (179.5° to 180.5°)', 179.5],
    ['west of -180° (-180.5° to -179.5°)', -180.5],
  ])('straddling it %s is CROSSES_ANTIMERIDIAN', async (_what, west) => {
    // Prepare
    const file = geographicTiff(west);
    // Act
    const outcome = await outcomeOf(file);
    // Assess
    expect(outcome).toBeInstanceOf(InputRejected);
    expect((outcome as InputRejected).code).toBe('CROSSES_ANTIMERIDIAN');
    expect((outcome as InputRejected).message).toMatch(/straddles the antimeridian .* cut it at 180°/);
  });

  it('beside it, up to 180°, is accepted', async () => {
    const outcome = await outcomeOf(geographicTiff(179));
    expect(outcome).not.toBeInstanceOf(Error);
  });

  it('wholly beyond 180° (181° to 182°) is still NOT_GEOREFERENCED', async () => {
    const outcome = await outcomeOf(geographicTiff(181));
    expect((outcome as InputRejected).code).toBe('NOT_GEOREFERENCED');
  });
});
