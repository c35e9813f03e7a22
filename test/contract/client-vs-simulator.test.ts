/**
 * Contract: the Mapflow client against the local simulator, every endpoint,
 * in both shape modes (the spec's shapes and the real-api-notes.md variants),
 * happy paths and error codes. Uploads use the real GeoTIFFs of the sample
 * test data.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { preprocessingOf } from '../../functions/jobs/steps/upload-image.ts';
import {
  MapflowAuthError,
  MapflowClient,
  MapflowNotFound,
  MapflowRequestError,
  type MapflowClientOptions,
  type ImageRecord,
  type Processing,
  type UploadSource,
} from '../../functions/mapflow/index.ts';

const TOKEN = 'sim-token-5d1e0c7b9a';
const EMAIL = 'bridge@example.com';
/** An image of another account (the simulator's foreignImageIds, played with realShapes only). */
const FOREIGN_IMAGE = '0f0f0f0f-0000-4000-8000-00000000f0re';
const RASTERS = fileURLToPath(new URL('../../samples/rasters/', import.meta.url));

/** About 0.8 km² in Bern. */
const SMALL_AOI = {
  type: 'Polygon',
  coordinates: [
    [
      [7.44, 46.94],
      [7.45, 46.94],
      [7.45, 46.947],
      [7.44, 46.947],
      [7.44, 46.94],
    ],
  ],
};
/** Several thousand km²: above the simulator's default AOI limit of 1,000 km². */
const HUGE_AOI = {
  type: 'Polygon',
  coordinates: [
    [
      [5, 45],
      [7, 45],
      [7, 47],
      [5, 47],
      [5, 45],
    ],
  ],
};
/** A ring that is not closed and too short: invalid GeoJSON. */
const BROKEN_AOI = { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.45, 46.94]]] };

function raster(name: string): UploadSource {
  const path = `${RASTERS}${name}`;
  return { stream: createReadStream(path), size: statSync(path).size, filename: name };
}

function bytes(content: Buffer, filename: string): UploadSource {
  return { stream: Readable.from([content]), size: content.length, filename };
}

/**
 * Uploads and returns the image record. The live service's upload answer is
 * `{message, mosaic_id}` without the image (mapflow-qgis
 * spec/002_E_zoom_selector_api.md): the image is then found in the mosaic
 * once preprocessed (its list shows ready images; the mosaic status shows all).
 */
async function uploadedImage(client: MapflowClient, mosaicId: string | undefined, source: UploadSource, name?: string): Promise<ImageRecord> {
  const answer = mosaicId ? await client.uploadImage(mosaicId, source) : await client.createMosaicWithImage({ name: name ?? 'one-shot', tags: ['x', 'y'] }, source);
  if (answer.image) return answer.image;
  expect(answer.message).toMatch(/successfully uploaded/i);
  for (let attempt = 0; attempt < 200; attempt++) {
    const statuses = await client.getMosaicStatus(answer.mosaicId);
    const ready = statuses.find((s) => s.preprocessingStatus === 'COMPLETED');
    if (ready) return client.getImage(ready.imageId);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the uploaded image never became ready');
}

async function rejectionOf(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    return error as Error & Record<string, unknown>;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Polls a processing until it reaches one of `statuses` (the simulator runs take about a second). */
async function waitFor(client: MapflowClient, id: string, statuses: string[], timeoutMs = 10_000): Promise<Processing> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const processing = await client.getProcessing(id);
    if (statuses.includes(processing.status)) return processing;
    if (Date.now() > deadline) throw new Error(`processing ${id} still ${processing.status}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

describe.each([
  { realShapes: false, auth: { authScheme: 'bearer' } as Partial<MapflowClientOptions> },
  { realShapes: true, auth: { authScheme: 'basic', email: EMAIL } as Partial<MapflowClientOptions> },
])('client against the simulator (realShapes $realShapes)', ({ realShapes, auth }) => {
  let sim: RunningSimulator;
  let client: MapflowClient;
  let buildingsId: string;

  beforeAll(async () => {
    // The live service's QUEUED and AWAITING phases, short: their order is what is checked, not their length.
    // Decoding inline: the contract is the API's; the decoding process has the simulator's own tests.
    sim = await startSimulator({ token: TOKEN, email: EMAIL, realShapes, processingSeconds: 1, queuedSeconds: 0.2, awaitingSeconds: 0.2, seed: 11, foreignImageIds: [FOREIGN_IMAGE], decoder: 'inline' });
    client = new MapflowClient({ baseUrl: sim.url, token: TOKEN, timeoutMs: 10_000, ...auth });
    const status = await client.getUserStatus();
    buildingsId = status.models.find((m) => m.name.includes('Buildings') && !m.name.includes('Aerial'))!.id;
  });
  afterAll(async () => {
    await sim?.close();
  });

  describe('authentication', () => {
    it('accepts Bearer, Basic base64(email:token) and a pre-encoded token', async () => {
      // Prepare
      const preEncoded = Buffer.from(`${EMAIL}:${TOKEN}`).toString('base64');
      const clients = [
        new MapflowClient({ baseUrl: sim.url, token: TOKEN, authScheme: 'bearer' }),
        new MapflowClient({ baseUrl: sim.url, token: TOKEN, email: EMAIL, authScheme: 'basic' }),
        new MapflowClient({ baseUrl: sim.url, token: preEncoded }),
      ];

      // Act
      const statuses = await Promise.all(clients.map((c) => c.getUserStatus()));

      // Assess
      for (const status of statuses) expect(status.models.length).toBeGreaterThan(0);
    });

    it('answers a wrong token with MapflowAuthError (401)', async () => {
      // Prepare
      const wrong = new MapflowClient({ baseUrl: sim.url, token: 'not-the-token', authScheme: 'bearer' });

      // Act
      const error = await rejectionOf(wrong.getUserStatus());

      // Assess
      expect(error).toBeInstanceOf(MapflowAuthError);
      expect(error.status).toBe(401);
      expect(String(error)).not.toContain(TOKEN);
    });
  });

  describe('account', () => {
    it('reads the user status with models, blocks and limits', async () => {
      // Act
      const status = await client.getUserStatus();

      // Assess
      const buildings = status.models.find((m) => m.id === buildingsId)!;
      expect(buildings.pricePerSqKm).toBeGreaterThan(0);
      expect(buildings.blocks.map((b) => b.name)).toEqual(expect.arrayContaining(['Simplification', 'Classification', 'OSM']));
      expect(buildings.blocks.every((b) => typeof b.optional === 'boolean' && typeof b.price === 'number')).toBe(true);
      expect(status.email).toBe(EMAIL);
      expect(status.areaLimitSqM ?? status.credits).toBeGreaterThan(0);
    });

    it('reads the default project with the account settings', async () => {
      // Act
      const project = await client.getDefaultProject();

      // Assess
      expect(project.isDefault).toBe(true);
      expect(project.id).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('reads storage usage in bytes', async () => {
      // Act
      const usage = await client.getStorageUsage();

      // Assess
      expect(usage.limitBytes).toBeGreaterThan(0);
      expect(usage.freeBytes).toBe(usage.limitBytes! - usage.usedBytes);
      if (realShapes) expect(usage.maxUploadFileSize).toBeGreaterThan(0);
    });
  });

  describe('projects', () => {
    it('creates, reads, lists, updates and deletes a project', async () => {
      // Act
      const created = await client.createProject({ name: 'contract', description: 'made by the contract test' });
      const read = await client.getProject(created.id);
      const listed = await client.listProjects();
      await client.updateProject(created.id, { name: 'contract renamed' });
      const renamed = await client.getProject(created.id);
      await client.deleteProject(created.id);
      const gone = await rejectionOf(client.getProject(created.id));

      // Assess
      expect(read).toMatchObject({ id: created.id, name: 'contract' });
      expect(listed.map((p) => p.id)).toContain(created.id);
      expect(renamed.name).toBe('contract renamed');
      expect(gone).toBeInstanceOf(MapflowNotFound);
    });

    it('answers an unknown project with MapflowNotFound', async () => {
      // Act
      const error = await rejectionOf(client.getProject(randomUUID()));

      // Assess
      expect(error.name).toBe('MapflowNotFound');
      expect(error.status).toBe(404);
    });
  });

  describe('processings v2', () => {
    it('estimates, creates, polls, lists, downloads and deletes a processing', async () => {
      // Prepare
      const project = await client.createProject({ name: 'v2 flow' });
      const request = {
        name: 'bern',
        projectId: project.id,
        wdId: buildingsId,
        geometry: SMALL_AOI,
        params: { sourceParams: { dataProvider: { providerName: 'mapbox', zoom: 18 } } },
        meta: { jobId: 'job-42' },
      };

      // Act
      const cost = await client.estimateCost({ wdId: buildingsId, geometry: SMALL_AOI, params: request.params });
      const costByArea = await client.estimateCost({ wdId: buildingsId, areaSqKm: 3 });
      const created = await client.createProcessing(request);
      const listed = await client.listProcessings();
      const inProject = await client.listProjectProcessings(project.id);
      const done = await waitFor(client, created.id, ['OK', 'FAILED']);
      const aois = await client.getProcessingAois(created.id);
      const geojson = JSON.parse(await readAll(await client.downloadResults(created.id))) as { type: string; features: unknown[] };
      const perAoi = JSON.parse(await readAll(await client.downloadResults(created.id, { aoiId: aois[0]!.id }))) as { type: string };
      const full = await client.getProcessingV1(created.id);
      await client.deleteProcessing(created.id);
      const gone = await rejectionOf(client.getProcessing(created.id));

      // Assess
      expect(cost).toBeGreaterThan(0);
      expect(Number.isInteger(cost)).toBe(true);
      expect(costByArea).toBeGreaterThan(0);
      // The live service's first status is null (read as UNPROCESSED); the reference's is IN_PROGRESS.
      expect(created).toMatchObject({ name: 'bern', status: realShapes ? 'UNPROCESSED' : 'IN_PROGRESS', percentCompleted: 0 });
      expect(created.cost).toBe(cost);
      expect(listed.map((p) => p.id)).toContain(created.id);
      expect(inProject.map((p) => p.id)).toEqual([created.id]);
      expect(done).toMatchObject({ status: 'OK', percentCompleted: 100, messages: [] });
      expect(done.reviewStatus.status).toBeNull();
      expect(aois).toHaveLength(1);
      expect(aois[0]!.geometry?.type).toBe('Polygon');
      expect(geojson.type).toBe('FeatureCollection');
      expect(perAoi.type).toBe('FeatureCollection');
      expect(full.meta).toMatchObject({ jobId: 'job-42', 'source-app': 'mapflow-bridge', version: expect.any(String) });
      expect(full.workflowDef?.id).toBe(buildingsId);
      expect(gone).toBeInstanceOf(MapflowNotFound);
    });

    it('refuses an invalid geometry with geometry.Invalid', async () => {
      // Act
      const error = await rejectionOf(
        client.createProcessing({
          name: 'broken',
          wdId: buildingsId,
          geometry: BROKEN_AOI,
          params: { sourceParams: { dataProvider: { providerName: 'mapbox', zoom: 18 } } },
        }),
      );

      // Assess
      // The live mode: the server's BadRequest (no source shows a geometry code on a request: docs/integration-notes.md point 16)
      expect(error).toBeInstanceOf(MapflowRequestError);
      expect(error).toMatchObject({ status: 400, code: realShapes ? 'BAD_REQUEST' : 'geometry.Invalid' });
    });

    it('refuses an area above the AOI limit with TOO_LARGE_PROCESSING', async () => {
      // Act
      const error = await rejectionOf(
        client.createProcessing({
          name: 'huge',
          wdId: buildingsId,
          geometry: HUGE_AOI,
          params: { sourceParams: { dataProvider: { providerName: 'mapbox', zoom: 18 } } },
        }),
      );

      // Assess
      expect(error).toMatchObject({ name: 'MapflowRequestError', status: 400, code: 'TOO_LARGE_PROCESSING' });
      expect(error.params).toHaveProperty('aoiAreaLimit');
    });

    it('refuses a request without a source and a cost without an area', async () => {
      // Act
      const noSource = await rejectionOf(
        client.createProcessing({ name: 'x', wdId: buildingsId, geometry: SMALL_AOI, params: { sourceParams: {} as never } }),
      );
      const noArea = await rejectionOf(client.estimateCost({ wdId: buildingsId }));

      // Assess
      expect(noSource).toMatchObject({ name: 'MapflowRequestError', status: 400 });
      expect(noArea).toMatchObject({ name: 'MapflowRequestError', status: 400 });
    });

    it('reports a failure in messages, restarts it and ends OK', async () => {
      // Prepare
      const created = await client.createProcessing({
        name: 'fail once',
        wdName: 'Buildings',
        geometry: SMALL_AOI,
        params: { sourceParams: { dataProvider: { providerName: 'Mapbox', zoom: 18 } } },
        meta: { simulate: 'fail-once:dataloader.TileNotReadable' },
      });

      // Act: the v2 record of the spec is short, so the messages are read from the full (v1) record.
      await waitFor(client, created.id, ['FAILED', 'OK']);
      const failed = await client.getProcessingV1(created.id);
      await client.restartProcessing(created.id);
      const restarted = await waitFor(client, created.id, ['OK', 'FAILED']);

      // Assess
      expect(failed.status).toBe('FAILED');
      expect(failed.messages[0]).toMatchObject({ code: 'dataloader.TileNotReadable', parameters: { level: 'error' } });
      expect(restarted.status).toBe('OK');
    });

    it('refuses the results of a processing that is not OK', async () => {
      // Prepare
      const created = await client.createProcessing({
        name: 'early',
        wdId: buildingsId,
        geometry: SMALL_AOI,
        params: { sourceParams: { dataProvider: { providerName: 'mapbox', zoom: 18 } } },
      });

      // Act
      const error = await rejectionOf(client.downloadResults(created.id));

      // Assess
      expect(error).toMatchObject({ name: 'MapflowRequestError', status: 409 });
    });
  });

  describe('processings v1', () => {
    it('creates, estimates, renames, moves and lists with the flat params map', async () => {
      // Prepare
      const other = await client.createProject({ name: 'v1 target' });

      // Act
      const cost = await client.estimateCostV1({ wdId: buildingsId, geometry: SMALL_AOI, params: { data_provider: 'mapbox', zoom: '18' } });
      const created = await client.createProcessingV1({ wdId: buildingsId, geometry: SMALL_AOI, name: 'v1', params: { data_provider: 'mapbox', zoom: '18' } });
      const inDefault = await client.listProcessingsV1();
      await client.renameProcessing(created.id, { name: 'v1 renamed', description: 'renamed' });
      await client.updateProcessing(created.id, { description: 'updated' });
      await client.moveProcessing(created.id, other.id);
      const moved = await client.listProjectProcessingsV1(other.id);
      const full = await client.getProcessingV1(created.id);

      // Assess
      expect(cost).toBeGreaterThan(0);
      expect(created.id).toBeTruthy();
      expect(inDefault.map((p) => p.id)).toContain(created.id);
      expect(moved.map((p) => p.id)).toEqual([created.id]);
      expect(full).toMatchObject({ name: 'v1 renamed', description: 'updated', projectId: other.id });
      expect(full.meta).toMatchObject({ 'source-app': 'mapflow-bridge' });
    });
  });

  describe('history', () => {
    it('reads processing stats as JSON and CSV', async () => {
      // Act
      const stats = await client.getProcessingStats({ page: 0, perPage: 5, sort: 'created:desc' });
      const csv = await client.getProcessingStats({ page: 0, perPage: 5 }, 'CSV');

      // Assess
      expect(typeof stats).toBe('object');
      expect((stats as { results: unknown[] }).results.length).toBeGreaterThan(0);
      expect(typeof csv).toBe('string');
      expect((csv as string).split('\n')[0]).toMatch(/id/);
    });
  });

  describe('mosaics and images', () => {
    it('uploads a GeoTIFF into a mosaic and reads it back', async () => {
      // Act
      const mosaic = await client.createMosaic({ name: 'contract mosaic', tags: ['a'] });
      const image = await uploadedImage(client, mosaic.id, raster('cogeo.tif'));
      await client.updateMosaic(mosaic.id, { tags: ['b', 'c'] });
      const readMosaic = await client.getMosaic(mosaic.id);
      const images = await client.listMosaicImages(mosaic.id);
      const readImage = await client.getImage(image.id);
      await client.renameImage(image.id, 'renamed.tif');
      const renamed = await client.getImage(image.id);
      const small = await client.getImagePreview(image.id, 's');
      const usage = await client.getStorageUsage();

      // Assess
      expect(mosaic).toMatchObject({ name: 'contract mosaic', tags: ['a'] });
      expect(image).toMatchObject({ mosaicId: mosaic.id, fileSize: statSync(`${RASTERS}cogeo.tif`).size });
      expect(readMosaic).toMatchObject({ tags: ['b', 'c'], imageCount: 1 });
      expect(images.map((i) => i.id)).toEqual([image.id]);
      expect(readImage.meta_data).toMatchObject({ width: 1024, height: 1024, count: 3 });
      expect(readImage.imageUrl).toMatch(/^s3:\/\//);
      expect(renamed.filename).toBe('renamed.tif');
      expect(small.subarray(0, 2).toString('hex')).toBe('ffd8');
      expect(usage.usedBytes).toBeGreaterThanOrEqual(image.fileSize!);
    });

    it('processes an uploaded image (myImagery) and links it into another mosaic', async () => {
      // Prepare
      const image = await uploadedImage(client, undefined, raster('cogeo.tif'), 'one-shot');
      const target = await client.createMosaic({ name: 'linked' });

      // Act
      const link = await client.linkImage(target.id, image.imageUrl!);
      const linkedImages = await client.listMosaicImages(target.id);
      const oneShot = await client.getMosaic(image.mosaicId!);
      const processing = await client.createProcessing({
        name: 'own imagery',
        wdId: buildingsId,
        geometry: SMALL_AOI,
        params: { sourceParams: { myImagery: { imageIds: [image.id], mosaicId: image.mosaicId } } },
      });

      // Assess
      expect(oneShot).toMatchObject({ name: 'one-shot', tags: ['x', 'y'] });
      expect(link.mosaicId).toBe(target.id);
      expect(linkedImages).toHaveLength(1);
      expect(processing.id).toBeTruthy();
    });

    it('refuses a file that is not a GeoTIFF', async () => {
      // Prepare
      const mosaic = await client.createMosaic({ name: 'not tiff' });

      // Act
      const error = await rejectionOf(client.uploadImage(mosaic.id, bytes(Buffer.from('{"type":"FeatureCollection"}'), 'aoi.tif')));

      // Assess
      expect(error).toBeInstanceOf(MapflowRequestError);
      // mapflow-qgis errors/data_errors.py: FileOpenError = cannot be opened as a GeoTIFF.
      expect(error).toMatchObject({ status: 400, code: 'FileOpenError' });
    });

    it('refuses an image that does not fit its mosaic', async () => {
      // Prepare
      const mosaic = await client.createMosaic({ name: 'mismatch' });
      await client.uploadImage(mosaic.id, raster('cogeo.tif'));

      // Act: the live service takes another CRS or pixel size (it reprojects and resamples), not another band count
      // (mapflow-docs-en source/userguides/reference.rst lines 25-26)
      const error = await rejectionOf(client.uploadImage(mosaic.id, raster(realShapes ? 'RGBA.uint16.tif' : 'RGB.byte.tif')));

      // Assess
      expect(error).toBeInstanceOf(MapflowRequestError);
      expect([413, 422]).toContain(error.status);
      // mapflow-qgis errors/data_errors.py: FileValidationFailed = does not fit the imagery collection.
      expect(error.code).toBe('FileValidationFailed');
    });

    it('deletes images and mosaics, then answers ItemNotFound', async () => {
      // Prepare
      const mosaic = await client.createMosaic({ name: 'doomed' });
      const image = await uploadedImage(client, mosaic.id, raster('cogeo.tif'));

      // Act
      await client.deleteImage(image.id);
      const imageGone = await rejectionOf(client.getImage(image.id));
      await client.deleteMosaic(mosaic.id);
      const mosaicGone = await rejectionOf(client.getMosaic(mosaic.id));

      // Assess
      expect(imageGone).toMatchObject({ name: 'MapflowNotFound', code: 'ItemNotFound' });
      expect(mosaicGone).toMatchObject({ name: 'MapflowNotFound', code: 'ItemNotFound' });
    });

    // mapflow-qgis spec/002_E_zoom_selector_api.md lines 117-118: the status endpoint answers 404 for a missing
    // image and for one the account has no access to; an older service has no such endpoint (404 too).
    it('tells a missing or foreign image from a service without the image status endpoint (issue 25 point 8b)', async () => {
      // Prepare
      const mosaic = await client.createMosaic({ name: 'status-404' });
      const kept = await uploadedImage(client, mosaic.id, raster('cogeo.tif'));
      const doomed = await uploadedImage(client, (await client.createMosaic({ name: 'status-404-doomed' })).id, raster('cogeo.tif'));
      await client.deleteImage(doomed.id);

      // Act
      const keptStatus = await preprocessingOf(client, kept.id);
      const goneError = await rejectionOf(preprocessingOf(client, doomed.id));
      const foreignError = await rejectionOf(preprocessingOf(client, FOREIGN_IMAGE));
      const foreignStatus = await rejectionOf(client.getImageStatus(FOREIGN_IMAGE));
      const foreignImage = await rejectionOf(client.getImage(FOREIGN_IMAGE));

      // Assess: the image there reads ready (live: its status; reference: no endpoint); gone or foreign FAILS
      if (realShapes) expect(keptStatus).toMatchObject({ preprocessingStatus: 'COMPLETED', dataAvailable: true });
      else expect(keptStatus).toBeUndefined();
      expect(goneError).toMatchObject({ code: 'IMAGE_NOT_FOUND' });
      expect(foreignError).toMatchObject({ code: 'IMAGE_NOT_FOUND' });
      expect(foreignStatus).toMatchObject({ status: 404 });
      if (realShapes) {
        expect(foreignStatus).toMatchObject({ code: 'ItemNotFound' });
        expect(foreignImage).toMatchObject({ status: 403, code: 'AccessDenied' });
      } else {
        expect(foreignStatus.code).toBeUndefined();
        expect(foreignImage).toMatchObject({ status: 404, code: 'ItemNotFound' });
      }
    });
  });

  // What only the live service does (docs/integration-notes.md); the reference mode answers 404/405 to its paths.
  describe(realShapes ? 'the live service beyond the reference' : 'the reference without the live paths', () => {
    if (!realShapes) {
      it('answers the newer paths 404/405, and the client falls back to the older ones', async () => {
        // Act
        const pagePath = await fetch(`${sim.url}/projects/page`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
        const statusPath = await fetch(`${sim.url}/rasters/image/x/status`, { headers: { authorization: `Bearer ${TOKEN}` } });
        const projects = await client.listProjects();
        // Assess
        expect(pagePath.status).toBe(405);
        expect(statusPath.status).toBe(404);
        expect(projects.length).toBeGreaterThan(0);
      });
      return;
    }

    it('bills by billingType with the unused counter 0, and names providers and the AOI count limit', async () => {
      // Act
      const status = await client.getUserStatus();
      // Assess
      expect(status).toMatchObject({ billingType: 'CREDITS', remainingAreaSqM: 0, maxAoisPerProcessing: 10 });
      expect(status.credits).toBeGreaterThan(0);
      expect(status.dataProviders.map((p) => p.name)).toContain('Mapbox');
    });

    it('answers an upload without the image, preprocesses it, and lists it once COMPLETED', async () => {
      // Prepare
      const mosaic = await client.createMosaic({ name: 'preprocessed' });
      // Act
      const answer = await client.uploadImage(mosaic.id, raster('cogeo.tif'));
      const listedAtOnce = await client.listMosaicImages(mosaic.id);
      const [pending] = await client.getMosaicStatus(mosaic.id);
      const image = await uploadedImage(client, mosaic.id, raster('cogeo.tif'));
      const status = await client.getImageStatus(image.id);
      const mosaics = await client.listMosaics();
      // Assess
      expect(answer).toMatchObject({ mosaicId: mosaic.id, message: 'Files successfully uploaded' });
      expect(answer.image).toBeUndefined();
      expect(listedAtOnce).toEqual([]);
      expect(['PENDING', 'IN_PROGRESS']).toContain(pending?.preprocessingStatus);
      expect(status).toMatchObject({ preprocessingStatus: 'COMPLETED', dataAvailable: true });
      expect(mosaics.map((m) => m.id)).toContain(mosaic.id);
    });

    it('refuses on the cost call what the server checks (ProviderMinAreaError), and too many AOIs on the create', async () => {
      // Prepare: SMALL_AOI is 0.8 km², sentinel_l2a needs 10 km²; eleven separate squares exceed maxAoisPerProcessing 10
      const squares = Array.from({ length: 11 }, (_, i) => [[[7 + i * 0.01, 46.9], [7.005 + i * 0.01, 46.9], [7.005 + i * 0.01, 46.905], [7 + i * 0.01, 46.905], [7 + i * 0.01, 46.9]]]);
      // Act
      const cost = await rejectionOf(client.estimateCost({ wdId: buildingsId, geometry: SMALL_AOI, params: { sourceParams: { dataProvider: { providerName: 'sentinel_l2a' } } } as never }));
      const create = await rejectionOf(client.createProcessing({ name: 'many', wdId: buildingsId, geometry: { type: 'MultiPolygon', coordinates: squares } as never, params: { sourceParams: { dataProvider: { providerName: 'Mapbox' } } } }));
      // Assess
      expect(cost).toMatchObject({ status: 400, code: 'ProviderMinAreaError', params: { providerName: 'sentinel_l2a', providerMinArea: 10 } });
      expect(create).toBeInstanceOf(MapflowRequestError);
      expect(create.message).toMatch(/Too many AOI geometries/);
    });

    it('pages project processings, and the client reads every page', async () => {
      // Prepare: 105 processings, more than one page of 100
      const project = await client.createProject({ name: 'paged' });
      for (let i = 0; i < 105; i++) {
        await client.createProcessing({ name: `p${i}`, projectId: project.id, wdId: buildingsId, geometry: SMALL_AOI, params: { sourceParams: { dataProvider: { providerName: 'Mapbox' } } } });
      }
      // Act
      const firstPage = (await (await fetch(`${sim.url}/projects/${project.id}/processings/v2/page`, {
        method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ limit: 100, offset: 0 }),
      })).json()) as { results: unknown[]; total: number; count: number };
      const all = await client.listProjectProcessings(project.id);
      // Assess
      expect(firstPage).toMatchObject({ total: 105, count: 100 });
      expect(all.map((p) => p.name)).toContain('p104');
      expect(new Set(all.map((p) => p.id)).size).toBe(105);
    });

    it('reports no storage limit as memoryLimit null', async () => {
      // Prepare
      const unlimited = await startSimulator({ token: TOKEN, email: EMAIL, realShapes: true, limits: { storageLimitBytes: null } });
      const other = new MapflowClient({ baseUrl: unlimited.url, token: TOKEN, authScheme: 'bearer' });
      // Act
      const usage = await other.getStorageUsage().finally(() => unlimited.close());
      // Assess
      expect(usage.limitBytes).toBeUndefined();
      expect(usage.raw).toMatchObject({ memoryLimit: null, memoryFree: null });
    });
  });

  describe('catalog', () => {
    it('searches the catalog and reads scenes and mosaics', async () => {
      // Act
      const result = await client.searchCatalog({ aoi: SMALL_AOI, limit: 20, maxCloudCover: 100 });

      // Assess
      expect(result.images.length).toBeGreaterThan(0);
      for (const product of result.images) {
        expect(['Scene', 'Mosaic']).toContain(product.productType);
        expect(product.id).toBeTruthy();
      }
      if (realShapes) {
        expect(result.total).toBeGreaterThanOrEqual(result.images.length);
        // Scenes arrive as `Image` in the real shapes and are read as Scene.
        expect(result.images.some((p) => p.productType === 'Scene' && p.productTypeRaw === 'Image')).toBe(true);
      }
    });

    it('refuses a search over an invalid AOI', async () => {
      // Act
      const error = await rejectionOf(client.searchCatalog({ aoi: BROKEN_AOI }));

      // Assess
      expect(error).toMatchObject({ name: 'MapflowRequestError', status: 400, code: realShapes ? 'BAD_REQUEST' : 'geometry.Invalid' });
    });
  });
});

describe('client against a faulty simulator', () => {
  let sim: RunningSimulator;
  afterAll(async () => {
    await sim?.close();
  });

  it('rides out 5xx, 429 and resets on reads, and reports lost create answers as MapflowOutcomeUnknown', async () => {
    // Prepare
    sim = await startSimulator({ token: TOKEN, email: EMAIL, faultRate: 0.3, dropAfterCommit: 1, seed: 5, processingSeconds: 1 });
    const client = new MapflowClient({
      baseUrl: sim.url,
      token: TOKEN,
      authScheme: 'bearer',
      retry: { maxAttempts: 10, baseDelayMs: 5, maxDelayMs: 20, maxRetryAfterMs: 2_000 },
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.min(ms, 20))),
    });

    // Act
    const reads = [];
    for (let i = 0; i < 15; i++) reads.push(await client.getUserStatus());
    // Every create that reaches the handler takes effect and loses its answer;
    // a fault before the handler may also end unknown. Try until one was dropped.
    const createErrors: string[] = [];
    for (let i = 0; i < 10 && sim.stats().droppedResponses === 0; i++) {
      createErrors.push((await rejectionOf(client.createProject({ name: 'maybe-made' }))).name);
    }
    const projects = await client.listProjects();

    // Assess
    expect(reads).toHaveLength(15);
    expect(sim.stats().faults).toBeGreaterThan(0);
    expect(sim.stats().droppedResponses).toBeGreaterThan(0);
    expect(createErrors.at(-1)).toBe('MapflowOutcomeUnknown');
    expect(createErrors.every((name) => name === 'MapflowOutcomeUnknown' || name === 'MapflowUnavailable')).toBe(true);
    // The create took effect although its answer was lost: the caller finds it.
    expect(projects.some((p) => p.name === 'maybe-made')).toBe(true);
  }, 30_000);
});
