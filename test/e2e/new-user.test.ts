/**
 * What a new user tried on first contact, kept as checks: files the bridge
 * had never seen, through the full local pipeline (one test bridge for the
 * suite), and the command line as a child process.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import bbox from '@turf/bbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { listKeys, readText, ROOT, SAMPLE_DATA, startTestBridge, tempFile } from './helpers.ts';

type Position = [number, number, ...number[]];
type Ring = Position[];

function square(west: number, south: number, size: number): Ring {
  return [
    [west, south],
    [west + size, south],
    [west + size, south + size],
    [west, south + size],
    [west, south],
  ];
}

function featureCollection(geometry: unknown, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: { name: 'area' }, geometry }], ...extra });
}

interface ResultFeature {
  type: 'Feature';
  geometry: { type: string; coordinates: unknown };
}

describe('a new user trying files the bridge has never seen', () => {
  let bridge: LocalBridge;

  beforeAll(async () => {
    bridge = await startTestBridge();
  }, 120_000);
  afterAll(async () => {
    await bridge?.close();
  });

  const processingsCreated = () => bridge.simulator?.stats().processingsCreated ?? 0;

  async function drop(name: string, content: string | Buffer) {
    const file = await tempFile(name, content);
    const { jobId } = await bridge.putInbox(file, name);
    return bridge.waitForJob(jobId, { timeoutMs: 60_000 });
  }

  async function resultFeatures(resultPrefix: string): Promise<ResultFeature[]> {
    const keys = await listKeys(bridge.s3, bridge.bucket, resultPrefix);
    const features: ResultFeature[] = [];
    for (const key of keys.filter((k) => k.endsWith('/result.geojson'))) {
      features.push(...(JSON.parse(await readText(bridge.s3, bridge.bucket, key)) as { features: ResultFeature[] }).features);
    }
    return features;
  }

  it('processes a polygon with a hole and puts no building entirely inside the hole', { timeout: 90_000 }, async () => {
    // Prepare: a 0.01° square in Bern with a 0.003° hole in its middle
    const outer = square(7.44, 46.94, 0.01);
    const hole = square(7.443, 46.943, 0.003).reverse();
    const geojson = JSON.stringify({ type: 'Feature', properties: { name: 'holey' }, geometry: { type: 'Polygon', coordinates: [outer, hole] } });
    // Act
    const row = await drop('hole.geojson', geojson);
    // Assess
    expect(row?.status, JSON.stringify(row?.error)).toBe('SUCCEEDED');
    const features = await resultFeatures(row?.resultPrefix as string);
    expect(features.length).toBeGreaterThan(0);
    for (const feature of features) {
      const [w, s, e, n] = bbox(feature as Parameters<typeof bbox>[0]);
      expect(w >= 7.44 - 1e-9 && e <= 7.45 + 1e-9 && s >= 46.94 - 1e-9 && n <= 46.95 + 1e-9).toBe(true);
      const insideHole = w > 7.443 && e < 7.446 && s > 46.943 && n < 46.946;
      expect(insideHole).toBe(false);
    }
  });

  it('processes a MultiPolygon split at the antimeridian without a result spanning the globe', { timeout: 90_000 }, async () => {
    // Prepare: two small squares either side of 180° near Fiji
    const geometry = {
      type: 'MultiPolygon',
      coordinates: [[square(179.99, -17, 0.01)], [square(-180, -17, 0.01)]],
    };
    // Act
    const row = await drop('antimeridian.geojson', featureCollection(geometry));
    // Assess
    expect(row?.status, JSON.stringify(row?.error)).toBe('SUCCEEDED');
    const features = await resultFeatures(row?.resultPrefix as string);
    expect(features.length).toBeGreaterThan(0);
    for (const feature of features) {
      const [w, , e] = bbox(feature as Parameters<typeof bbox>[0]);
      expect(e - w).toBeLessThan(1);
      expect(Math.abs(w)).toBeGreaterThan(179.98);
    }
  });

  it('rejects bad "mapflow" members naming the key, spending nothing and creating no processing', { timeout: 90_000 }, async () => {
    // Prepare
    const ring = [square(7.44, 46.94, 0.005)];
    const cases = [
      { name: 'budget-override.geojson', mapflow: { creditBudget: 100_000 }, code: 'INVALID_ROUTE_OVERRIDE', says: 'creditBudget' },
      { name: 'zoom-as-text.geojson', mapflow: { zoom: 'eighteen' }, code: 'INVALID_ROUTE_OVERRIDE', says: 'mapflow.zoom' },
      { name: 'typo-key.geojson', mapflow: { modle: 'Roads' }, code: 'INVALID_ROUTE_OVERRIDE', says: 'mapflow.modle' },
      { name: 'unicorns.geojson', mapflow: { model: 'Unicorns' }, code: 'UNKNOWN_MODEL', says: 'Buildings' },
    ];
    const before = processingsCreated();
    // Act
    const rows = await Promise.all(cases.map((c) => drop(c.name, featureCollection({ type: 'Polygon', coordinates: ring }, { mapflow: c.mapflow }))));
    // Assess
    rows.forEach((row, index) => {
      const expected = cases[index]!;
      expect(row?.status, expected.name).toBe('REJECTED');
      expect(row?.error?.code, expected.name).toBe(expected.code);
      expect(row?.error?.message, expected.name).toContain(expected.says);
      expect(row?.actualCost ?? 0).toBe(0);
      expect(row?.reportKey).toMatch(/^failed\//);
    });
    expect(processingsCreated()).toBe(before);
  });

  it('says where the coordinates are wrong: swapped lat/lon, a projected CRS member, text numbers', { timeout: 90_000 }, async () => {
    // Prepare
    const sanFrancisco = square(-122.42, 37.77, 0.01).map(([lon, lat]) => [lat, lon]);
    const lv95 = [[[2_600_000, 1_200_000], [2_600_500, 1_200_000], [2_600_500, 1_200_500], [2_600_000, 1_200_500], [2_600_000, 1_200_000]]];
    const crs = { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::2056' } };
    const asText = [square(7.44, 46.94, 0.005).map((position) => position.map(String))];
    // Act
    const [swapped, projected, text] = await Promise.all([
      drop('latlon.geojson', featureCollection({ type: 'Polygon', coordinates: [sanFrancisco] })),
      drop('lv95.geojson', featureCollection({ type: 'Polygon', coordinates: lv95 }, { crs })),
      drop('strings.geojson', featureCollection({ type: 'Polygon', coordinates: asText })),
    ]);
    // Assess
    expect(swapped?.error?.code).toBe('COORDINATES_OUT_OF_RANGE');
    expect(swapped?.error?.message).toMatch(/swapped/i);
    expect(projected?.error?.code).toBe('COORDINATES_OUT_OF_RANGE');
    expect(projected?.error?.message).toContain('EPSG::2056');
    expect(text?.error?.code).toBe('INVALID_GEOMETRY');
    expect(text?.error?.message).toContain('plain numbers');
  });

  it('accepts what GIS tools write: a UTF-8 BOM, an old CRS84 member, 3D positions', { timeout: 90_000 }, async () => {
    // Prepare
    const polygon = (west: number) => ({ type: 'Polygon', coordinates: [square(west, 46.94, 0.005)] });
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(featureCollection(polygon(7.47)))]);
    const crs84 = featureCollection(polygon(7.48), { crs: { type: 'name', properties: { name: 'urn:ogc:def:crs:OGC:1.3:CRS84' } } });
    const threeD = featureCollection({ type: 'Polygon', coordinates: [square(7.49, 46.94, 0.005).map(([x, y]) => [x, y, 550])] });
    // Act
    const rows = await Promise.all([drop('bom.geojson', withBom), drop('crs84.geojson', crs84), drop('3d.geojson', threeD)]);
    // Assess
    expect(rows.map((row) => row?.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
  });

  it('rejects a cut-short cogeo.tif at any length and a PNG or JPEG named .tif, before uploading', { timeout: 90_000 }, async () => {
    // Prepare
    const cogeo = await readFile(path.join(SAMPLE_DATA, 'rasters/cogeo.tif'));
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000100000001008020000009091683600000000', 'hex');
    const jpeg = Buffer.from('ffd8ffe000104a46494600010100000100010000ffd9', 'hex');
    // Act
    const [cut100, cut10k, cut200k, pngRow, jpegRow] = await Promise.all([
      drop('cut100.tif', cogeo.subarray(0, 100)),
      drop('cut10k.tif', cogeo.subarray(0, 10 * 1024)),
      drop('cut200k.tif', cogeo.subarray(0, 200 * 1024)),
      drop('png.tif', png),
      drop('jpeg.TIF', jpeg),
    ]);
    // Assess
    for (const row of [cut100, cut10k, cut200k]) {
      expect(row?.status).toBe('REJECTED');
      expect(row?.error?.code).toBe('TIFF_TRUNCATED');
      expect(row?.error?.message).toMatch(/cut short/);
      expect(row?.imageId).toBeUndefined();
    }
    expect(pngRow?.error?.code).toBe('NOT_GEOTIFF');
    expect(pngRow?.error?.message).toContain('PNG');
    expect(jpegRow?.error?.code).toBe('NOT_GEOTIFF');
    expect(jpegRow?.error?.message).toContain('JPEG');
  });

  it('handles a key with spaces, "+", "%" and non-ASCII letters in a sub-folder route', { timeout: 90_000 }, async () => {
    // Prepare
    const file = path.join(SAMPLE_DATA, 'rasters/cogeo.tif');
    const key = 'buildings/sub/a b+c% Bärn.TIF';
    // Act
    const { jobId } = await bridge.putInbox(file, key);
    const row = await bridge.waitForJob(jobId, { timeoutMs: 60_000 });
    // Assess
    expect(row?.status, JSON.stringify(row?.error)).toBe('SUCCEEDED');
    expect(row?.input.key).toBe(`inbox/${key}`);
    expect(row?.routeName).toBe('buildings');
    expect(row?.resultPrefix).toBe(`results/${key}/`);
    const keys = await listKeys(bridge.s3, bridge.bucket, row?.resultPrefix as string);
    expect(keys.some((k) => k.endsWith('/result.geojson'))).toBe(true);
  });
});

describe('mapflow-bridge local run, first contact', () => {
  const run = promisify(execFile);
  const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');

  it('stops with exit 2, naming the misspelt key, when the routes file has a typo', { timeout: 90_000 }, async () => {
    // Prepare
    const routes = await tempFile('routes.json', JSON.stringify({ routes: [{ name: 'default', prefix: '', proccessImages: true }] }));
    const aoi = path.join(SAMPLE_DATA, 'aoi/bern-quarters.geojson');
    // Act
    const outcome = await run(process.execPath, [CLI, 'local', 'run', '--json', '--routes', routes, aoi], { cwd: ROOT, timeout: 50_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code, stdout: error.stdout ?? '', stderr: error.stderr ?? '' }),
    );
    // Assess
    expect(outcome.code).toBe(2);
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr).toContain("unknown key 'proccessImages'");
    expect(outcome.stderr).toContain('processImages');
  });
});
