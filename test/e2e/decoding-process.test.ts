/**
 * Issue 38, point 2, through the whole local bridge: the simulator the bridge
 * embeds decodes uploads in a process of its own, never in the bridge's
 * (this test's process). The valid GeoTIFF of nine 64 MiB PackBits tiles is
 * uploaded (the root route only uploads) and decoded there; the one whose
 * JPEGTables declares a 65,535-pixel frame is refused by Inspect before any
 * upload.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOSTILE_ROUND3 } from '../../packages/bench/fixtures/hostile-round3.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { startTestBridge, tempFile } from './helpers.ts';

const make = (file: string) => Buffer.from(HOSTILE_ROUND3.find((entry) => entry.file === file)!.make() as Uint8Array);

describe('the embedded simulator\'s decoding process', { timeout: 300_000 }, () => {
  let bridge: LocalBridge;
  beforeAll(async () => {
    bridge = await startTestBridge();
  });
  afterAll(async () => {
    await bridge?.close();
  });

  it('decodes the upload of nine 64 MiB tiles in another process, and Inspect refuses the JPEGTables bomb before any upload', async () => {
    // Prepare
    const valid = await tempFile('packbits-nine-64mib-tiles.tif', make('packbits-nine-64mib-tiles.tif'));
    const bomb = await tempFile('jpeg-tables-huge-frame.tif', make('jpeg-tables-huge-frame.tif'));

    // Act
    const uploaded = await bridge.putInbox(valid, 'packbits-nine-64mib-tiles.tif');
    const refused = await bridge.putInbox(bomb, 'jpeg-tables-huge-frame.tif');
    await bridge.waitForJobs({ timeoutMs: 240_000 });

    // Assess
    expect(await bridge.ledger.get(uploaded.jobId)).toMatchObject({ status: 'SUCCEEDED' });
    expect(await bridge.ledger.get(refused.jobId)).toMatchObject({ status: 'REJECTED', error: { code: 'TIFF_DECODED_TOO_LARGE' } });
    const stats = bridge.simulator!.decoderStats();
    expect(stats.mode).toBe('process');
    expect(stats.tasks).toBe(1);
    expect(stats.crashes).toBe(0);
    expect(stats.pids).toHaveLength(1);
    expect(stats.pids).not.toContain(process.pid);
  });
});
