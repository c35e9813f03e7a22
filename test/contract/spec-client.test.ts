// A client written only from the interface spec (mapflow-api-spec.md) and the
// notes on the live service (real-api-notes.md), run against the simulator.
// It takes nothing from the project but `startSimulator`: plain fetch, FormData
// and Blob. Every assertion is a promise of the spec (or of the notes where the
// spec leaves a shape open); a failure here is a simulator bug.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import booleanPointInPolygon from '@turf/boolean-point-in-polygon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../packages/simulator/src/index.ts';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const TOKEN = 'T0k3n';
const EMAIL = 'me@example.com';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)$/;
const COGEO = fileURLToPath(new URL('../../samples/rasters/cogeo.tif', import.meta.url));

// A small AOI (about 0.2 km²) in Zurich, and a second one beside it.
const AOI = {
  type: 'Polygon',
  coordinates: [[[8.54, 47.37], [8.545, 47.37], [8.545, 47.375], [8.54, 47.375], [8.54, 47.37]]],
};
const AOI2 = {
  type: 'Polygon',
  coordinates: [[[8.55, 47.37], [8.555, 47.37], [8.555, 47.375], [8.55, 47.375], [8.55, 47.37]]],
};
const MULTI = { type: 'MultiPolygon', coordinates: [AOI.coordinates, AOI2.coordinates] };
const BOWTIE = {
  type: 'Polygon',
  coordinates: [[[8.54, 47.37], [8.545, 47.375], [8.545, 47.37], [8.54, 47.375], [8.54, 47.37]]],
};
// About 111 km x 75 km: far beyond a 1,000 km² AOI limit.
const HUGE = {
  type: 'Polygon',
  coordinates: [[[8, 47], [9, 47], [9, 48], [8, 48], [8, 47]]],
};

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  bytes: Uint8Array;
  json: Json;
}

let base = '';
let close: () => Promise<void> = async () => {};

function basicOf(email: string, token: string): string {
  return `Basic ${Buffer.from(`${email}:${token}`).toString('base64')}`;
}

async function call(
  method: string,
  path: string,
  options: { body?: unknown; form?: FormData; auth?: string | null; query?: Record<string, string | string[]> } = {},
): Promise<Answer> {
  const url = new URL(base + path);
  for (const [key, value] of Object.entries(options.query ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(key, v);
  }
  const headers: Record<string, string> = {};
  if (options.auth !== null) headers.authorization = options.auth ?? `Bearer ${TOKEN}`;
  let body: FormData | string | undefined;
  if (options.form) body = options.form;
  else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(url, { method, headers, body });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  let json: Json = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, bytes, json };
}

async function ok(method: string, path: string, options: Parameters<typeof call>[2] = {}): Promise<Json> {
  const answer = await call(method, path, options);
  expect(answer.status, `${method} ${path}: ${answer.text.slice(0, 300)}`).toBe(200);
  return answer.json;
}

const TERMINAL = new Set(['OK', 'FAILED', 'CANCELLED', 'REFUNDED']);

/** Polls GET /processings/{id}/v2 until a terminal status; returns every status seen. */
async function waitForEnd(id: string, timeoutMs = 20_000): Promise<{ final: Json; seen: string[]; percents: number[] }> {
  const seen: string[] = [];
  const percents: number[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const p = await ok('GET', `/processings/${id}/v2`);
    seen.push(p.status);
    percents.push(p.percentCompleted);
    if (TERMINAL.has(p.status)) return { final: p, seen, percents };
    if (Date.now() > deadline) throw new Error(`processing ${id} still ${p.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function expectIso(value: unknown, what: string): void {
  expect(typeof value, what).toBe('string');
  expect(value as string, what).toMatch(ISO_UTC);
}

function expectMessages(messages: Json): void {
  expect(Array.isArray(messages)).toBe(true);
  for (const m of messages) {
    expect(typeof m.code).toBe('string');
    expect(typeof m.parameters).toBe('object');
    expect(typeof m.parameters.level).toBe('string');
    for (const v of Object.values(m.parameters)) expect(typeof v).toBe('string');
  }
}

/** Creates a v2 processing and returns the create answer (status and body). */
async function createV2(body: Record<string, unknown>): Promise<Answer> {
  return call('POST', '/processings/v2', { body: { name: 'spec client', projectId: defaultProjectId, wdName: 'Buildings', geometry: AOI, ...body } });
}

/** The error codes a processing ended with, or of the request when it was refused. */
async function errorCodesOf(body: Record<string, unknown>): Promise<{ codes: string[]; messages: Json[]; request?: Answer }> {
  const answer = await createV2(body);
  if (answer.status !== 200) {
    return { codes: [answer.json?.code ?? answer.json?.detail?.code], messages: [], request: answer };
  }
  const { final } = await waitForEnd(answer.json.id);
  const full = await ok('GET', `/processings/${answer.json.id}`);
  expect(final.status).toBe('FAILED');
  expectMessages(full.messages);
  return { codes: full.messages.map((m: Json) => m.code), messages: full.messages };
}

let defaultProjectId = '';
let status: Json;
let models: Json[] = [];

function modelNamed(word: string): Json {
  const model = models.find((m) => String(m.name).replace(/^[^A-Za-z]+/, '').startsWith(word));
  expect(model, `model ${word}`).toBeDefined();
  return model;
}

beforeAll(async () => {
  // Decoding inline: the contract is the API's; the decoding process has the simulator's own tests.
  const sim = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 2, seed: 1, port: 0, decoder: 'inline' });
  base = sim.url;
  close = () => sim.close();
  const project = await ok('GET', '/projects/default');
  defaultProjectId = project.id;
  status = await ok('GET', '/user/status');
  models = status.models;
});

afterAll(async () => {
  await close();
});

describe('authentication', () => {
  it('accepts Bearer, Basic base64(email:token) and refuses a wrong or missing token with 401', async () => {
    // Act
    const bearer = await call('GET', '/projects/default');
    const basic = await call('GET', '/projects/default', { auth: basicOf(EMAIL, TOKEN) });
    const wrong = await call('GET', '/projects/default', { auth: 'Bearer nope' });
    const wrongBasic = await call('GET', '/projects/default', { auth: basicOf(EMAIL, 'nope') });
    const none = await call('GET', '/projects/default', { auth: null });
    // Assess
    expect(bearer.status).toBe(200);
    expect(basic.status).toBe(200);
    expect(wrong.status).toBe(401);
    expect(wrongBasic.status).toBe(401);
    expect(none.status).toBe(401);
  });
});

describe('projects', () => {
  it('creates, lists, reads, updates and deletes a project', async () => {
    // Act
    const created = await ok('POST', '/projects', { body: { name: 'Spec project', description: 'from the spec' } });
    const listed = await ok('GET', '/projects');
    const read = await ok('GET', `/projects/${created.id}`);
    await ok('PUT', `/projects/${created.id}`, { body: { name: 'Renamed', description: 'new text' } });
    const renamed = await ok('GET', `/projects/${created.id}`);
    await ok('PUT', `/projects/${created.id}`, { body: { description: 'only the description' } });
    const described = await ok('GET', `/projects/${created.id}`);
    await ok('DELETE', `/projects/${created.id}`);
    const gone = await call('GET', `/projects/${created.id}`);
    const listedAfter = await ok('GET', '/projects');
    // Assess
    expect(created.id).toMatch(UUID);
    expect(created.name).toBe('Spec project');
    expect(created.description).toBe('from the spec');
    expect(Array.isArray(listed)).toBe(true);
    expect(listed.map((p: Json) => p.id)).toContain(created.id);
    expect(read.isDefault).toBe(false);
    expect(Number.isInteger(read.aoiCount)).toBe(true);
    expect(typeof read.area).toBe('number');
    expect(typeof read.progress.status).toBe('string');
    expect(Number.isInteger(read.progress.percentCompleted)).toBe(true);
    expect(Array.isArray(read.progress.details)).toBe(true);
    expect(read.user).toMatchObject({ email: EMAIL, role: 'USER' });
    expect(['string', 'number'], 'read.user.id').toContain(typeof read.user.id); // an id the spec leaves untyped, but present and not null
    expect(typeof read.user.login).toBe('string');
    expectIso(read.user.created, 'user.created');
    expectIso(read.created, 'created');
    expectIso(read.updated, 'updated');
    expect(Array.isArray(read.workflowDefs)).toBe(true);
    // Default models are linked to every new project.
    expect(read.workflowDefs.length).toBeGreaterThanOrEqual(5);
    for (const wd of read.workflowDefs) {
      expect(wd.id).toMatch(UUID);
      expect(typeof wd.name).toBe('string');
      expect(typeof wd.description).toBe('string');
      expectIso(wd.created, 'wd.created');
      expectIso(wd.updated, 'wd.updated');
    }
    expect(renamed.name).toBe('Renamed');
    expect(renamed.description).toBe('new text');
    expect(described.name).toBe('Renamed');
    expect(described.description).toBe('only the description');
    expect(gone.status).toBe(404);
    expect(listedAfter.map((p: Json) => p.id)).not.toContain(created.id);
  });

  it('creates a project without description (description null) and refuses one without name', async () => {
    // Act
    const created = await ok('POST', '/projects', { body: { name: 'No description' } });
    const noName = await call('POST', '/projects', { body: { description: 'x' } });
    // Assess
    expect(created.description ?? null).toBeNull();
    expect(noName.status).toBe(400);
    expect(typeof noName.json.code).toBe('string');
  });

  it('the default project carries the account settings', async () => {
    // Act
    const project = await ok('GET', '/projects/default');
    // Assess
    expect(project.isDefault).toBe(true);
    expect(project.id).toMatch(UUID);
    for (const key of ['areaLimit', 'aoiAreaLimit', 'processedArea']) expect(typeof project.user[key], key).toBe('number');
    expect(typeof project.user.isPremium).toBe('boolean');
    expectIso(project.user.updated, 'user.updated');
    expectIso(project.user.created, 'user.created');
  });
});

describe('user status', () => {
  it('has shape A or B with models, blocks and prices', async () => {
    // Assess
    const shapeA = ['email', 'processedArea', 'remainingArea', 'areaLimit', 'memoryLimit', 'models', 'teams'].every((k) => k in status);
    const shapeB = status.user && typeof status.user.credits === 'number' && status.user.email === EMAIL;
    expect(shapeA || shapeB).toBe(true);
    if (shapeA) {
      expect(status.email).toBe(EMAIL);
      expect(Array.isArray(status.teams)).toBe(true);
    }
    const names = models.map((m) => String(m.name));
    for (const name of ['Buildings', 'Forest', 'Roads', 'Construction']) {
      expect(names.some((n) => n.includes(name)), name).toBe(true);
    }
    expect(names.some((n) => n.includes('Buildings (Aerial)') || n.includes('Aerial'))).toBe(true);
    for (const model of models) {
      expect(model.id).toMatch(UUID);
      expect(typeof model.pricePerSqKm).toBe('number');
      expect(String(model.name)).toMatch(/^\P{L}/u); // starts with an emoji
      for (const block of model.blocks ?? []) {
        expect(typeof block.name).toBe('string');
        expect(typeof block.displayName).toBe('string');
        expect(typeof block.optional).toBe('boolean');
        expect(typeof block.price).toBe('number');
      }
    }
    const buildings = models.find((m) => /Buildings$/.test(m.name));
    const optional = buildings.blocks.filter((b: Json) => b.optional).map((b: Json) => b.name);
    expect(optional).toEqual(expect.arrayContaining(['Simplification', 'Classification', 'OSM']));
    const forest = modelNamed('Forest');
    expect(forest.blocks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'Segmentation', optional: false }),
        expect.objectContaining({ name: 'Heights', optional: true }),
      ]),
    );
  });
});

describe('cost', () => {
  it('v2 answers a bare number for geometry, areaSqKm, and both', async () => {
    // Prepare
    const buildings = modelNamed('Buildings');
    const mandatory = (buildings.blocks ?? []).filter((b: Json) => !b.optional).reduce((s: number, b: Json) => s + b.price, 0);
    // Act
    const byGeometry = await call('POST', '/processing/cost/v2', { body: { wdId: buildings.id, geometry: AOI } });
    const byArea = await call('POST', '/processing/cost/v2', { body: { wdId: buildings.id, areaSqKm: 10 } });
    const both = await call('POST', '/processing/cost/v2', { body: { wdId: buildings.id, areaSqKm: 10, geometry: AOI } });
    const withBlock = await call('POST', '/processing/cost/v2', {
      body: { wdId: buildings.id, areaSqKm: 10, blocks: [{ name: 'Classification', enabled: true }], params: { sourceParams: { dataProvider: { providerName: 'Mapbox', zoom: 18 } } } },
    });
    const neither = await call('POST', '/processing/cost/v2', { body: { wdId: buildings.id } });
    // Assess
    for (const a of [byGeometry, byArea, both, withBlock]) {
      expect(a.status, a.text).toBe(200);
      expect(a.text.trim()).toMatch(/^\d+(\.\d+)?$/);
    }
    expect(Number(byArea.text)).toBeCloseTo(10 * (buildings.pricePerSqKm + mandatory), 5);
    expect(Number(byGeometry.text)).toBeGreaterThan(0);
    expect(Number(both.text)).toBeGreaterThan(0);
    expect(Number(withBlock.text)).toBeGreaterThan(Number(byArea.text));
    expect(neither.status).toBe(400);
    const negative = await call('POST', '/processing/cost/v2', { body: { wdId: buildings.id, areaSqKm: -2 } });
    expect(negative.status).toBe(400);
    expect(negative.json.message).toMatch(/areaSqKm must be/);
  });

  it('v1 answers a bare number for wdId, geometry, params', async () => {
    // Act
    const answer = await call('POST', '/processing/cost', {
      body: { wdId: modelNamed('Roads').id, geometry: AOI, params: { data_provider: 'mapbox', zoom: '18' } },
    });
    // Assess
    expect(answer.status).toBe(200);
    expect(Number(answer.text)).toBeGreaterThan(0);
  });
});

describe('processings v2', () => {
  it('runs a dataProvider processing from IN_PROGRESS 0 % to OK 100 % with the documented fields', async () => {
    // Prepare
    const project = await ok('POST', '/projects', { body: { name: 'v2 project' } });
    // Act
    const created = await createV2({
      projectId: project.id,
      wdName: '🏠 Buildings',
      description: 'with every field',
      params: { sourceParams: { dataProvider: { providerName: 'Mapbox', zoom: 18 } }, inferenceParams: { threshold: 0.5 } },
      blocks: [{ name: 'Simplification', enabled: true }, { name: 'OSM', enabled: false }],
      meta: { 'source-app': 'spec-client', version: '1' },
    });
    const first = await ok('GET', `/processings/${created.json.id}/v2`);
    const { final, seen, percents } = await waitForEnd(created.json.id);
    const all = await ok('GET', '/processings/v2');
    const ofProject = await ok('GET', `/projects/${project.id}/processings/v2`);
    const full = await ok('GET', `/processings/${created.json.id}`);
    // Assess
    expect(created.status).toBe(200);
    expect(created.json.id).toMatch(UUID);
    expect(created.json).toMatchObject({ name: 'spec client', status: 'IN_PROGRESS', percentCompleted: 0 });
    expect(typeof created.json.cost).toBe('number');
    expectIso(created.json.created, 'created');
    for (const k of ['id', 'name', 'status', 'percentCompleted', 'area', 'cost', 'created', 'updated']) expect(first, k).toHaveProperty(k);
    expect(['string', 'number'], 'first.vectorLayer.id').toContain(typeof first.vectorLayer.id); // an id the spec leaves untyped, but present and not null
    expect(first.vectorLayer.tileUrl).toContain('{z}/{x}/{y}');
    expectIso(first.updated, 'updated');
    expect(typeof first.area).toBe('number');
    expect(final).toMatchObject({ status: 'OK', percentCompleted: 100 });
    expect(seen.every((s) => s === 'IN_PROGRESS' || s === 'OK')).toBe(true);
    expect(percents.every((p) => Number.isInteger(p) && p >= 0 && p <= 100)).toBe(true);
    expect([...percents].sort((a, b) => a - b)).toEqual(percents);
    const item = all.find((p: Json) => p.id === created.json.id);
    expect(item).toMatchObject({ name: 'spec client', status: 'OK', percentCompleted: 100 });
    expect(ofProject.map((p: Json) => p.id)).toEqual([created.json.id]);
    // The full v1 record keeps what was sent.
    expect(full.projectId).toBe(project.id);
    expect(full.description).toBe('with every field');
    expect(full.meta).toMatchObject({ 'source-app': 'spec-client', version: '1' });
    expect(full.params).toBeTypeOf('object');
    expect(JSON.stringify(full.params)).toMatch(/mapbox/i);
    expect(full.blocks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'Simplification', enabled: true }),
        expect.objectContaining({ name: 'OSM', enabled: false }),
      ]),
    );
  });

  it('accepts wdId, wdName with or without emoji, and the provider in any case', async () => {
    // Act
    const variants = [
      { wdId: modelNamed('Roads').id, wdName: undefined },
      { wdName: 'Roads' },
      { wdName: '🚗 Roads' },
      { wdName: modelNamed('Forest').name },
      { wdName: 'Buildings (Aerial)', params: { sourceParams: { dataProvider: { providerName: 'mapbox', zoom: 19 } } } },
    ];
    const answers = [];
    for (const v of variants) {
      answers.push(await createV2({ params: { sourceParams: { dataProvider: { providerName: 'mapbox', zoom: 18 } } }, ...v }));
    }
    const full = await ok('GET', `/processings/${answers[4]!.json.id}`);
    // Assess
    for (const a of answers) expect(a.status, a.text).toBe(200);
    expect(full.workflowDef.name).toMatch(/Aerial/);
    expect(full.workflowDef.name).toMatch(/^\P{L}/u);
    expect(typeof full.workflowDef.pricePerSqKm).toBe('number');
    expect(Array.isArray(full.workflowDef.blocks)).toBe(true);
  });

  it('runs userDefined XYZ, TMS, QUADKEY sources to OK', async () => {
    // Act
    const sources = [
      { sourceType: 'XYZ', url: 'https://tiles.example.com/{z}/{x}/{y}.jpg', zoom: 18, crs: 'EPSG:3857', rasterLogin: 'u', rasterPassword: 'p' },
      { sourceType: 'TMS', url: 'https://tiles.example.com/tms/{z}/{x}/{y}.png', zoom: 17, crs: 'EPSG:3857' },
      { sourceType: 'QUADKEY', url: 'https://tiles.example.com/a/{q}.jpeg', zoom: 18, crs: 'EPSG:3857' },
    ];
    const ids: string[] = [];
    for (const userDefined of sources) {
      const a = await createV2({ params: { sourceParams: { userDefined } } });
      expect(a.status, a.text).toBe(200);
      ids.push(a.json.id);
    }
    const finals = await Promise.all(ids.map((id) => waitForEnd(id)));
    // Assess
    for (const f of finals) expect(f.final.status).toBe('OK');
  });

  it('runs a SENTINEL_L2A granule and refuses a string that is not a granule id', async () => {
    // Act
    const good = await createV2({
      wdName: 'Forest',
      params: { sourceParams: { userDefined: { sourceType: 'SENTINEL_L2A', url: 'S2A_MSIL2A_20230612T102601_N0509_R108_T32TMT_20230612T165024', zoom: 14, crs: 'EPSG:4326' } } },
    });
    const bad = await errorCodesOf({
      wdName: 'Forest',
      params: { sourceParams: { userDefined: { sourceType: 'SENTINEL_L2A', url: 'not a granule', zoom: 14, crs: 'EPSG:4326' } } },
    });
    // Assess
    expect(good.status, good.text).toBe(200);
    const { final } = await waitForEnd(good.json.id);
    const full = await ok('GET', `/processings/${good.json.id}`);
    const codes = (full.messages as Json[]).map((m) => m.code);
    expect(codes).not.toContain('source-validator.SentinelInputStringFormatError');
    expect(codes).not.toContain('source-validator.SentinelInputStringKeyError');
    expect(['OK', 'FAILED']).toContain(final.status);
    expect(bad.codes).toContain('source-validator.SentinelInputStringFormatError');
  });

  it('passes AWAITING for an imagerySearch source and ends OK', async () => {
    // Prepare
    const products: Json[] = asProducts(await ok('POST', '/catalog/meta', { body: { aoi: AOI } }));
    const product = products.find((p) => p.productType === 'Mosaic') ?? products[0];
    // Act
    const created = await createV2({ params: { sourceParams: { imagerySearch: { dataProvider: product.providerName, imageIds: [product.id], zoom: 18 } } } });
    expect(created.status, created.text).toBe(200);
    const { final, seen } = await waitForEnd(created.json.id);
    // Assess
    expect(created.json.status).toBe('IN_PROGRESS');
    expect(seen).toContain('AWAITING');
    expect(final.status).toBe('OK');
  });

  it('lists by project and 404s an unknown id', async () => {
    // Act
    const unknown = await call('GET', '/processings/00000000-0000-4000-8000-000000000000/v2');
    const unknownProject = await call('GET', '/projects/00000000-0000-4000-8000-000000000000/processings/v2');
    // Assess
    expect(unknown.status).toBe(404);
    expect(unknownProject.status).toBe(404);
  });

  it('defaults to the default project when projectId is omitted (real-api-notes)', async () => {
    // Act
    const created = await call('POST', '/processings/v2', {
      body: { name: 'no project', wdName: 'Roads', geometry: AOI, params: { sourceParams: { dataProvider: { providerName: 'Mapbox', zoom: 18 } } } },
    });
    const full = await ok('GET', `/processings/${created.json.id}`);
    // Assess
    expect(created.status).toBe(200);
    expect(full.projectId).toBe(defaultProjectId);
  });
});

describe('validation errors (spec Errors table)', () => {
  const provider = (zoom: unknown) => ({ params: { sourceParams: { dataProvider: { providerName: 'Mapbox', zoom } } } });
  const xyz = (sourceType: string, url: unknown, zoom: unknown = 18) => ({ params: { sourceParams: { userDefined: { sourceType, url, zoom, crs: 'EPSG:3857' } } } });

  it('zoom out of 0-22, above and below the model range, not an integer', async () => {
    // Act
    const tooBig = await errorCodesOf(provider(25));
    const high = await errorCodesOf(provider(20));
    const low = await errorCodesOf(provider(12));
    const notInt = await errorCodesOf(xyz('XYZ', 'https://t.example.com/{z}/{x}/{y}.png', 'abc'));
    // Assess
    expect(tooBig.codes).toContain('source-validator.InvalidZoomValue');
    expect(tooBig.messages[0].parameters.actual_zoom).toBe('25');
    expect(high.codes).toContain('source-validator.TooHighZoom');
    const highMessage = high.messages.find((m) => m.code === 'source-validator.TooHighZoom');
    expect(highMessage.parameters).toMatchObject({ max_zoom: '18', actual_zoom: '20' });
    expect(low.codes).toContain('source-validator.TooLowZoom');
    const lowMessage = low.messages.find((m) => m.code === 'source-validator.TooLowZoom');
    expect(lowMessage.parameters).toMatchObject({ min_zoom: '17', actual_zoom: '12' });
    expect(notInt.codes).toContain('source-validator.ZoomMustBeInteger');
  });

  it('tile URLs: placeholders, link, blacklisted map', async () => {
    // Act
    const xyzNoPlaceholders = await errorCodesOf(xyz('XYZ', 'https://t.example.com/tiles.png'));
    const tmsNoPlaceholders = await errorCodesOf(xyz('TMS', 'https://t.example.com/tiles.png'));
    const quadNoQ = await errorCodesOf(xyz('QUADKEY', 'https://t.example.com/{z}/{x}/{y}.png'));
    const notLink = await errorCodesOf(xyz('XYZ', 'ftp://t.example.com/{z}/{x}/{y}.png'));
    const notString = await errorCodesOf(xyz('XYZ', 42));
    const blacklisted = await errorCodesOf(xyz('XYZ', 'https://tile.openstreetmap.org/{z}/{x}/{y}.png'));
    // Assess
    expect(xyzNoPlaceholders.codes).toContain('source-validator.XYZLinkFormatError');
    expect(tmsNoPlaceholders.codes).toContain('source-validator.TMSLinkFormatError');
    expect(quadNoQ.codes).toContain('source-validator.QuadkeyLinkFormatError');
    expect(notLink.codes).toContain('source-validator.UrlMustBeLink');
    expect(notString.codes).toContain('source-validator.UrlMustBeString');
    expect(blacklisted.codes).toContain('source-validator.UrlBlacklisted');
    expect(blacklisted.messages[0].parameters.url).toContain('openstreetmap');
  });

  it('the same error on several AOIs is reported once on the processing and on each AOI', async () => {
    // Act
    const created = await createV2({ geometry: MULTI, ...xyz('XYZ', 'https://t.example.com/tiles.png') });
    await waitForEnd(created.json.id);
    const full = await ok('GET', `/processings/${created.json.id}`);
    const aois = await ok('GET', `/processings/${created.json.id}/aois`);
    // Assess
    expect(full.messages.map((m: Json) => m.code)).toEqual(['source-validator.XYZLinkFormatError']);
    expect(aois).toHaveLength(2);
    for (const aoi of aois) expect(aoi.messages.map((m: Json) => m.code)).toEqual(['source-validator.XYZLinkFormatError']);
  });

  it('a self-intersecting polygon is geometry.Invalid', async () => {
    // Act
    const result = await errorCodesOf({ geometry: BOWTIE, ...provider(18) });
    // Assess
    expect(result.codes).toContain('geometry.Invalid');
  });

  it('an area over the AOI limit is TOO_LARGE_PROCESSING with area and aoiAreaLimit', async () => {
    // Act
    const answer = await createV2({ geometry: HUGE, ...provider(18) });
    // Assess
    expect(answer.status).toBe(400);
    expect(answer.json.code).toBe('TOO_LARGE_PROCESSING');
    expect(typeof answer.json.message).toBe('string');
    expect(Number(answer.json.params.area)).toBeGreaterThan(Number(answer.json.params.aoiAreaLimit));
  });

  it('refuses unknown models and unknown providers as request errors with {code, message}', async () => {
    // Act
    const model = await createV2({ wdName: 'No such model', ...provider(18) });
    const source = await createV2({ params: { sourceParams: { dataProvider: { providerName: 'nope', zoom: 18 } } } });
    // Assess
    expect(model.status).toBeGreaterThanOrEqual(400);
    expect(model.status).toBeLessThan(500);
    expect(typeof model.json.code).toBe('string');
    expect([400, 403]).toContain(source.status);
    expect(typeof source.json.code).toBe('string');
  });
});

describe('processings v1', () => {
  it('creates with the flat params map, defaults name and project, reads the full record, lists, renames, moves, deletes', async () => {
    // Prepare
    const other = await ok('POST', '/projects', { body: { name: 'v1 target' } });
    // Act
    const created = await call('POST', '/processings', {
      body: { geometry: MULTI, wdName: 'Buildings', params: { data_provider: 'Mapbox', zoom: '18' }, meta: { k: 'v' } },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.json.id;
    const full = await ok('GET', `/processings/${id}`);
    const inDefault = await ok('GET', '/processings');
    const inDefaultProject = await ok('GET', `/projects/${defaultProjectId}/processings`);
    await ok('PUT', `/processing/${id}`, { body: { name: 'first rename' } });
    const afterFirst = await ok('GET', `/processings/${id}`);
    await ok('PUT', `/processings/${id}`, { body: { name: 'second rename', description: 'moved', projectId: other.id } });
    const moved = await ok('GET', `/processings/${id}`);
    const inOther = await ok('GET', `/projects/${other.id}/processings`);
    const inDefaultAfter = await ok('GET', '/processings');
    const aois = await ok('GET', `/processings/${id}/aois`);
    await ok('DELETE', `/processings/${id}`);
    const gone = await call('GET', `/processings/${id}`);
    // Assess
    expect(id).toMatch(UUID);
    expect(created.json.status).toBe('IN_PROGRESS');
    expect(created.json.percentCompleted).toBe(0);
    expect(typeof created.json.name).toBe('string');
    expect(created.json.name.length).toBeGreaterThan(0);
    expect(full.projectId).toBe(defaultProjectId);
    for (const key of ['id', 'name', 'description', 'projectId', 'vectorLayer', 'rasterLayer', 'workflowDef', 'aoiCount', 'area', 'cost', 'status', 'reviewStatus', 'rating', 'percentCompleted', 'params', 'blocks', 'meta', 'messages', 'created', 'updated']) {
      expect(full, key).toHaveProperty(key);
    }
    expect(full.vectorLayer).toMatchObject({ id: expect.anything(), name: expect.any(String) });
    expect(typeof full.vectorLayer.tileJsonUrl).toBe('string');
    expect(full.vectorLayer.tileUrl).toContain('{z}/{x}/{y}');
    expect(['string', 'number'], 'full.rasterLayer.id').toContain(typeof full.rasterLayer.id); // an id the spec leaves untyped, but present and not null
    expect(typeof full.rasterLayer.tileJsonUrl).toBe('string');
    expect(full.rasterLayer.tileUrl).toContain('{z}/{x}/{y}');
    for (const key of ['id', 'name', 'description', 'created', 'updated', 'pricePerSqKm', 'blocks']) expect(full.workflowDef, key).toHaveProperty(key);
    expect(full.aoiCount).toBe(2);
    expect(full.reviewStatus === null || typeof full.reviewStatus === 'string').toBe(true);
    expect(full.meta).toMatchObject({ k: 'v' });
    expect(full.params).toMatchObject({ data_provider: 'Mapbox', zoom: '18' });
    expectIso(full.created, 'created');
    expect(inDefault.map((p: Json) => p.id)).toContain(id);
    expect(inDefaultProject.map((p: Json) => p.id)).toContain(id);
    expect(afterFirst.name).toBe('first rename');
    expect(moved).toMatchObject({ name: 'second rename', description: 'moved', projectId: other.id });
    expect(inOther.map((p: Json) => p.id)).toContain(id);
    expect(inDefaultAfter.map((p: Json) => p.id)).not.toContain(id);
    expect(aois).toHaveLength(2);
    for (const aoi of aois) {
      expect(aoi.id).toMatch(UUID);
      expect(typeof aoi.status).toBe('string');
      expect(Number.isInteger(aoi.percentCompleted)).toBe(true);
      expect(aoi.geometry.type).toBe('Polygon');
      expect(typeof aoi.area).toBe('number');
      expectMessages(aoi.messages);
    }
    expect(gone.status).toBe(404);
  });

  it('creates without params (first default data source) and with a catalog product', async () => {
    // Prepare
    const products: Json[] = asProducts(await ok('POST', '/catalog/meta', { body: { aoi: AOI, productTypes: ['MOSAIC'] } }));
    // Act
    const noParams = await call('POST', '/processings', { body: { geometry: AOI, wdId: modelNamed('Buildings').id, name: 'no params' } });
    const product = await call('POST', '/processings', {
      body: { geometry: AOI, wdName: 'Buildings', params: { data_provider: products[0].providerName, url: products[0].id } },
    });
    // Assess
    expect(noParams.status, noParams.text).toBe(200);
    expect(noParams.json.name).toBe('no params');
    expect(product.status, product.text).toBe(200);
    const ends = await Promise.all([waitForEnd(noParams.json.id), waitForEnd(product.json.id)]);
    expect(ends.map((e) => e.final.status)).toEqual(['OK', 'OK']);
  });

  it('restarts a failed processing', async () => {
    // Prepare
    const created = await call('POST', '/processings', {
      body: { geometry: AOI, wdName: 'Buildings', params: { source_type: 'xyz', url: 'https://t.example.com/no-placeholders.png', zoom: '18' } },
    });
    expect(created.status, created.text).toBe(200);
    const { final } = await waitForEnd(created.json.id);
    // Act
    const restart = await call('POST', `/processings/${created.json.id}/restart`);
    // Assess
    expect(final.status).toBe('FAILED');
    expect(restart.status).toBe(200);
  });
});

// ---------------------------------------------------------------- results

function verticesOf(geometry: Json): number[][] {
  const out: number[][] = [];
  const walk = (c: Json) => (typeof c[0] === 'number' ? out.push(c) : c.forEach(walk));
  walk(geometry.coordinates);
  return out;
}

function insideOrOnEdge(point: number[], polygon: Json): boolean {
  if (booleanPointInPolygon(point, polygon)) return true;
  const [lon, lat] = point as [number, number];
  // tolerate a vertex lying on the outline (float rounding)
  const ring = polygon.coordinates[0] as number[][];
  const lons = ring.map((p) => p[0]!);
  const lats = ring.map((p) => p[1]!);
  const eps = 1e-9;
  return lon >= Math.min(...lons) - eps && lon <= Math.max(...lons) + eps && lat >= Math.min(...lats) - eps && lat <= Math.max(...lats) + eps;
}

describe('results', () => {
  it('downloads a FeatureCollection inside the AOI, and per AOI with aoiId', async () => {
    // Prepare
    const created = await createV2({ geometry: MULTI, params: { sourceParams: { dataProvider: { providerName: 'Mapbox', zoom: 18 } } } });
    const early = await call('GET', `/processings/${created.json.id}/result`);
    await waitForEnd(created.json.id);
    const aois = await ok('GET', `/processings/${created.json.id}/aois`);
    // Act
    const all = await call('GET', `/processings/${created.json.id}/result`);
    const one = await call('GET', `/processings/${created.json.id}/result`, { query: { aoiId: aois[0].id } });
    // Assess
    expect(early.status).toBeGreaterThanOrEqual(400);
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toContain('application/octet-stream');
    const collection = JSON.parse(all.text);
    expect(collection.type).toBe('FeatureCollection');
    expect(collection.features.length).toBeGreaterThan(0);
    for (const f of collection.features) {
      expect(Number.isInteger(f.properties.id)).toBe(true);
      expect(typeof f.properties.object_type).toBe('string');
      expect(Number.isInteger(f.properties.area)).toBe(true);
      const inAny = verticesOf(f.geometry).every((v) => insideOrOnEdge(v, AOI) || insideOrOnEdge(v, AOI2));
      expect(inAny).toBe(true);
    }
    const part = JSON.parse(one.text);
    expect(part.type).toBe('FeatureCollection');
    expect(part.features.length).toBeGreaterThan(0);
    expect(part.features.length).toBeLessThan(collection.features.length);
    for (const f of part.features) {
      expect(verticesOf(f.geometry).every((v) => insideOrOnEdge(v, aois[0].geometry))).toBe(true);
    }
  });
});

describe('history', () => {
  it('POST /processings/stats pages, sorts both ways and filters, in JSON and CSV', async () => {
    // Act
    const page1 = await ok('POST', '/processings/stats', { query: { type: 'JSON' }, body: { page: 1, perPage: 3, sort: 'created:desc' } });
    const page1Comma = await ok('POST', '/processings/stats', { body: { page: 1, perPage: 3, sort: 'created,desc' } });
    const page2 = await ok('POST', '/processings/stats', { body: { page: 2, perPage: 3, sort: 'created:desc' } });
    const asc = await ok('POST', '/processings/stats', { body: { page: 1, perPage: 1000, sort: 'created:asc' } });
    const filtered = await ok('POST', '/processings/stats', { body: { page: 1, perPage: 1000, filter: 'status=OK' } });
    const csv = await call('POST', '/processings/stats', { query: { type: 'CSV' }, body: { page: 1, perPage: 5 } });
    // Assess
    const rows = (x: Json): Json[] => (Array.isArray(x) ? x : x.results);
    expect(rows(page1)).toHaveLength(3);
    expect(rows(page1Comma).map((r) => r.id)).toEqual(rows(page1).map((r) => r.id));
    expect(rows(page2).map((r) => r.id)).not.toContain(rows(page1)[0].id);
    const created = rows(page1).map((r) => Date.parse(r.created));
    expect([...created].sort((a, b) => b - a)).toEqual(created);
    const ascCreated = rows(asc).map((r) => Date.parse(r.created));
    expect([...ascCreated].sort((a, b) => a - b)).toEqual(ascCreated);
    expect(rows(filtered).length).toBeGreaterThan(0);
    expect(rows(filtered).every((r) => r.status === 'OK')).toBe(true);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/csv/);
    const lines = csv.text.trim().split(/\r?\n/);
    expect(lines.length).toBe(6);
    expect(lines[0]).toMatch(/id/);
  });
});

// ---------------------------------------------------------------- data interface

function jpegSize(bytes: Uint8Array): { width: number; height: number } {
  expect(bytes[0]).toBe(0xff);
  expect(bytes[1]).toBe(0xd8);
  let i = 2;
  while (i < bytes.length) {
    if (bytes[i] !== 0xff) throw new Error('not a JPEG marker');
    const marker = bytes[i + 1]!;
    const length = (bytes[i + 2]! << 8) | bytes[i + 3]!;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (bytes[i + 5]! << 8) | bytes[i + 6]!, width: (bytes[i + 7]! << 8) | bytes[i + 8]! };
    }
    i += 2 + length;
  }
  throw new Error('no SOF marker');
}

async function cogeoForm(): Promise<FormData> {
  const form = new FormData();
  form.append('file', new Blob([await readFile(COGEO)], { type: 'image/tiff' }), 'cogeo.tif');
  return form;
}

function parseWktPolygon(wkt: string): Json {
  const match = /^POLYGON\s*\(\((.+)\)\)$/i.exec(wkt.trim());
  expect(match, wkt).not.toBeNull();
  const ring = match![1]!.split(',').map((pair) => pair.trim().split(/\s+/).map(Number));
  return { type: 'Polygon', coordinates: [ring] };
}

describe('data interface', () => {
  it('mosaic and image lifecycle, previews, storage, myImagery and v1 local processings', async () => {
    // Prepare
    const memoryBefore = await ok('GET', '/rasters/memory');
    // Act: mosaic
    const mosaic = await ok('POST', '/rasters/mosaic', { body: { name: 'spec mosaic', tags: ['a', 'b'] } });
    const empty = await ok('GET', `/rasters/mosaic/${mosaic.id}`);
    await ok('PUT', `/rasters/mosaic/${mosaic.id}`, { body: { tags: ['c'] } });
    const retagged = await ok('GET', `/rasters/mosaic/${mosaic.id}`);
    const uploaded = await ok('POST', `/rasters/mosaic/${mosaic.id}/image`, { form: await cogeoForm() });
    const withOne = await ok('GET', `/rasters/mosaic/${mosaic.id}`);
    const images = await ok('GET', `/rasters/mosaic/${mosaic.id}/image`);
    const image = await ok('GET', `/rasters/image/${uploaded.id}`);
    const memoryAfter = await ok('GET', '/rasters/memory');
    const small = await call('GET', `/rasters/image/${uploaded.id}/preview/s`);
    const large = await call('GET', `/rasters/image/${uploaded.id}/preview/l`);
    // Assess: mosaic
    expect(mosaic.id).toMatch(UUID);
    expect(mosaic).toMatchObject({ name: 'spec mosaic', tags: ['a', 'b'] });
    expectIso(mosaic.created_at, 'created_at');
    expect(empty.image_count).toBe(0);
    expect(retagged.tags).toEqual(['c']);
    expect(retagged.name).toBe('spec mosaic');
    expect(withOne.image_count).toBe(1);
    // Assess: image
    expect(uploaded.id).toMatch(UUID);
    expect(uploaded.mosaic_id).toBe(mosaic.id);
    expect(uploaded.filename).toBe('cogeo.tif');
    expect(uploaded.file_size).toBe((await readFile(COGEO)).length);
    expectIso(uploaded.uploaded_at, 'uploaded_at');
    expect(images).toHaveLength(1);
    for (const record of [images[0], image]) {
      expect(record.id).toBe(uploaded.id);
      expect(record.meta_data.crs).toMatch(/3857/);
      expect(record.meta_data).toMatchObject({ width: 1024, height: 1024, count: 3, dtypes: ['uint8', 'uint8', 'uint8'] });
      expect(record.meta_data.pixel_size).toHaveLength(2);
      expect(record.meta_data.pixel_size[0]).toBeCloseTo(0.597, 2);
      expect('nodata' in record.meta_data).toBe(true);
      expect(record.footprint).toMatch(/^POLYGON/);
      expect(typeof record.preview_url_s).toBe('string');
      expect(typeof record.preview_url_l).toBe('string');
      expect(record.image_url).toMatch(/^s3:\/\//);
      expect(typeof record.cog_link).toBe('string');
      expect(typeof record.checksum).toBe('string');
    }
    // Assess: storage and previews
    for (const k of ['used_bytes', 'limit_bytes']) expect(Number.isInteger(memoryAfter[k]), k).toBe(true);
    for (const k of ['used_gb', 'limit_gb', 'usage_percent']) expect(typeof memoryAfter[k], k).toBe('number');
    expect(memoryAfter.used_bytes - memoryBefore.used_bytes).toBeGreaterThanOrEqual(uploaded.file_size);
    expect(memoryAfter.usage_percent).toBeCloseTo((memoryAfter.used_bytes / memoryAfter.limit_bytes) * 100, 3);
    expect(small.status).toBe(200);
    expect(small.headers.get('content-type')).toBe('image/jpeg');
    expect(jpegSize(small.bytes)).toEqual({ width: 256, height: 256 });
    expect(large.headers.get('content-type')).toBe('image/jpeg');
    expect(jpegSize(large.bytes)).toEqual({ width: 1024, height: 1024 });

    // Act: process the uploaded image (v2 myImagery, by ids, by mosaic only; v1 local)
    const footprint = parseWktPolygon(image.footprint);
    const [minLon, minLat] = footprint.coordinates[0].reduce((a: number[], p: number[]) => [Math.min(a[0]!, p[0]!), Math.min(a[1]!, p[1]!)], [Infinity, Infinity]);
    const [maxLon, maxLat] = footprint.coordinates[0].reduce((a: number[], p: number[]) => [Math.max(a[0]!, p[0]!), Math.max(a[1]!, p[1]!)], [-Infinity, -Infinity]);
    const cx = (minLon + maxLon) / 2;
    const cy = (minLat + maxLat) / 2;
    const dx = (maxLon - minLon) / 4;
    const dy = (maxLat - minLat) / 4;
    const inside = { type: 'Polygon', coordinates: [[[cx - dx, cy - dy], [cx + dx, cy - dy], [cx + dx, cy + dy], [cx - dx, cy + dy], [cx - dx, cy - dy]]] };
    const byIds = await createV2({ geometry: inside, params: { sourceParams: { myImagery: { imageIds: [uploaded.id], mosaicId: mosaic.id } } } });
    const byMosaic = await createV2({ geometry: inside, params: { sourceParams: { myImagery: { mosaicId: mosaic.id } } } });
    const v1Local = await call('POST', '/processings', {
      body: { geometry: inside, wdName: 'Buildings', params: { source_type: 'local', url: image.image_url } },
    });
    const outside = await errorCodesOf({ geometry: AOI, params: { sourceParams: { myImagery: { imageIds: [uploaded.id] } } } });
    // Assess
    for (const a of [byIds, byMosaic, v1Local]) expect(a.status, a.text).toBe(200);
    const ends = await Promise.all([byIds, byMosaic, v1Local].map((a) => waitForEnd(a.json.id)));
    expect(ends.map((e) => e.final.status)).toEqual(['OK', 'OK', 'OK']);
    expect(outside.codes).toContain('source-validator.NoDataInAOI');

    // Act: link, rename, create-with-image
    const link = await ok('POST', `/rasters/mosaic/${mosaic.id}/link-image`, { body: { url: image.image_url } });
    const httpLink = await call('POST', `/rasters/mosaic/${mosaic.id}/link-image`, { body: { url: 'https://example.com/x.tif' } });
    await ok('PUT', `/rasters/image/${uploaded.id}`, { query: { name: 'renamed.tif' } });
    const renamed = await ok('GET', `/rasters/image/${uploaded.id}`);
    const withImage = await call('POST', '/rasters/mosaic/image', { query: { name: 'made with image', tags: ['x', 'y'] }, form: await cogeoForm() });
    // Assess
    expect(typeof link.message).toBe('string');
    expect(link.mosaic_id).toBe(mosaic.id);
    const noUrl = await call('POST', `/rasters/mosaic/${mosaic.id}/link-image`, { body: {} });
    expect(noUrl.status).toBe(400);
    expect(noUrl.json.detail.parameters.message).toMatch(/url is required/);
    expect(httpLink.status).toBe(400);
    expect(typeof httpLink.json.detail.code).toBe('string');
    expect(typeof httpLink.json.detail.parameters).toBe('object');
    expect(renamed.filename).toBe('renamed.tif');
    expect(withImage.status, withImage.text).toBe(200);
    const newMosaicId = withImage.json?.mosaic_id ?? withImage.json?.id;
    const newMosaic = await ok('GET', `/rasters/mosaic/${newMosaicId}`);
    expect(newMosaic).toMatchObject({ name: 'made with image', tags: ['x', 'y'], image_count: 1 });

    // Act: delete
    await ok('DELETE', `/rasters/image/${uploaded.id}`);
    const imageGone = await call('GET', `/rasters/image/${uploaded.id}`);
    await ok('DELETE', `/rasters/mosaic/${mosaic.id}`);
    const mosaicGone = await call('GET', `/rasters/mosaic/${mosaic.id}`);
    // Assess
    expect(imageGone.status).toBe(404);
    expect(typeof imageGone.json.detail.code).toBe('string');
    expect(typeof imageGone.json.detail.parameters).toBe('object');
    expect(mosaicGone.status).toBe(404);
    expect(typeof mosaicGone.json.detail.code).toBe('string');
  });

  it('refuses an upload without a part named file, and a missing mosaic name, as {detail:{code,parameters}}', async () => {
    // Prepare
    const mosaic = await ok('POST', '/rasters/mosaic', { body: { name: 'm' } });
    const form = new FormData();
    form.append('image', new Blob([await readFile(COGEO)]), 'cogeo.tif');
    // Act
    const wrongPart = await call('POST', `/rasters/mosaic/${mosaic.id}/image`, { form });
    const noName = await call('POST', '/rasters/mosaic', { body: { tags: [] } });
    // Assess
    expect(mosaic.tags).toEqual([]);
    for (const a of [wrongPart, noName]) {
      expect(a.status).toBeGreaterThanOrEqual(400);
      expect(a.status).toBeLessThan(500);
      expect(typeof a.json.detail.code).toBe('string');
      expect(typeof a.json.detail.parameters).toBe('object');
    }
  });
});

// ---------------------------------------------------------------- catalog

function asProducts(answer: Json): Json[] {
  return Array.isArray(answer) ? answer : answer.images;
}

function checkProduct(p: Json): void {
  expect(typeof p.id).toBe('string');
  expect(['Scene', 'Mosaic']).toContain(p.productType);
  expectIso(p.acquisitionDate, 'acquisitionDate');
  for (const k of ['pixelResolution', 'cloudCover', 'offNadirAngle']) expect(typeof p[k], k).toBe('number');
  for (const k of ['sensor', 'colorBandOrder', 'providerName', 'previewUrl']) expect(typeof p[k], k).toBe('string');
  if (p.productType === 'Scene') {
    expect(p.previewType).toBe('png');
    expect(p.footprint.type).toBe('Polygon');
  } else {
    expect(p.previewType).toBe('xyz');
    expect(p.previewUrl).toContain('{z}/{x}/{-y}');
    expect(p.footprint.type).toBe('MultiPolygon');
  }
}

describe('catalog', () => {
  const search = async (extra: Record<string, unknown>) => asProducts(await ok('POST', '/catalog/meta', { body: { aoi: AOI, ...extra } }));

  it('answers products of the documented shape; default limit 100', async () => {
    // Act
    const all = await search({});
    // Assess
    expect(all.length).toBeGreaterThan(0);
    expect(all.length).toBeLessThanOrEqual(100);
    all.forEach(checkProduct);
  });

  it('applies every filter', async () => {
    // Prepare
    const all = await search({});
    const dates = all.map((p) => p.acquisitionDate).sort();
    const from = dates[Math.floor(dates.length / 4)];
    const to = dates[Math.floor((dates.length * 3) / 4)];
    // Act
    const byDate = await search({ acquisitionDateFrom: from, acquisitionDateTo: to });
    const byResolution = await search({ minResolution: 0.4, maxResolution: 0.6 });
    const byCloud = await search({ maxCloudCover: 10 });
    const byNadir = await search({ minOffNadirAngle: 5, maxOffNadirAngle: 20 });
    const byIntersection = await search({ minAoiIntersectionPercent: 100 });
    const page = await search({ limit: 5, offset: 3, sortBy: 'ACQUISITION_DATE', sortOrder: 'ASC' });
    const ascAll = await search({ sortBy: 'ACQUISITION_DATE', sortOrder: 'ASC' });
    const desc = await search({ sortBy: 'ACQUISITION_DATE', sortOrder: 'DESC' });
    const available = await search({ hideUnavailable: true });
    const providers = [...new Set(all.map((p) => p.providerName))];
    const byProvider = await search({ dataProviders: [providers[0]] });
    const images = await search({ productTypes: ['IMAGE'] });
    const mosaics = await search({ productTypes: ['MOSAIC'] });
    const both = await search({ productTypes: ['IMAGE', 'MOSAIC'] });
    // Assess
    expect(byDate.length).toBeGreaterThan(0);
    expect(byDate.length).toBeLessThan(all.length);
    expect(byDate.every((p) => p.acquisitionDate >= from && p.acquisitionDate <= to)).toBe(true);
    expect(byResolution.length).toBeGreaterThan(0);
    expect(byResolution.every((p) => p.pixelResolution >= 0.4 && p.pixelResolution <= 0.6)).toBe(true);
    expect(byCloud.length).toBeGreaterThan(0);
    expect(byCloud.length).toBeLessThan(all.length);
    expect(byCloud.every((p) => p.cloudCover <= 10)).toBe(true);
    expect(byNadir.length).toBeGreaterThan(0);
    expect(byNadir.every((p) => Math.abs(p.offNadirAngle) >= 5 && Math.abs(p.offNadirAngle) <= 20)).toBe(true);
    expect(byNadir.length).toBeLessThan(all.length);
    expect(byIntersection.length).toBeGreaterThan(0);
    expect(byIntersection.length).toBeLessThan(all.length);
    for (const p of byIntersection) {
      // every vertex of the AOI lies within the footprint
      const polygons = p.footprint.type === 'Polygon' ? [p.footprint.coordinates] : p.footprint.coordinates;
      const covered = AOI.coordinates[0]!.every((v) => polygons.some((c: Json) => insideOrOnEdge(v, { type: 'Polygon', coordinates: c })));
      expect(covered).toBe(true);
    }
    expect(page).toHaveLength(5);
    expect(page.map((p) => p.id)).toEqual(ascAll.slice(3, 8).map((p) => p.id));
    const ascDates = ascAll.map((p) => Date.parse(p.acquisitionDate));
    expect([...ascDates].sort((a, b) => a - b)).toEqual(ascDates);
    const descDates = desc.map((p) => Date.parse(p.acquisitionDate));
    expect([...descDates].sort((a, b) => b - a)).toEqual(descDates);
    expect(available.length).toBeGreaterThan(0);
    expect(available.length).toBeLessThanOrEqual(all.length);
    expect(byProvider.length).toBeGreaterThan(0);
    expect(byProvider.every((p) => p.providerName === providers[0])).toBe(true);
    expect(images.length).toBeGreaterThan(0);
    expect(images.every((p) => p.productType === 'Scene')).toBe(true);
    expect(mosaics.length).toBeGreaterThan(0);
    expect(mosaics.every((p) => p.productType === 'Mosaic')).toBe(true);
    expect(both.length).toBe(images.length + mosaics.length);
  });

  it('previewUrl resolves: a PNG for a Scene, a PNG tile for a Mosaic template', async () => {
    // Prepare
    const all = await search({});
    const scene = all.find((p) => p.previewType === 'png');
    const mosaic = all.find((p) => p.previewType === 'xyz');
    const tileUrl = mosaic.previewUrl.replace('{z}', '17').replace('{x}', '68629').replace('{-y}', '85434');
    // Act
    const answers = [];
    for (const url of [scene.previewUrl, tileUrl]) {
      const response = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
      answers.push({ status: response.status, type: response.headers.get('content-type'), bytes: new Uint8Array(await response.arrayBuffer()) });
    }
    // Assess
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.type).toBe('image/png');
      expect([...a.bytes.subarray(1, 4)].map((b) => String.fromCharCode(b)).join('')).toBe('PNG');
      const view = new DataView(a.bytes.buffer, a.bytes.byteOffset);
      expect([view.getUint32(16), view.getUint32(20)]).toEqual([256, 256]);
    }
  });

  it('refuses a search area over the AOI limit', async () => {
    // Act
    const answer = await call('POST', '/catalog/meta', { body: { aoi: HUGE } });
    // Assess
    expect(answer.status).toBe(400);
  });
});

// ---------------------------------------------------------------- unreliable service

describe('faults and lost answers', () => {
  it('with --fault-rate, every failure is a gateway-like status or a reset, and a retrying client gets through', async () => {
    // Prepare
    const sim = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 1, seed: 1, faultRate: 0.3 });
    const statuses = new Set<number>();
    let resets = 0;
    const retrying = async (path: string, init: RequestInit = {}): Promise<Json> => {
      for (let attempt = 0; attempt < 30; attempt++) {
        try {
          const r = await fetch(sim.url + path, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });
          if (r.status === 200) return r.json();
          statuses.add(r.status);
          await r.arrayBuffer();
        } catch {
          resets++;
        }
      }
      throw new Error(`${path} never answered`);
    };
    try {
      // Act
      for (let i = 0; i < 15; i++) await retrying('/projects/default');
      const project = await retrying('/projects', { method: 'POST', body: JSON.stringify({ name: 'under faults' }) });
      const read = await retrying(`/projects/${project.id}`);
      // Assess
      expect(read.name).toBe('under faults');
      for (const s of statuses) expect([429, 500, 502, 503, 504]).toContain(s);
      expect(statuses.size + resets).toBeGreaterThan(0);
    } finally {
      await sim.close();
    }
  });

  it('with --drop-after-commit 1, a create takes effect although its answer is lost', async () => {
    // Prepare
    const sim = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 1, seed: 1, dropAfterCommit: 1 });
    try {
      // Act
      const lost = await fetch(`${sim.url}/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'lost answer' }),
      }).then(
        () => false,
        () => true,
      );
      const list: Json = await (await fetch(`${sim.url}/projects`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
      // Assess
      expect(lost).toBe(true);
      expect(list.map((p: Json) => p.name)).toContain('lost answer');
    } finally {
      await sim.close();
    }
  });
});
