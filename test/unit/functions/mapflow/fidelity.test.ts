/**
 * The client against the live server's answers of issue 25 (points 4 and 8a):
 * the Mapflow server's exceptions (package io.geoalert.mapflow.exception,
 * found by `BAD_TOKEN`, `AREA_LIMIT_EXCEEDED`) and its sealed routes
 * (io.geoalert.mapflow.HttpServer: `Route.seal`, no custom rejection handler).
 */
import { describe, expect, it } from 'vitest';
import { MapflowNotFound, MapflowRequestError, isRouteNotFound } from '../../../../functions/mapflow/index.ts';
import { BASE, JSON_HEADERS, mockClientsClosedAfterEach, rejectionOf } from './helpers.ts';

const mockClient = mockClientsClosedAfterEach();

describe('authentication errors by code (server exception package: BadToken answers 400)', () => {
  it('reads 400 BAD_TOKEN as MapflowAuthError, so the job gets the token hint', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/user/status`, method: 'GET' }).reply(400, { code: 'BAD_TOKEN', message: 'Invalid token: signature' }, JSON_HEADERS);
    // Act
    const error = await rejectionOf(setup.client.getUserStatus());
    // Assess
    expect(error).toMatchObject({ name: 'MapflowAuthError', status: 400, code: 'BAD_TOKEN' });
  });

  it.each([['TOKEN_EXPIRED', 401], ['NO_TOKEN', 401], ['AUTHENTICATION_ERROR', 401]])('reads %s (%i) as MapflowAuthError', async (code, status) => {
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/user/status`, method: 'GET' }).reply(status, { code, message: 'no' }, JSON_HEADERS);
    expect(await rejectionOf(setup.client.getUserStatus())).toMatchObject({ name: 'MapflowAuthError', code });
  });

  it('keeps a 400 with another code a MapflowRequestError', async () => {
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/user/status`, method: 'GET' }).reply(400, { code: 'AREA_LIMIT_EXCEEDED', message: 'An accumulative area limit' }, JSON_HEADERS);
    expect(await rejectionOf(setup.client.getUserStatus())).toMatchObject({ name: 'MapflowRequestError', code: 'AREA_LIMIT_EXCEEDED' });
  });
});

describe('older paths only when the server has no route (issue 25 point 8a)', () => {
  it('does not fall back on 404 NOT_FOUND (a missing project), and later calls still use the newer path', async () => {
    // Prepare: the server's NotFound for a missing project, then a project that exists
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/projects/gone/processings/v2/page`, method: 'POST' })
      .reply(404, { code: 'NOT_FOUND', message: 'Entity Project with id=gone not found.' }, JSON_HEADERS);
    setup.pool.intercept({ path: `${BASE}/projects/pr-1/processings/v2/page`, method: 'POST' })
      .reply(200, { results: [{ id: 'p-1', status: 'OK' }], total: 1, count: 1 }, JSON_HEADERS);
    // Act
    const error = await rejectionOf(setup.client.listProjectProcessings('gone'));
    const list = await setup.client.listProjectProcessings('pr-1');
    // Assess: the 404 is the caller's (no GET .../processings/v2 was asked: an unmatched call fails), and the next call is not moved to legacy paths
    expect(error).toMatchObject({ name: 'MapflowNotFound', code: 'NOT_FOUND' });
    expect(list.map((p) => p.id)).toEqual(['p-1']);
  });

  it('tells a route-not-found answer from a missing object', () => {
    // Prepare
    const at = { method: 'GET', path: '/x', attempts: 1 };
    // Act / Assess
    expect(isRouteNotFound(new MapflowNotFound('no route', { ...at, status: 404 }))).toBe(true);
    expect(isRouteNotFound(new MapflowRequestError('not allowed', { ...at, status: 405 }))).toBe(true);
    expect(isRouteNotFound(new MapflowNotFound('no project', { ...at, status: 404, code: 'NOT_FOUND' }))).toBe(false);
    expect(isRouteNotFound(new Error('404'))).toBe(false);
  });
});

describe('the live processing record (mapflow-mcp src/schemas.ts; mapflow-qgis mapflow/entity/processing.py line 58)', () => {
  it('fills area from aoiArea and aoiArea from area, and keeps resultRasterLayer', async () => {
    // Prepare
    const setup = mockClient();
    const layer = { id: 'r', tileJsonUrl: 'https://x/tile.json', tileUrl: 'https://x/{z}/{x}/{y}.png' };
    setup.pool.intercept({ path: `${BASE}/processings/p-1/v2`, method: 'GET' }).reply(200, { id: 'p-1', status: 'OK', aoiArea: 1234, resultRasterLayer: layer }, JSON_HEADERS);
    setup.pool.intercept({ path: `${BASE}/processings/p-2/v2`, method: 'GET' }).reply(200, { id: 'p-2', status: 'OK', area: 99, resultRasterLayer: null }, JSON_HEADERS);
    // Act
    const first = await setup.client.getProcessing('p-1');
    const second = await setup.client.getProcessing('p-2');
    // Assess
    expect(first).toMatchObject({ area: 1234, aoiArea: 1234, resultRasterLayer: layer });
    expect(second).toMatchObject({ area: 99, aoiArea: 99, resultRasterLayer: null });
  });
});
