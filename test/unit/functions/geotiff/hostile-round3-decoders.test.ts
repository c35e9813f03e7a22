/**
 * Issue 38, point 2: the third-round corpus (packages/bench/fixtures/hostile-round3.ts)
 * through Inspect, in process: every decoder bounded before it allocates
 * (the JPEGTables tag, every JPEG frame against its tile, the number of
 * tiles), and the valid files of nine 64 MiB tiles accepted.
 */
import { GeoTIFF } from 'geotiff';
import { describe, expect, it, vi } from 'vitest';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { inspectGeoTiffInProcess } from '../../../../functions/geotiff/index.ts';
import { BlockOverflow, checkJpegTables, MAX_JPEG_TABLES_BYTES } from '../../../../functions/geotiff/limits.ts';
import { HOSTILE_ROUND3 } from '../../../../packages/bench/fixtures/hostile-round3.ts';
import { hostileTiff, jpegFrame } from '../../../../packages/bench/fixtures/tiff.ts';

const memory = (bytes: Uint8Array) => ({ size: bytes.length, read: async (offset: number, length: number) => bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer });

describe('hostile corpus, third round, through Inspect', () => {
  it.each(HOSTILE_ROUND3.filter((entry) => entry.kind === 'geotiff').map((entry) => [entry.file, entry.expectedCode, entry] as const))('%s -> %s', async (_file, expectedCode, entry) => {
    // Prepare
    const bytes = entry.make() as Uint8Array;
    // Act
    const outcome = await inspectGeoTiffInProcess(memory(bytes), { probePixels: true }).then(
      () => 'ACCEPTED',
      (error: unknown) => error,
    );
    // Assess
    if (expectedCode === 'ACCEPTED') {
      expect(outcome).toBe('ACCEPTED');
      return;
    }
    expect(outcome).toBeInstanceOf(InputRejected);
    expect((outcome as InputRejected).code).toBe(expectedCode);
    expect((outcome as InputRejected).message.length).toBeGreaterThan(60);
  }, 120_000);

  it('refuses the JPEGTables frame from the header, without the pixel probe (no decoder is built)', async () => {
    // Prepare
    const bytes = HOSTILE_ROUND3.find((entry) => entry.file === 'jpeg-tables-huge-frame.tif')!.make() as Uint8Array;
    // Act
    const outcome = await inspectGeoTiffInProcess(memory(bytes), { probePixels: false }).catch((error: unknown) => error);
    // Assess
    expect((outcome as InputRejected).code).toBe('TIFF_DECODED_TOO_LARGE');
    expect((outcome as InputRejected).message).toMatch(/JPEGTables/);
  });
});

describe('the block index against the grid', () => {
  it('refuses 100,000 tile offsets for one tile from the raw directory, before geotiff.js parses it (and builds their arrays)', async () => {
    // Prepare
    const bytes = HOSTILE_ROUND3.find((entry) => entry.file === 'tile-offsets-beyond-grid.tif')!.make() as Uint8Array;
    const getImage = vi.spyOn(GeoTIFF.prototype, 'getImage');
    // Act
    const outcome = await inspectGeoTiffInProcess(memory(bytes)).catch((error: unknown) => error);
    // Assess
    expect((outcome as InputRejected).code).toBe('TIFF_CORRUPT');
    expect((outcome as InputRejected).message).toMatch(/100000 tile offsets for an image of 1 tiles/);
    expect(getImage).not.toHaveBeenCalled();
    getImage.mockRestore();
  });

  it('takes a planar image whose index lists a block per band', async () => {
    // Prepare
    const plane = new Uint8Array(16 * 16);
    const bytes = hostileTiff({ width: 16, height: 16, bands: 3, planar: true, blocks: [plane, plane, plane] });
    // Act
    const info = await inspectGeoTiffInProcess(memory(bytes), { probePixels: true });
    // Assess
    expect(info.bands).toBe(3);
  });
});

describe('checkJpegTables', () => {
  it.each([
    ['a frame larger than the block', jpegFrame(512, 256), BlockOverflow],
    ['an empty frame (0 rows)', jpegFrame(256, 0), Error],
    ['tables over their bound', new Uint8Array(MAX_JPEG_TABLES_BYTES + 1), Error],
  ])('refuses %s', (_what, tables, kind) => {
    // Act
    const act = () => checkJpegTables(tables, { width: 256, height: 256 }, 256 * 256 * 3);
    // Assess
    expect(act).toThrow(kind);
  });

  it('takes tables without a frame, and a frame within the block', () => {
    // Prepare
    const tablesOnly = new Uint8Array([0xff, 0xd8, 0xff, 0xdb, 0x00, 0x43, 0x00, ...new Array(64).fill(1), 0xff, 0xd9]);
    // Act
    const act = () => {
      checkJpegTables(tablesOnly, { width: 256, height: 256 }, 256 * 256 * 3);
      checkJpegTables(jpegFrame(256, 256), { width: 256, height: 256 }, 256 * 256 * 3);
    };
    // Assess
    expect(act).not.toThrow();
  });
});
