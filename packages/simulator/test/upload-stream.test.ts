/**
 * The upload is streamed to disk as it arrives: part of a file is already on
 * disk while the client is still sending the rest, and a refused upload leaves
 * nothing behind.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BEARER, call, start, waitFor } from './helpers.ts';
import { testTmp } from '../../../test/support/temp.ts';

const dataDir = mkdtempSync(join(testTmp(), 'sim-stream-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const partFiles = () => readdirSync(join(dataDir, 'files')).filter((name) => name.endsWith('.part'));

describe('streamed upload', () => {
  it('writes the file part to disk while it arrives, then refuses a non-GeoTIFF and removes it', async () => {
    // Prepare
    const sim = await start({ dataDir });
    const mosaic = (await call(sim, 'POST', '/rasters/mosaic', { name: 'stream' })).json;
    const boundary = 'sim-boundary-1234';
    const chunk = Buffer.alloc(1024 * 1024, 0x41);
    const url = new URL(`${sim.url}/rasters/mosaic/${mosaic.id}/image`);
    const req = request(url, { method: 'POST', headers: { authorization: BEARER, 'content-type': `multipart/form-data; boundary=${boundary}` } });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
    });
    try {
      // Act: send 8 MiB of the file part, then wait
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      for (let i = 0; i < 8; i++) req.write(chunk);
      const onDisk = await waitFor(
        async () => partFiles().map((name) => statSync(join(dataDir, 'files', name)).size),
        (sizes) => sizes.length === 1 && sizes[0]! >= 4 * 1024 * 1024,
      );
      for (let i = 0; i < 8; i++) req.write(chunk);
      req.end(`\r\n--${boundary}--\r\n`);
      const { status, body } = await answer;

      // Assess
      expect(onDisk[0]).toBeLessThan(16 * 1024 * 1024);
      expect(status).toBe(400);
      expect(JSON.parse(body).detail.code).toBe('FileOpenError');
      expect(partFiles()).toEqual([]);
      expect((await call(sim, 'GET', '/rasters/memory')).json.used_bytes).toBe(0);
    } finally {
      req.destroy();
      await sim.close();
    }
  });
});
