/**
 * Persistence: a simulator restarted on the same data directory keeps its
 * projects, processings (which go on running by the wall clock), mosaics,
 * images, their files and the spent credits.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import jpeg from 'jpeg-js';
import { afterAll, describe, expect, it } from 'vitest';
import { BEARER, call, fileForm, finished, RASTERS, start, v2Body } from './helpers.ts';
import { testTmp } from '../../../test/support/temp.ts';

const dataDir = mkdtempSync(join(testTmp(), 'sim-persist-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('dataDir', () => {
  it('keeps everything across a restart', async () => {
    // Prepare
    const first = await start({ dataDir, processingSeconds: 1 });
    const project = (await call(first, 'POST', '/projects', { name: 'kept' })).json;
    const processing = (await call(first, 'POST', '/processings/v2', v2Body({ projectId: project.id }))).json;
    const mosaic = (await call(first, 'POST', '/rasters/mosaic', { name: 'kept mosaic' })).json;
    const image = (await call(first, 'POST', `/rasters/mosaic/${mosaic.id}/image`, await fileForm(join(RASTERS, 'cogeo.tif')))).json;
    const credits = (await call(first, 'GET', '/user/status')).json.user.credits;
    const defaultProject = (await call(first, 'GET', '/projects/default')).json.id;
    await first.close();

    // Act
    const second = await start({ dataDir, processingSeconds: 1 });
    try {
      const projects = await call(second, 'GET', '/projects');
      const done = await finished(second, processing.id);
      const result = await call(second, 'GET', `/processings/${processing.id}/result`);
      const images = await call(second, 'GET', `/rasters/mosaic/${mosaic.id}/image`);
      const preview = await fetch(`${second.url}/rasters/image/${image.id}/preview/s`, { headers: { authorization: BEARER } });
      const status = await call(second, 'GET', '/user/status');
      const memory = await call(second, 'GET', '/rasters/memory');

      // Assess
      expect(projects.json.map((p: { id: string }) => p.id)).toEqual([defaultProject, project.id]);
      expect(done).toMatchObject({ status: 'OK', projectId: project.id });
      expect(result.json.features.length).toBeGreaterThan(0);
      expect(images.json.map((i: { id: string }) => i.id)).toEqual([image.id]);
      expect(jpeg.decode(Buffer.from(await preview.arrayBuffer())).width).toBe(256);
      expect(status.json.user.credits).toBe(credits);
      expect(memory.json.used_bytes).toBe(image.file_size);
    } finally {
      await second.close();
    }
  });

  it('removes its temporary directory when no dataDir is given', async () => {
    // Prepare
    const sim = await start();
    const mosaic = (await call(sim, 'POST', '/rasters/mosaic', { name: 'temp' })).json;
    // Act
    await sim.close();
    const again = await start();
    const read = await call(again, 'GET', `/rasters/mosaic/${mosaic.id}`);
    await again.close();
    // Assess
    expect(read.status).toBe(404);
  });
});
