/**
 * Issue 23: the second-round hostile corpus (packages/bench/fixtures/hostile-round2.ts)
 * in process, through the checks the Lambdas run: each file rejected with its
 * code and a message that says what to do, and nothing decoded unbounded.
 */
import { describe, expect, it } from 'vitest';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { inspectGeoTiff } from '../../../../functions/geotiff/index.ts';
import { lzwOutputLength, LzwCodeError } from '../../../../functions/geotiff/limits.ts';
import { applyOverrides, DEFAULT_ROUTES } from '../../../../functions/routing/index.ts';
import { HOSTILE_ROUND2 } from '../../../../packages/bench/fixtures/hostile-round2.ts';
import { lzwTableOverflow } from '../../../../packages/bench/fixtures/tiff.ts';

const memory = (bytes: Uint8Array) => ({ size: bytes.length, read: async (offset: number, length: number) => bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer });

describe('hostile corpus, second round, in process', () => {
  it.each(HOSTILE_ROUND2.map((entry) => [entry.file, entry.expectedCode, entry] as const))('%s -> %s', async (_file, expectedCode, entry) => {
    // Prepare
    const content = await entry.make();
    const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content;

    // Act
    const outcome = await (async () => {
      if (entry.kind === 'geojson') applyOverrides(DEFAULT_ROUTES.routes[0]!, parseAoi(bytes, { aoiAreaLimitSqM: 1_000e6 }).overrides);
      else await inspectGeoTiff(memory(bytes), { probePixels: true });
    })().then(
      () => undefined,
      (error: unknown) => error,
    );

    // Assess
    expect(outcome).toBeInstanceOf(InputRejected);
    expect((outcome as InputRejected).code).toBe(expectedCode);
    expect((outcome as InputRejected).message.length).toBeGreaterThan(60);
  }, 120_000);

  it('validates the LZW code stream: a code beyond geotiff.js\' 4,093-entry table is an error, not a count', () => {
    // Prepare
    const stream = lzwTableOverflow();

    // Act
    const outcome = (() => {
      try {
        return lzwOutputLength(stream, 1 << 20);
      } catch (error) {
        return error;
      }
    })();

    // Assess: the old count said it fit (3,838 bytes)
    expect(outcome).toBeInstanceOf(LzwCodeError);
    expect((outcome as Error).message).toMatch(/code 4093/);
  });

  it('reports 1e400 as an infinite number, not as null', async () => {
    // Prepare
    const file = (await HOSTILE_ROUND2.find((e) => e.file === 'coordinate-1e400.geojson')!.make()) as string;

    // Act
    const outcome = (() => {
      try {
        return parseAoi(file);
      } catch (error) {
        return error;
      }
    })();

    // Assess
    expect((outcome as Error).message).toMatch(/found \[7\.45, an infinite number \(beyond 1\.8e308\)\]/);
    expect((outcome as Error).message).not.toMatch(/null/);
  });

  it('says what is wrong with UTF-32 text, a complex image and a file just over 20 MiB', async () => {
    // Prepare
    const make = async (file: string) => {
      const content = await HOSTILE_ROUND2.find((e) => e.file === file)!.make();
      return typeof content === 'string' ? new TextEncoder().encode(content) : content;
    };
    const catching = async (work: () => unknown) => {
      try {
        await work();
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };

    // Act
    const utf32 = await catching(async () => parseAoi(await make('utf32le.geojson')));
    const complex = await catching(async () => inspectGeoTiff(memory(await make('complex-int16.tif')), { probePixels: true }));
    const large = await catching(async () => parseAoi(await make('geojson-21mb.geojson')));

    // Assess
    expect(utf32).toMatch(/^NOT_JSON: the file is UTF-32 text \(little-endian\).*iconv -f UTF-32 -t UTF-8/);
    expect(complex).toMatch(/^UNSUPPORTED_DATA_TYPE: the image's data type is complex-int16;.*gdal_translate -ot Byte/);
    expect(large).toMatch(/^FILE_TOO_LARGE: the GeoJSON is 20\.03 MiB \(21,000,000 bytes\); at most 20\.00 MiB \(20,971,520 bytes\)/);
  }, 120_000);

  it('names the middle strip that is a bomb', async () => {
    // Prepare
    const content = (await HOSTILE_ROUND2.find((e) => e.file === 'deflate-bomb-middle.tif')!.make()) as Uint8Array;

    // Act
    const outcome = await inspectGeoTiff(memory(content), { probePixels: true }).catch((error: unknown) => error);

    // Assess
    expect(outcome).toMatchObject({ code: 'TIFF_DECODED_TOO_LARGE', details: { block: 1 } });
    expect((outcome as Error).message).toMatch(/^TIFF_DECODED_TOO_LARGE: strip 1 holds \d+ compressed bytes that decode to more than its declared 16 x 16 pixels/);
  }, 120_000);
});
