/**
 * Issue 23 (a), time: a decode of the input that runs out of its step's time
 * ends the job REJECTED (INPUT_TOO_COMPLEX, with what to do), not FAILED with
 * Sandbox.Timedout. The bridge runs a copy of the assembly whose Inspect
 * GeoTIFF function has a Timeout of 2 s (Lambda's own field: locally the
 * function is stopped at it, as on AWS); the GeoTIFF dropped holds 3,481
 * distinct Deflate tiles of 768 KiB each (2.6 GiB of pixels in a 2.7 MB file,
 * within every size limit), whose check decodes every one: about 10 s here,
 * far more than the 2 s. The step's decode deadline (functions/core/deadline.ts,
 * from the Lambda context's remaining time) stops the check before the
 * function is killed.
 */
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tiff } from '../../packages/bench/fixtures/tiff.ts';
import { loadLocalAssembly } from '../../packages/local/src/assembly/cache.ts';
import type { CloudFormationTemplate } from '../../packages/local/src/assembly/template.ts';
import { localAssemblySettings, type LocalBridge } from '../../packages/local/src/bridge.ts';
import { testTmp } from '../support/temp.ts';
import { readText, startTestBridge, tempFile } from './helpers.ts';

const INSPECT_TIMEOUT_SECONDS = 2;

/** A 30,000 x 30,000 RGB GeoTIFF of 512 x 512 Deflate tiles, each tile its own copy of the same compressed bytes. */
function slowToCheck(): Uint8Array {
  const side = 30_000;
  const tiles = Math.ceil(side / 512) ** 2;
  const block = deflateSync(Buffer.alloc(512 * 512 * 3), { level: 9 });
  return tiff({ width: side, height: side, compression: 8, tile: [512, 512], blocks: Array<Uint8Array>(tiles).fill(block) });
}

describe('a GeoTIFF whose check outlasts the Inspect GeoTIFF function', () => {
  let bridge: LocalBridge;

  beforeAll(async () => {
    // Prepare: a copy of the test bridge's assembly, Inspect GeoTIFF's Timeout at 2 s
    const source = await loadLocalAssembly(localAssemblySettings({}));
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-decode-timeout-'));
    await cp(source.dir, dir, { recursive: true });
    const file = path.join(dir, source.templateFile);
    const template = JSON.parse(await readFile(file, 'utf8')) as CloudFormationTemplate;
    let changed = 0;
    for (const resource of Object.values(template.Resources)) {
      const variables = (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
      if (variables?.BRIDGE_FUNCTION !== 'inspect-geotiff') continue;
      (resource.Properties as Record<string, unknown>).Timeout = INSPECT_TIMEOUT_SECONDS;
      changed++;
    }
    expect(changed).toBe(1);
    await writeFile(file, JSON.stringify(template));
    bridge = await startTestBridge({ assembly: { dir } });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('ends the job REJECTED INPUT_TOO_COMPLEX with what to do, before anything reached Mapflow, not FAILED with Sandbox.Timedout', async () => {
    // Prepare
    const file = await tempFile('too-slow.tif', Buffer.from(slowToCheck()));

    // Act
    const { jobId } = await bridge.putInbox(file, 'too-slow.tif');
    const row = await bridge.waitForJob(jobId, { timeoutMs: 240_000 });

    // Assess: rejected by the step itself (no Lambda timeout), with the time it had and the fix
    expect(row?.status).toBe('REJECTED');
    expect(row?.error?.code).toBe('INPUT_TOO_COMPLEX');
    expect(row?.error?.message).toMatch(/decoding the image data \(tile \d+ of 3481\) took longer than the 1\.\d s the step had for it/);
    expect(row?.error?.message).toContain('nothing was sent to Mapflow');
    expect(row?.error?.message).toContain('gdal_translate -co COMPRESS=DEFLATE -co TILED=YES');
    expect(row?.statusHistory.map((step) => step.status)).not.toContain('UPLOADING');
    const report = JSON.parse(await readText(bridge.s3, bridge.bucket, 'failed/too-slow.tif/report.json')) as { caught?: { error?: string } };
    expect(report.caught?.error).toBe('InputRejected');
  }, 300_000);
});
