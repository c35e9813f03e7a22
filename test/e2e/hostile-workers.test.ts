/**
 * Issue 11: in local mode the CPU-heavy checks (GeoJSON parse/validate/
 * dissolve, GeoTIFF inspection) run in worker threads, so the bridge's event
 * loop (other jobs, the progress display) keeps turning meanwhile.
 */
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_POLYGONS, parseAoiOffThread } from '../../functions/aoi/index.ts';
import { inspectGeoTiff, type RangeSource } from '../../functions/geotiff/index.ts';
import { InputRejected } from '../../functions/core/errors.ts';
import { installCpuWorkers, uninstallCpuWorkers, WORKER_TIME_LIMIT_MS } from '../../packages/local/src/engine/workers.ts';
import { squaresGrid } from '../../packages/bench/fixtures/hostile.ts';
import { interlockingCombs } from '../../packages/bench/fixtures/hostile-round2.ts';
import { deflateBomb, hostileTiff } from '../../packages/bench/fixtures/tiff.ts';

/** Counts turns of the event loop while `work` runs: 0 means it blocked the thread throughout. */
async function loopTurnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const spin = () => {
    if (!running) return;
    turns++;
    setImmediate(spin);
  };
  const pending = work();
  setImmediate(spin);
  const result = await pending.finally(() => {
    running = false;
  });
  return { result, turns };
}

const memory = (bytes: Uint8Array): RangeSource => ({ size: bytes.length, read: async (offset, length) => bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer });

describe('CPU-heavy checks in worker threads', () => {
  beforeAll(() => installCpuWorkers());
  afterAll(() => uninstallCpuWorkers());

  it('parses and dissolves the largest accepted GeoJSON while the event loop keeps turning', { timeout: 180_000 }, async () => {
    // Prepare
    const file = new TextEncoder().encode(squaresGrid(MAX_POLYGONS));

    // Act
    const { result, turns } = await loopTurnsDuring(() => parseAoiOffThread(file));

    // Assess
    expect(result.areaSqM / 1e6).toBeCloseTo(0.215, 2);
    expect(turns).toBeGreaterThan(10);
  });

  it('parses a small GeoJSON in a worker too (issue 23: 65 KB of interlocking combs held the loop for 38 s), the worker reused', { timeout: 180_000 }, async () => {
    // Prepare: one square, and a grid
    const small = squaresGrid(1);
    const big = squaresGrid(MAX_POLYGONS);

    // Act
    const first = await loopTurnsDuring(() => parseAoiOffThread(small));
    const second = await loopTurnsDuring(() => parseAoiOffThread(small));
    const offThread = await loopTurnsDuring(() => parseAoiOffThread(big));

    // Assess: each let the loop turn (a worker answered)
    expect(first.result.areaSqM).toBeGreaterThan(0);
    expect(second.result.areaSqM).toBe(first.result.areaSqM);
    // A small file may come back before the loop turns on a fast machine: only the grid must let it turn.
    expect(offThread.turns).toBeGreaterThan(0);
    expect(WORKER_TIME_LIMIT_MS).toBe(120_000);
  });

  it('brings a rejection back from the worker with its code and details', { timeout: 120_000 }, async () => {
    // Act
    const rejection = await parseAoiOffThread(squaresGrid(MAX_POLYGONS + 1)).catch((error: unknown) => error);

    // Assess
    expect(rejection).toBeInstanceOf(InputRejected);
    expect(rejection).toMatchObject({ code: 'TOO_MANY_POLYGONS', details: { polygons: MAX_POLYGONS + 1 } });
    expect((rejection as Error).message).toMatch(/^TOO_MANY_POLYGONS: the file has 2501 polygons/);
  });

  it('inspects a GeoTIFF in a worker, its ranged reads served from this thread', { timeout: 120_000 }, async () => {
    // Prepare
    const good = hostileTiff({ width: 16, height: 16, compression: 8, blocks: [deflateSync(Buffer.alloc(768, 7))] });
    const bomb = hostileTiff({ width: 16, height: 16, compression: 8, blocks: [await deflateBomb(64 * 1024 * 1024)] });

    // Act
    const info = await inspectGeoTiff(memory(good), { probePixels: true });
    const rejection = await inspectGeoTiff(memory(bomb), { probePixels: true }).catch((error: unknown) => error);

    // Assess
    expect(info).toMatchObject({ width: 16, height: 16, epsg: 32632 });
    expect(rejection).toMatchObject({ name: 'InputRejected', code: 'TIFF_DECODED_TOO_LARGE' });
  });
});

describe('a check that overruns its worker\'s time', () => {
  beforeAll(() => installCpuWorkers({ timeLimitMs: 500 }));
  afterAll(() => uninstallCpuWorkers());

  it('is stopped and rejected with INPUT_TOO_COMPLEX, and the next check gets a fresh worker', { timeout: 120_000 }, async () => {
    // Prepare: two interlocking combs under the crossing limit, whose union runs for many seconds
    const slow = interlockingCombs(150);

    // Act
    const rejection = await parseAoiOffThread(slow).catch((error: unknown) => error);
    installCpuWorkers(); // the usual limit again: a fresh worker's start alone can take 0.5 s on a loaded machine
    const next = await parseAoiOffThread(squaresGrid(4));

    // Assess
    expect(rejection).toBeInstanceOf(InputRejected);
    expect(rejection).toMatchObject({ code: 'INPUT_TOO_COMPLEX', details: { limit: 'time', timeLimitMs: 500 } });
    expect((rejection as Error).message).toMatch(/validating and merging the polygons took longer than 0.5 s.*simplify/);
    expect(next.areaSqM).toBeGreaterThan(0);
  });
});

describe('a hostile mapflow member in a worker', () => {
  beforeAll(() => installCpuWorkers());
  afterAll(() => uninstallCpuWorkers());

  it('refuses one nested 5,000 deep with OVERRIDE_TOO_LARGE (it cannot cross the thread boundary)', { timeout: 120_000 }, async () => {
    // Prepare
    const file = `{"type":"Polygon","coordinates":[[[7.44,46.94],[7.45,46.94],[7.45,46.95],[7.44,46.94]]],"mapflow":{"inferenceParams":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}}`;

    // Act
    const rejection = await parseAoiOffThread(file).catch((error: unknown) => error);

    // Assess
    expect(rejection).toMatchObject({ name: 'InputRejected', code: 'OVERRIDE_TOO_LARGE' });
  });
});
