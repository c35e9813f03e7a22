/**
 * Authentication, the account (user status, limits, models, providers) and
 * projects, as a client written from the spec sees them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/index.ts';
import { BASIC, BEARER, call, EMAIL, start, TOKEN } from './helpers.ts';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await start();
});
afterAll(async () => {
  await sim.close();
});

describe('authentication', () => {
  it('accepts Bearer <token> and Basic base64(email:token)', async () => {
    // Act
    const bearer = await call(sim, 'GET', '/user/status', undefined, BEARER);
    const basic = await call(sim, 'GET', '/user/status', undefined, BASIC);
    // Assess
    expect(bearer.status).toBe(200);
    expect(basic.status).toBe(200);
    expect(basic.json.email).toBe(EMAIL);
  });

  it('answers 401 with a JSON body for a missing or wrong credential, without echoing the token', async () => {
    // Prepare
    const wrongBasic = `Basic ${Buffer.from(`${EMAIL}:nope`).toString('base64')}`;
    // Act
    const answers = await Promise.all([
      call(sim, 'GET', '/user/status', undefined, null),
      call(sim, 'GET', '/projects', undefined, 'Bearer nope'),
      call(sim, 'GET', '/projects', undefined, wrongBasic),
      call(sim, 'GET', '/rasters/memory', undefined, 'Token abc'),
    ]);
    // Assess
    for (const answer of answers) {
      expect(answer.status).toBe(401);
      expect(answer.json).toBeTypeOf('object');
      expect(answer.text).not.toContain(TOKEN);
    }
    expect(answers[0]!.json.code).toBe('UNAUTHORIZED');
    expect(answers[3]!.json.detail.code).toBe('AccessDenied');
  });

  it('accepts Basic <token> when the configured token is the pre-encoded web-app credential', async () => {
    // Prepare
    const encoded = Buffer.from(`${EMAIL}:api-key-1`).toString('base64');
    const other = await start({ token: encoded });
    try {
      // Act
      const answer = await call(other, 'GET', '/user/status', undefined, `Basic ${encoded}`);
      // Assess
      expect(answer.status).toBe(200);
    } finally {
      await other.close();
    }
  });

  it('answers 404 outside /rest and for unknown endpoints', async () => {
    // Act
    const outside = await fetch(sim.url.replace('/rest', '/user/status'), { headers: { authorization: BEARER } });
    const unknown = await call(sim, 'GET', '/no/such/endpoint');
    // Assess
    expect(outside.status).toBe(404);
    expect(unknown.status).toBe(404);
  });
});

describe('GET /user/status', () => {
  it('reports limits in square metres, credits, the default models with blocks and the providers', async () => {
    // Act
    const { json: status } = await call(sim, 'GET', '/user/status');
    // Assess
    expect(status.aoiAreaLimit).toBe(1e9);
    expect(status.areaLimit).toBeGreaterThan(0);
    expect(status.remainingArea).toBe(status.areaLimit - status.processedArea);
    expect(status.user).toMatchObject({ email: EMAIL, credits: expect.any(Number) });
    expect(status.memoryLimit).toBeGreaterThan(0);
    expect(status.teams).toEqual([]);
    const names = status.models.map((m: { name: string }) => m.name);
    expect(names).toEqual(['🏠 Buildings', '🌲 Forest and trees', '🚗 Roads', '🏗️ Construction sites', '🏠⭐️ Buildings (Aerial)']);
    const forest = status.models.find((m: { name: string }) => m.name === '🌲 Forest and trees');
    expect(forest.blocks).toEqual([
      expect.objectContaining({ name: 'Segmentation', optional: false }),
      expect.objectContaining({ name: 'Heights', optional: true, price: expect.any(Number) }),
    ]);
    for (const model of status.models) {
      expect(model.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(model.pricePerSqKm).toBeGreaterThan(0);
      expect(model).not.toHaveProperty('sim');
    }
    expect(status.dataProviders.map((p: { name: string }) => p.name)).toContain('Mapbox');
  });

  it('keeps model ids stable across simulators', async () => {
    // Prepare
    const other = await start();
    try {
      // Act
      const [a, b] = await Promise.all([call(sim, 'GET', '/user/status'), call(other, 'GET', '/user/status')]);
      // Assess
      expect(a.json.models.map((m: { id: string }) => m.id)).toEqual(b.json.models.map((m: { id: string }) => m.id));
    } finally {
      await other.close();
    }
  });
});

describe('projects', () => {
  it('has a default project with the account settings and the default models linked', async () => {
    // Act
    const { status, json: project } = await call(sim, 'GET', '/projects/default');
    // Assess
    expect(status).toBe(200);
    expect(project.isDefault).toBe(true);
    expect(project.user).toMatchObject({ email: EMAIL, role: 'USER', aoiAreaLimit: 1e9, isPremium: false });
    expect(project.workflowDefs).toHaveLength(5);
    expect(project.progress).toMatchObject({ status: expect.any(String), percentCompleted: 0 });
  });

  it('creates, reads, lists, updates and deletes a project', async () => {
    // Act
    const created = await call(sim, 'POST', '/projects', { name: 'Bern', description: 'quarters' });
    const id = created.json.id;
    const read = await call(sim, 'GET', `/projects/${id}`);
    const updated = await call(sim, 'PUT', `/projects/${id}`, { name: 'Bern 2' });
    const afterUpdate = await call(sim, 'GET', `/projects/${id}`);
    const list = await call(sim, 'GET', '/projects');
    const deleted = await call(sim, 'DELETE', `/projects/${id}`);
    const gone = await call(sim, 'GET', `/projects/${id}`);
    // Assess
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ name: 'Bern', description: 'quarters', isDefault: false });
    expect(read.json.id).toBe(id);
    expect(updated.status).toBe(200);
    expect(afterUpdate.json).toMatchObject({ name: 'Bern 2', description: 'quarters' });
    expect(list.json.map((p: { id: string }) => p.id)).toContain(id);
    expect(deleted.status).toBe(200);
    expect(gone.status).toBe(404);
    expect(gone.json.code).toBe('NOT_FOUND');
  });

  it('refuses a project without a name and deleting the default project', async () => {
    // Prepare
    const { json: defaultProject } = await call(sim, 'GET', '/projects/default');
    // Act
    const nameless = await call(sim, 'POST', '/projects', { description: 'x' });
    const deleteDefault = await call(sim, 'DELETE', `/projects/${defaultProject.id}`);
    // Assess
    expect(nameless.status).toBe(400);
    expect(nameless.json).toMatchObject({ code: 'BAD_REQUEST', message: expect.any(String) });
    expect(deleteDefault.status).toBe(400);
  });
});
