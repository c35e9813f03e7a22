/**
 * Issue 23 (a), time: the decodes of the input (GeoJSON validation and
 * merging, the GeoTIFF's pixel check) stop at the step's decode deadline and
 * reject the file with INPUT_TOO_COMPLEX, instead of running until the Lambda
 * is killed (Sandbox.Timedout, a FAILED job). The deadline here is a clock by
 * count: it passes at its nth reading, so each test stops the decode at a
 * known place, whatever the machine's speed.
 */
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { tiff } from '../../../../packages/bench/fixtures/tiff.ts';
import { squaresGrid } from '../../../../packages/bench/fixtures/hostile.ts';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { DecodeTimedOut, decodeDeadline, MAX_DECODE_RESERVE_MS, type DecodeDeadline } from '../../../../functions/core/deadline.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { inspectGeoTiff, type RangeSource } from '../../../../functions/geotiff/index.ts';

/** A deadline that has not passed for its first `readings` checks, and has from then on. */
function passesAtReading(readings: number, ms = 1_500): DecodeDeadline & { readonly reads: number } {
  let reads = 0;
  return {
    ms,
    get at() {
      reads++;
      return reads > readings ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
    },
    get reads() {
      return reads;
    },
  };
}

const memory = (bytes: Uint8Array): RangeSource => ({ size: bytes.length, read: async (offset, length) => bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer });

describe('decodeDeadline', () => {
  it("keeps a quarter of the step's remaining time for after the decode, at most 10 s, and none without a Lambda context", () => {
    // Act
    const short = decodeDeadline({ getRemainingTimeInMillis: () => 2_000 }, 1_000);
    const long = decodeDeadline({ getRemainingTimeInMillis: () => 120_000 }, 1_000);
    const none = decodeDeadline(undefined);

    // Assess
    expect(short).toEqual({ at: 2_500, ms: 1_500 });
    expect(long).toEqual({ at: 1_000 + 120_000 - MAX_DECODE_RESERVE_MS, ms: 110_000 });
    expect(none).toBeUndefined();
  });
});

describe('a GeoJSON whose merge outlasts its deadline', () => {
  it('is rejected INPUT_TOO_COMPLEX while merging, with the time it had and what to do', () => {
    // Prepare: 2,500 touching squares; the deadline passes after the reading and the 2,500 polygons' validation
    const deadline = passesAtReading(1 + 2_500);

    // Act
    const rejection = (() => {
      try {
        parseAoi(squaresGrid(2_500), { deadline });
        return undefined;
      } catch (error) {
        return error;
      }
    })();

    // Assess: a typed rejection (Step Functions matches its name), stopped at the first batch merged
    expect(rejection).toBeInstanceOf(DecodeTimedOut);
    expect(rejection).toBeInstanceOf(InputRejected);
    expect(rejection).toMatchObject({ name: 'InputRejected', code: 'INPUT_TOO_COMPLEX', details: { limit: 'time', decodeMs: 1_500 } });
    expect((rejection as Error).message).toMatch(
      /^INPUT_TOO_COMPLEX: merging the polygons of .* \(2500 touching or overlapping polygons\) took longer than the 1\.5 s the step had for it .*nothing was sent to Mapflow\. Simplify the polygons/,
    );
    expect(deadline.reads).toBe(2_502);
  });

  it('is parsed whole when its deadline does not pass (the same file)', () => {
    // Act
    const aoi = parseAoi(squaresGrid(2_500), { deadline: passesAtReading(Number.POSITIVE_INFINITY) });

    // Assess
    expect(aoi.geometry.type).toBe('Polygon');
  });
});

describe('a GeoTIFF whose pixel check outlasts its deadline', () => {
  // 2048 x 2048 RGB in 16 Deflate tiles
  const image = tiff({ width: 2048, height: 2048, compression: 8, tile: [512, 512], blocks: Array<Uint8Array>(16).fill(deflateSync(Buffer.alloc(512 * 512 * 3))) });

  it('is rejected INPUT_TOO_COMPLEX at the tile where the deadline passed, with what to do', async () => {
    // Prepare: the deadline passes at the fifth tile
    const deadline = passesAtReading(4);

    // Act
    const rejection = await inspectGeoTiff(memory(image), { probePixels: true, deadline }).catch((error: unknown) => error);

    // Assess
    expect(rejection).toBeInstanceOf(DecodeTimedOut);
    expect(rejection).toMatchObject({ name: 'InputRejected', code: 'INPUT_TOO_COMPLEX', details: { limit: 'time' } });
    expect((rejection as Error).message).toMatch(/^INPUT_TOO_COMPLEX: decoding the image data \(tile 4 of 16\) took longer than the 1\.5 s .*gdal_translate -co COMPRESS=DEFLATE -co TILED=YES/);
  });

  it('is inspected whole when its deadline does not pass', async () => {
    // Act
    const info = await inspectGeoTiff(memory(image), { probePixels: true, deadline: passesAtReading(Number.POSITIVE_INFINITY) });

    // Assess
    expect(info).toMatchObject({ width: 2048, height: 2048 });
  });
});
