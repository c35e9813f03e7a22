import { describe, expect, it } from 'vitest';
import {
  MapflowAuthError,
  MapflowBadResponse,
  MapflowError,
  MapflowForbidden,
  MapflowNotFound,
  MapflowRequestError,
  MapflowUnavailable,
  parseErrorBody,
} from '../../../../functions/mapflow/index.ts';
import { jobErrorFromTaskError } from '../../../../functions/jobs/outcome.ts';
import { BASE, JSON_HEADERS, mockClientsClosedAfterEach, rejectionOf, MINIMAL_CREATE } from './helpers.ts';

const mockClient = mockClientsClosedAfterEach();

describe('error bodies', () => {
  it('reads {code, message, params} (processing and project endpoints)', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'POST' }).reply(
      400,
      { code: 'ProviderMinAreaError', message: 'Area is below the provider minimum', params: { minArea: '1' } },
      JSON_HEADERS,
    );

    // Act
    const error = await rejectionOf(setup.client.createProcessing(MINIMAL_CREATE));

    // Assess
    expect(error).toBeInstanceOf(MapflowRequestError);
    expect(error).toBeInstanceOf(MapflowError);
    expect(error).toMatchObject({
      status: 400,
      code: 'ProviderMinAreaError',
      params: { minArea: '1' },
      method: 'POST',
      path: '/processings/v2',
    });
    expect(error.message).toContain('ProviderMinAreaError: Area is below the provider minimum');
  });

  it('reads {detail: {code, parameters}} (data endpoints)', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/rasters/mosaic/m-1`, method: 'GET' })
      .reply(404, { detail: { code: 'ItemNotFound', parameters: { id: 'm-1' } } }, JSON_HEADERS);

    // Act
    const error = await rejectionOf(setup.client.getMosaic('m-1'));

    // Assess
    expect(error).toBeInstanceOf(MapflowNotFound);
    expect(error).toMatchObject({ status: 404, code: 'ItemNotFound', params: { id: 'm-1' } });
  });

  it('reads a body that is not JSON', async () => {
    // Prepare
    const setup = mockClient({ retry: { maxAttempts: 1 } });
    setup.pool
      .intercept({ path: `${BASE}/processings/v2`, method: 'GET' })
      .reply(502, '<html><body>Bad gateway from the proxy</body></html>', { headers: { 'content-type': 'text/html' } });

    // Act
    const error = await rejectionOf(setup.client.listProcessings());

    // Assess
    expect(error).toBeInstanceOf(MapflowUnavailable);
    expect(error.status).toBe(502);
    expect(error.code).toBeUndefined();
    expect(error.message).toContain('Bad gateway from the proxy');
  });

  it.each([
    [401, MapflowAuthError, 'MapflowAuthError'],
    [403, MapflowForbidden, 'MapflowForbidden'],
    [404, MapflowNotFound, 'MapflowNotFound'],
    [400, MapflowRequestError, 'MapflowRequestError'],
    [409, MapflowRequestError, 'MapflowRequestError'],
    [413, MapflowRequestError, 'MapflowRequestError'],
    [422, MapflowRequestError, 'MapflowRequestError'],
  ])('maps HTTP %i to %s', async (status, ErrorClass, name) => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/rasters/image/i-1`, method: 'GET' }).reply(status, '');

    // Act
    const error = await rejectionOf(setup.client.getImage('i-1'));

    // Assess
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error.name).toBe(name);
    expect(error.status).toBe(status);
    expect(setup.delays).toEqual([]);
  });

  // Issue 36 point 8: a 403 is not a bad token unless the server says so.
  it('tells a 403 on a resource of another account (data API AccessDenied) from a refused token', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool
      .intercept({ path: `${BASE}/rasters/image/i-foreign`, method: 'GET' })
      .reply(403, JSON.stringify({ detail: { code: 'AccessDenied', parameters: { instance_type: 'image', uid: 'i-foreign' } } }), JSON_HEADERS);
    setup.pool.intercept({ path: `${BASE}/rasters/image/i-2`, method: 'GET' }).reply(403, JSON.stringify({ code: 'BAD_TOKEN', message: 'Bad token' }), JSON_HEADERS);

    // Act
    const foreign = await rejectionOf(setup.client.getImage('i-foreign'));
    const badToken = await rejectionOf(setup.client.getImage('i-2'));
    const reported = jobErrorFromTaskError({ Error: foreign.name, Cause: JSON.stringify({ errorType: foreign.name, errorMessage: foreign.message }) });

    // Assess
    expect(foreign).toBeInstanceOf(MapflowForbidden);
    expect(foreign).not.toBeInstanceOf(MapflowAuthError);
    expect(foreign).toMatchObject({ status: 403, code: 'AccessDenied' });
    expect(badToken).toBeInstanceOf(MapflowAuthError);
    expect(reported.rejected).toBe(false);
    expect(reported.error.code).toBe('MAPFLOW_FORBIDDEN');
    expect(reported.error.message).toMatch(/accepted the token but does not let this account do this \(403\).*another account's/);
    expect(reported.error.message).not.toMatch(/check the Mapflow token/);
  });

  it('turns a 2xx answer it cannot read into MapflowBadResponse', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/processings/p/v2`, method: 'GET' }).reply(200, 'not json at all');
    setup.pool.intercept({ path: `${BASE}/processing/cost/v2`, method: 'POST' }).reply(200, 'free!');

    // Act
    const notJson = await rejectionOf(setup.client.getProcessing('p'));
    const notNumber = await rejectionOf(setup.client.estimateCost({ wdId: 'w', areaSqKm: 1 }));

    // Assess
    expect(notJson).toBeInstanceOf(MapflowBadResponse);
    expect(notJson.name).toBe('MapflowBadResponse');
    expect(notNumber).toBeInstanceOf(MapflowBadResponse);
  });

  it('parses every error body shape', () => {
    // Assess
    expect(parseErrorBody('{"code":"BAD_REQUEST","message":"m","params":{"a":1}}')).toEqual({
      code: 'BAD_REQUEST',
      message: 'm',
      params: { a: 1 },
    });
    expect(parseErrorBody('{"detail":{"code":"FileTooBig","parameters":{"max":"2"}}}')).toEqual({
      code: 'FileTooBig',
      params: { max: '2' },
    });
    expect(parseErrorBody('{"detail":"Not authenticated"}')).toEqual({ message: 'Not authenticated' });
    expect(parseErrorBody('{"detail":[{"loc":["body","name"],"msg":"field required","type":"value_error.missing"}]}')).toMatchObject({
      code: 'value_error.missing',
      message: 'body.name: field required',
    });
    expect(parseErrorBody('{"error":"nope"}')).toEqual({ message: 'nope' });
    expect(parseErrorBody('plain text')).toEqual({ message: 'plain text' });
    expect(parseErrorBody('')).toEqual({});
  });

  it('keeps the error JSON-serialisable with its fields', async () => {
    // Prepare
    const setup = mockClient();
    setup.pool.intercept({ path: `${BASE}/projects/x`, method: 'GET' }).reply(404, { code: 'NOT_FOUND', message: 'gone' });

    // Act
    const error = await rejectionOf(setup.client.getProject('x'));
    const json = JSON.parse(JSON.stringify(error)) as Record<string, unknown>;

    // Assess
    expect(json).toMatchObject({ name: 'MapflowNotFound', status: 404, code: 'NOT_FOUND', method: 'GET', path: '/projects/x' });
    expect(String(json.message)).toContain('gone');
  });
});
