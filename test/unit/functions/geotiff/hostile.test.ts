/**
 * Issue 11: a small hostile GeoTIFF is refused from its header, or with a
 * bounded look at one block, before geotiff.js decodes anything unbounded.
 */
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { getDecoder } from 'geotiff';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { inspectGeoTiff, type RangeSource } from '../../../../functions/geotiff/index.ts';
import { checkBlockDecodedSize, lzwOutputLength, MAX_BLOCK_DECODED_BYTES } from '../../../../functions/geotiff/limits.ts';
import { bigTiffHeader, deflateBomb, hostileTiff, jpegFrame, lzwBomb, packBitsBomb } from '../../../../packages/bench/fixtures/tiff.ts';

function memorySource(bytes: Uint8Array): RangeSource & { bytesRead: number } {
  const source = {
    size: bytes.length,
    bytesRead: 0,
    async read(offset: number, length: number) {
      source.bytesRead += length;
      return bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer;
    },
  };
  return source;
}

async function rejectionOf(bytes: Uint8Array): Promise<InputRejected> {
  const outcome = await inspectGeoTiff(memorySource(bytes), { probePixels: true }).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(InputRejected);
  return outcome as InputRejected;
}

const rgbTile = (w: number, h: number) => new Uint8Array(w * h * 3).map((_, i) => (i * 7) & 0xff);

describe('decompression bombs', () => {
  it('refuses a 1 MB Deflate strip that inflates to 1 GiB with TIFF_DECODED_TOO_LARGE, inflating no more than the declared strip', async () => {
    // Prepare: 16 x 16 RGB declared (768 bytes), the strip inflates to 1 GiB
    const bomb = await deflateBomb(1024 ** 3);
    const file = hostileTiff({ width: 16, height: 16, compression: 8, blocks: [bomb] });
    const heapBefore = process.memoryUsage().arrayBuffers;

    // Act
    const rejection = await rejectionOf(file);

    // Assess
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
    expect(rejection.code).toBe('TIFF_DECODED_TOO_LARGE');
    expect(rejection.message).toMatch(/strip 0 holds \d+ compressed bytes that decode to more than its declared 16 x 16 pixels \(768 bytes\).*export the image again/);
    expect(process.memoryUsage().arrayBuffers - heapBefore).toBeLessThan(64 * 1024 * 1024);
  }, 120_000);

  it('refuses a bomb in the last tile as well as in the first', async () => {
    // Prepare: 2 x 2 tiles of 16 x 16; the last inflates to 64 MiB
    const good = deflateSync(rgbTile(16, 16));
    const file = hostileTiff({ width: 32, height: 32, compression: 8, tile: [16, 16], blocks: [good, good, good, await deflateBomb(64 * 1024 * 1024)] });

    // Act
    const rejection = await rejectionOf(file);

    // Assess
    expect(rejection.code).toBe('TIFF_DECODED_TOO_LARGE');
    expect(rejection.details).toMatchObject({ block: 3, declaredBytes: 768 });
  });

  it.each([
    ['LZW', 5, lzwBomb(3835 * 3)],
    ['PackBits', 32773, packBitsBomb(200_000)],
    ['JPEG', 7, jpegFrame(65535, 65535)],
  ])('refuses a %s block that decodes beyond its declared size', async (_name, compression, block) => {
    // Prepare
    const file = hostileTiff({ width: 16, height: 16, compression, blocks: [block] });

    // Act
    const rejection = await rejectionOf(file);

    // Assess
    expect(rejection.code).toBe('TIFF_DECODED_TOO_LARGE');
  });

  it('counts LZW output exactly as geotiff.js decodes it', async () => {
    // Prepare
    const decoder = (await getDecoder(5, { tileWidth: 1, tileHeight: 1, planarConfiguration: 1, bitsPerSample: [8], predictor: 1 } as never)) as unknown as {
      decodeBlock(b: ArrayBuffer): ArrayBuffer;
    };
    const stream = lzwBomb(1000);

    // Act
    const decoded = decoder.decodeBlock(stream.slice().buffer);

    // Assess
    expect(lzwOutputLength(stream, Number.MAX_SAFE_INTEGER)).toBe(decoded.byteLength);
  });

  it('passes well-formed Deflate tiles (no false alarm at the declared size)', async () => {
    // Prepare
    const tile = deflateSync(rgbTile(16, 16));
    const file = hostileTiff({ width: 32, height: 32, compression: 8, tile: [16, 16], blocks: [tile, tile, tile, tile] });

    // Act
    const info = await inspectGeoTiff(memorySource(file), { probePixels: true });

    // Assess
    expect(info).toMatchObject({ width: 32, height: 32, bands: 3, tiled: true });
    expect(checkBlockDecodedSize(8, tile, 768)).toBe('fits');
  });
});

describe('declared sizes, checked before anything is decoded', () => {
  it('refuses 65536 x 65536 Deflate tiles with TIFF_BLOCK_TOO_LARGE, reading only the header', async () => {
    // Prepare
    const file = hostileTiff({ width: 65536, height: 65536, compression: 8, tile: [65536, 65536], blocks: [deflateSync(Buffer.alloc(1024))] });
    const source = memorySource(file);

    // Act
    const rejection = (await inspectGeoTiff(source, { probePixels: true }).catch((error: unknown) => error)) as InputRejected;

    // Assess
    expect(rejection.code).toBe('TIFF_BLOCK_TOO_LARGE');
    expect(rejection.message).toMatch(/65536 x 65536 pixels \(12\.0 GiB decoded\); the bridge decodes at most 64\.0 MiB per tile.*gdal_translate -co TILED=YES/);
    expect(source.bytesRead).toBeLessThan(64 * 1024);
  });

  it('refuses a single Deflate strip of a 20000 x 20000 image (1.1 GiB decoded)', async () => {
    // Act
    const rejection = await rejectionOf(hostileTiff({ width: 20000, height: 20000, compression: 8, blocks: [deflateSync(Buffer.alloc(10))] }));

    // Assess
    expect(rejection.code).toBe('TIFF_BLOCK_TOO_LARGE');
    expect(rejection.details?.maxDecodedBytes).toBe(MAX_BLOCK_DECODED_BYTES);
  });

  it('refuses a grid of more tiles than the probe would index with TIFF_TOO_MANY_BLOCKS', async () => {
    // Act: 1,000,000 px square in 16 x 16 tiles = 3.9 billion tiles, one written
    const rejection = await rejectionOf(hostileTiff({ width: 1_000_000, height: 1_000_000, compression: 1, tile: [16, 16], blocks: [rgbTile(16, 16)] }));

    // Assess
    expect(rejection.code).toBe('TIFF_TOO_MANY_BLOCKS');
  });

  it('reports a 2^31 x 2^31 image as IMAGE_TOO_MANY_PIXELS, not NOT_GEOREFERENCED', async () => {
    // Act
    const rejection = await rejectionOf(hostileTiff({ width: 2 ** 31, height: 2 ** 31, compression: 1, blocks: [rgbTile(16, 16)] }));

    // Assess
    expect(rejection.code).toBe('IMAGE_TOO_MANY_PIXELS');
    expect(rejection.message).toMatch(/2147483648 x 2147483648 pixels.*gdal_retile/);
  });

  it('reports a BigTIFF whose directory offset is 2^62 as TIFF_CORRUPT, not NOT_GEOTIFF', async () => {
    // Act
    const rejection = await rejectionOf(bigTiffHeader(2n ** 62n));

    // Assess
    expect(rejection.code).toBe('TIFF_CORRUPT');
    expect(rejection.message).toMatch(/starts like a TIFF but its header is damaged/);
  });

  it('reports a BigTIFF directory offset of 2^50 (safe as a number, beyond any file) as TIFF_CORRUPT', async () => {
    // Act
    const rejection = await rejectionOf(bigTiffHeader(2n ** 50n));

    // Assess
    expect(rejection.code).toBe('TIFF_CORRUPT');
    expect(rejection.message).toMatch(/beyond any possible file/);
  });

  it('refuses an image whose footprint straddles the antimeridian (UTM 60N, 800-900 km east) with CROSSES_ANTIMERIDIAN', async () => {
    // Act: 100 x 100 px of 1 km from x = 800,000 m; 180° lies near x = 833,000 m at the equator
    const rejection = await rejectionOf(
      hostileTiff({ width: 100, height: 100, compression: 1, rowsPerStrip: 1, blocks: Array.from({ length: 100 }, () => rgbTile(100, 1)), geo: { epsg: 32660, origin: [800_000, 100_000], pixel: 1000 } }),
    );

    // Assess
    expect(rejection.code).toBe('CROSSES_ANTIMERIDIAN');
    expect(rejection.message).toMatch(/straddles the antimeridian .* cut it at 180°/);
  });

  it('accepts an image next to the antimeridian that does not cross it (UTM 60N, 700-800 km east)', async () => {
    // Act
    const info = await inspectGeoTiff(
      memorySource(hostileTiff({ width: 100, height: 100, compression: 1, rowsPerStrip: 1, blocks: Array.from({ length: 100 }, () => rgbTile(100, 1)), geo: { epsg: 32660, origin: [700_000, 100_000], pixel: 1000 } })),
      { probePixels: true },
    );

    // Assess
    expect(info.bbox4326[2]).toBeLessThan(180);
    expect(info.bbox4326[0]).toBeGreaterThan(178);
  });

  it('reports tiles of width 0 as TIFF_CORRUPT', async () => {
    // Act
    const rejection = await rejectionOf(hostileTiff({ width: 16, height: 16, compression: 8, tile: [0, 16], blocks: [deflateSync(rgbTile(16, 16))] }));

    // Assess
    expect(rejection.code).toBe('TIFF_CORRUPT');
  });
});
