/**
 * Issue 38, point 2: the simulator decodes uploads and checks AOIs in a
 * process of its own, never in the one that embeds it (the local bridge's),
 * and every block is bounded before geotiff.js decodes it. The corpus is
 * packages/bench/fixtures/hostile-round3.ts, generated here.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromArrayBuffer } from 'geotiff';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOSTILE_ROUND3, writeRound3Corpus } from '../../bench/fixtures/hostile-round3.ts';
import type { RunningSimulator } from '../src/index.ts';
import { checkDirectory, checkPixelsDecode, DecodeRefused, MAX_ARRAY_DECODED_BYTES, previewDecodable } from '../src/raster-bounds.ts';
import { createDecoder, DecodeRejection } from '../src/decoder.ts';
import { INLINE_VALIDITY_POSITIONS } from '../src/processings.ts';
import { call, fileForm, RASTERS, start, v2Body } from './helpers.ts';

const geotiffs = HOSTILE_ROUND3.filter((entry) => entry.kind === 'geotiff');
let sim: RunningSimulator;
let corpus: string;

beforeAll(async () => {
  corpus = mkdtempSync(join(tmpdir(), 'sim-round3-'));
  writeRound3Corpus(corpus);
  sim = await start({ limits: { maxUploadFileSize: 64 * 1024 * 1024 } });
});

afterAll(async () => {
  await sim?.close();
  rmSync(corpus, { recursive: true, force: true });
});

async function upload(file: string) {
  const mosaic = (await call(sim, 'POST', '/rasters/mosaic', { name: file })).json as { id: string };
  return call(sim, 'POST', `/rasters/mosaic/${mosaic.id}/image`, await fileForm(join(corpus, file)));
}

describe('the decoding process', () => {
  it.each(geotiffs.map((entry) => [entry.file, entry.simulator!] as const))('answers the upload of %s with %s, decoded in a process that is not this one', async (file, outcome) => {
    // Prepare
    const before = sim.decoderStats().tasks;
    // Act
    const answer = await upload(file);
    // Assess
    if (outcome === 'accepted') expect(answer.status, answer.text).toBe(200);
    else expect(answer.json, answer.text).toMatchObject({ detail: { code: outcome } });
    const stats = sim.decoderStats();
    expect(stats.mode).toBe('process');
    expect(stats.tasks).toBe(before + 1);
    expect(stats.pids.length).toBeGreaterThan(0);
    expect(stats.pids).not.toContain(process.pid);
    expect(stats.crashes).toBe(0);
  });

  it('checks a large AOI\'s validity in the decoding process too (a small one in this process, about a millisecond)', async () => {
    // Prepare: a circle of 5,000 vertices, over INLINE_VALIDITY_POSITIONS
    const before = sim.decoderStats().tasks;
    const ring = Array.from({ length: 5_000 }, (_, i) => [7.44 + 0.005 * Math.cos((2 * Math.PI * i) / 5_000), 46.94 + 0.005 * Math.sin((2 * Math.PI * i) / 5_000)]);
    const geometry = { type: 'Polygon', coordinates: [[...ring, ring[0]]] };
    const small = await call(sim, 'POST', '/processings/v2', v2Body());
    const afterSmall = sim.decoderStats().tasks;
    // Act
    const created = await call(sim, 'POST', '/processings/v2', v2Body({ geometry }));
    // Assess
    expect(small.status, small.text).toBe(200);
    expect(afterSmall).toBe(before);
    expect(5_001).toBeGreaterThan(INLINE_VALIDITY_POSITIONS);
    expect(created.status, created.text).toBe(200);
    expect(sim.decoderStats().tasks).toBe(before + 1);
    expect(sim.decoderStats().pids).not.toContain(process.pid);
  });
});

describe('the decoding process\'s memory', () => {
  it('is killed above its resident memory limit, and the upload is answered FileOpenError', async () => {
    // Prepare: a limit every process passes (1 MB), so the kill path runs whatever the file
    const decoder = createDecoder('process', { rssLimitMb: 1 });
    // Act
    const outcome = await decoder.inspect(join(RASTERS, 'cogeo.tif'), { maxPixelCount: 30_000 }).catch((error: unknown) => error);
    await decoder.close();
    // Assess
    expect(outcome).toBeInstanceOf(DecodeRejection);
    expect(outcome).toMatchObject({ code: 'FileOpenError', parameters: { reason: expect.stringMatching(/resident memory \d+ MB over 1 MB/) } });
    expect(decoder.stats()).toMatchObject({ crashes: 1, tasks: 0 });
  });
});

describe('the decoding process\'s life', () => {
  it('answers a task sent right after an idle child was stopped, whatever order the old child\'s exit arrives in', async () => {
    // Prepare: stopped as soon as it is idle
    const decoder = createDecoder('process', { idleMs: 0 });
    const square = { type: 'Polygon' as const, coordinates: [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]] };
    // Act: each task after the previous child's idle stop (a timer of 0 ms), before its exit is reported
    const verdicts = [];
    for (let i = 0; i < 5; i++) {
      verdicts.push(await decoder.geometry(square));
      await new Promise((resolve) => setTimeout(resolve, 0));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const stats = decoder.stats();
    await decoder.close();
    // Assess
    expect(verdicts.every((v) => v.valid)).toBe(true);
    expect(stats).toMatchObject({ tasks: 5, crashes: 0, starts: 5 });
  });
});

describe('bounds before geotiff.js decodes', () => {
  const image = async (file: string) => {
    const bytes = HOSTILE_ROUND3.find((entry) => entry.file === file)!.make() as Uint8Array;
    const tiff = await fromArrayBuffer(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    return { image: await tiff.getImage(), read: async (offset: number, length: number) => bytes.subarray(offset, offset + length) };
  };

  it.each(['packbits-nine-64mib-tiles.tif', 'lzw-nine-64mib-tiles.tif'])('walks the nine 64 MiB tiles of %s without decoding one', async (file) => {
    // Prepare
    const { image: tiff, read } = await image(file);
    // Act
    const counters = await checkPixelsDecode(tiff, read);
    // Assess: geotiff.js would have collected each in a plain array of 512 MiB
    expect(64 * 1024 * 1024).toBeGreaterThan(MAX_ARRAY_DECODED_BYTES);
    expect(counters).toEqual({ decoded: 0, walked: 9, sparse: 0 });
  });

  it('refuses 100,000 tile offsets for one tile from the raw directory, before geotiff.js parses it', async () => {
    // Prepare
    const bytes = HOSTILE_ROUND3.find((entry) => entry.file === 'tile-offsets-beyond-grid.tif')!.make() as Uint8Array;
    const valid = HOSTILE_ROUND3.find((entry) => entry.file === 'lzw-nine-64mib-tiles.tif')!.make() as Uint8Array;
    const reader = (data: Uint8Array) => async (offset: number, length: number) => data.subarray(offset, offset + length);
    // Act
    const outcome = await checkDirectory(reader(bytes)).catch((error: unknown) => error);
    const validOutcome = await checkDirectory(reader(valid)).catch((error: unknown) => error);
    // Assess
    expect(outcome).toBeInstanceOf(DecodeRefused);
    expect((outcome as Error).message).toMatch(/TileOffsets lists 100000 entries for a grid of 1 blocks/);
    expect(validOutcome).toBeUndefined();
  });

  it.each([
    ['jpeg-tables-huge-frame.tif', /JPEGTables tag declares a JPEG frame of 65535 x 65535/],
    ['jpeg-frame-wider-than-tile.tif', /a tile declares a JPEG frame of 4096 x 16/],
    ['tile-offsets-beyond-grid.tif', /TileOffsets lists 100000 entries for a grid of 1 blocks/],
  ])('refuses %s before any block is decoded', async (file, reason) => {
    // Prepare
    const { image: tiff, read } = await image(file);
    const counters = { decoded: 0, walked: 0, sparse: 0 };
    // Act
    const outcome = await checkPixelsDecode(tiff, read, counters).catch((error: unknown) => error);
    // Assess
    expect(outcome).toBeInstanceOf(DecodeRefused);
    expect((outcome as Error).message).toMatch(reason);
    expect(counters.decoded).toBe(0);
  });
});

describe('previews', () => {
  it.each([
    ['jpeg-tables-huge-frame.tif', false],
    ['packbits-nine-64mib-tiles.tif', false],
    ['tile-offsets-beyond-grid.tif', false],
  ])('decode %s only within the bounds (%s: a placeholder otherwise)', async (file, decodable) => {
    // Prepare
    const bytes = HOSTILE_ROUND3.find((entry) => entry.file === file)!.make() as Uint8Array;
    const tiff = await fromArrayBuffer(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    const images = [await tiff.getImage()];
    // Act
    const verdict = await previewDecodable(images, 256, async (offset, length) => bytes.subarray(offset, offset + length));
    // Assess
    expect(verdict).toBe(decodable);
  });

  it('renders a preview of a file within the bounds', async () => {
    // Prepare
    const bytes = readFileSync(join(RASTERS, 'cogeo.tif'));
    const tiff = await fromArrayBuffer(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    const images = await Promise.all(Array.from({ length: await tiff.getImageCount() }, (_, i) => tiff.getImage(i)));
    // Act
    const verdict = await previewDecodable(images, 256, async (offset, length) => new Uint8Array(bytes.subarray(offset, offset + length)));
    // Assess
    expect(verdict).toBe(true);
  });
});

describe('the embedding process', () => {
  it('loads no decoder: outside the decoding process\'s own modules, geotiff, raster-file.ts and raster-bounds.ts are imported as types or dynamically (inline mode) only', () => {
    // Prepare
    const source = join(fileURLToPath(new URL('../src', import.meta.url)));
    const decoding = new Set(['raster-file.ts', 'raster-bounds.ts', 'decoder-child.mjs']);
    const files = readdirSync(source).filter((file) => /\.(ts|mjs)$/.test(file) && !decoding.has(file));
    // Act: static imports that are not `import type`
    const offending = files.flatMap((file) =>
      [...readFileSync(join(source, file), 'utf8').matchAll(/^import (?!type )[^;]*? from '([^']+)'/gm)]
        .map((match) => match[1]!)
        .filter((target) => target === 'geotiff' || target === 'jpeg-js' || /raster-(file|bounds)\.ts$/.test(target))
        .map((target) => `${file} -> ${target}`),
    );
    // Assess: decoder.ts' placeholder JPEG (jpeg-js, an encoder) is the one exception
    expect(offending).toEqual(['decoder.ts -> jpeg-js']);
  });
});
