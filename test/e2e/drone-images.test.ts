/**
 * Issue 36 point 1 through the whole local pipeline against the simulator
 * playing the live service (--real-shapes): a drone orthophoto exported with
 * an alpha band, dropped under buildings/, is uploaded and processed, as
 * Geoalert's reference accepts RGBa (mapflow-docs-en reference.rst); the same
 * at 0.05 m is refused before the upload (Buildings takes 0.3-1.5 m/px).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tiff } from '../../packages/bench/fixtures/tiff.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { LIVE_SHAPES, startTestBridge, tempFile } from './helpers.ts';

/** A 64 x 64 px RGBA uint8 GeoTIFF in UTM 32N near Bern at `pixel` m. */
const rgba = (pixel: number): Buffer =>
  Buffer.from(tiff({ width: 64, height: 64, bands: 4, blocks: [new Uint8Array(64 * 64 * 4).fill(90)], geo: { epsg: 32632, origin: [380000, 5200000], pixel } }));

describe('drone orthophotos against --real-shapes', { timeout: 180_000 }, () => {
  let bridge: LocalBridge;
  beforeAll(async () => {
    bridge = await startTestBridge({ simulator: { ...LIVE_SHAPES, processingSeconds: 2, seed: 7 } });
  });
  afterAll(async () => {
    await bridge?.close();
  });

  it('processes a 4-band RGBA uint8 image at 0.5 m under buildings/, and refuses one at 0.05 m before uploading it', async () => {
    // Prepare
    const coarse = await tempFile('drone-05.tif', rgba(0.5));
    const fine = await tempFile('drone-005.tif', rgba(0.05));

    // Act
    const ok = await bridge.putInbox(coarse, 'buildings/drone-05.tif');
    const refused = await bridge.putInbox(fine, 'buildings/drone-005.tif');
    await bridge.waitForJobs({ timeoutMs: 150_000 });
    const okRow = await bridge.ledger.get(ok.jobId);
    const refusedRow = await bridge.ledger.get(refused.jobId);

    // Assess
    expect(okRow?.error).toBeUndefined();
    expect(okRow?.status).toBe('SUCCEEDED');
    expect(refusedRow).toMatchObject({ status: 'REJECTED', error: { code: 'PIXEL_SIZE_TOO_FINE' } });
    expect(refusedRow?.error?.message).toMatch(/0.05 m \(Mapflow resamples it to 0.1 m\), finer than the model's minimum of 0.3 m\/px/);
    expect(bridge.simulator?.stats().processingsCreated).toBe(1);
  });
});
