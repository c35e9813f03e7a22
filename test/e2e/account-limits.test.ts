/**
 * The bad inputs that depend on the account or the route rather than on the
 * file alone, through the whole local pipeline: each ends REJECTED with its
 * code and message, leaves nothing half-made in Mapflow, and creates no
 * processing.
 */
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSyntheticGeoTiff } from '../../packages/bench/fixtures/synthetic-geotiff.ts';
import { MapflowClient } from '../../functions/mapflow/index.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { SAMPLE_DATA, squareAoi, startTestBridge, tempFile } from './helpers.ts';
import { testTmp } from '../support/temp.ts';

const KiB = 1024;

describe('rejections that depend on the account and the route', () => {
  let bridge: LocalBridge;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-limits-'));
    bridge = await startTestBridge({
      // A small account: uploads up to 250 KiB, 400 KiB of storage in all.
      simulator: { processingSeconds: 2, seed: 7, limits: { maxUploadFileSize: 250 * KiB, storageLimitBytes: 400 * KiB } },
      routes: JSON.stringify({
        routes: [
          { name: 'default', prefix: '' },
          { name: 'curated', prefix: 'curated/', mosaicName: 'curated-mosaic' },
          { name: 'nomodel', prefix: 'nomodel/', model: 'Skyscrapers on Mars' },
          { name: 'noprovider', prefix: 'noprovider/', source: { dataProvider: { providerName: 'no-such-provider', zoom: 18 } } },
        ],
      }),
    });
  }, 120_000);
  afterAll(async () => {
    await bridge?.close();
  });

  const created = () => bridge.simulator!.stats().processingsCreated;
  const storageUsed = async (): Promise<number> => {
    const client = new MapflowClient({ baseUrl: bridge.endpoints.mapflow, token: process.env.MAPFLOW_TOKEN!, email: process.env.MAPFLOW_EMAIL });
    const usage = await client.getStorageUsage();
    return usage.usedBytes;
  };

  async function drop(file: string, key: string) {
    const { jobId } = await bridge.putInbox(file, key);
    await bridge.waitForJobs({ timeoutMs: 60_000 });
    return (await bridge.ledger.get(jobId))!;
  }

  it('FILE_TOO_LARGE: an image over the account upload limit', { timeout: 60_000 }, async () => {
    // Prepare: cogeo.tif is 291 KiB
    const before = await storageUsed();
    // Act
    const row = await drop(path.join(SAMPLE_DATA, 'rasters/cogeo.tif'), 'big.tif');
    // Assess
    expect(row.status).toBe('REJECTED');
    expect(row.error?.code).toBe('FILE_TOO_LARGE');
    expect(await storageUsed()).toBe(before);
  });

  it('STORAGE_QUOTA_EXCEEDED: an image that does not fit the storage left', { timeout: 60_000 }, async () => {
    // Prepare: 196 KiB uploads, then 235 KiB would need more than the 204 KiB left
    const first = path.join(dir, 'first.tif');
    const second = path.join(dir, 'second.tif');
    await writeSyntheticGeoTiff(first, { width: 256, height: 256 });
    await writeSyntheticGeoTiff(second, { width: 280, height: 280, originX: 829_000 });
    // Act
    const ok = await drop(first, 'first.tif');
    const row = await drop(second, 'second.tif');
    // Assess
    expect(ok.status).toBe('SUCCEEDED');
    expect(row.status).toBe('REJECTED');
    expect(row.error?.code).toBe('STORAGE_QUOTA_EXCEEDED');
    expect(row.error?.message).toMatch(/storage/i);
    expect(row.imageId).toBeUndefined();
  });

  it('MOSAIC_MISMATCH: an image whose CRS, bands or resolution do not fit a named mosaic', { timeout: 60_000 }, async () => {
    // Prepare: a small EPSG:3857 RGB image in the route's mosaic first
    const small = path.join(dir, 'small.tif');
    await writeSyntheticGeoTiff(small, { width: 64, height: 64, originX: 830_000 });
    const first = await drop(small, 'curated/small.tif');
    // Act: a 4-band uint16 UTM image for the same mosaic
    const row = await drop(path.join(SAMPLE_DATA, 'rasters/RGBA.uint16.tif'), 'curated/rgba.tif');
    // Assess
    expect(first.status).toBe('SUCCEEDED');
    expect(row.status).toBe('REJECTED');
    expect(row.error?.code).toBe('MOSAIC_MISMATCH');
    expect(row.imageId).toBeUndefined();
  });

  it('UNKNOWN_MODEL and UNKNOWN_PROVIDER: a route Mapflow cannot run, with no processing created', { timeout: 60_000 }, async () => {
    // Prepare
    const before = created();
    const aoi = await tempFile('area.geojson', squareAoi({ west: 7.46 }));
    // Act
    const noModel = await drop(aoi, 'nomodel/area.geojson');
    const noProvider = await drop(aoi, 'noprovider/area.geojson');
    // Assess
    expect(noModel.status).toBe('REJECTED');
    expect(noModel.error?.code).toBe('UNKNOWN_MODEL');
    expect(noModel.error?.message).toMatch(/Buildings/); // names the models there are
    expect(noProvider.status).toBe('REJECTED');
    expect(noProvider.error?.code).toBe('UNKNOWN_PROVIDER');
    expect(created()).toBe(before);
  });
});
