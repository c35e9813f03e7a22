/**
 * Issue 25 in the steps, without servers: the server's error codes, blocks by
 * API name, the search and image area limits, and the image status 404. Each
 * test names its source.
 */
import { describe, expect, it } from 'vitest';
import { BridgeError, InputRejected } from '../../../../../functions/core/errors.ts';
import { MapflowAuthError, MapflowForbidden, MapflowNotFound, MapflowRequestError, type MapflowClient } from '../../../../../functions/mapflow/index.ts';
import { rejectionForRequestError } from '../../../../../functions/jobs/refusals.ts';
import { jobErrorFromThrown } from '../../../../../functions/jobs/outcome.ts';
import { explicitBlocks } from '../../../../../functions/jobs/models.ts';
import { checkSearchArea } from '../../../../../functions/jobs/imagery-search.ts';
import { checkImageArea } from '../../../../../functions/jobs/image-area.ts';
import { preprocessingOf } from '../../../../../functions/jobs/steps/upload-image.ts';

const at = { method: 'POST', path: '/processings/v2', attempts: 1 };
const square = (size: number) => ({ type: 'Polygon' as const, coordinates: [[[7.44, 46.94], [7.44 + size, 46.94], [7.44 + size, 46.94 + size], [7.44, 46.94 + size], [7.44, 46.94]]] });

describe('the server\'s error codes (package io.geoalert.mapflow.exception; service.Validations)', () => {
  it.each([
    ['TOO_LARGE_PROCESSING (TooLargeProcessing, 400)', new MapflowRequestError('m', { ...at, status: 400, code: 'TOO_LARGE_PROCESSING' }), 'AREA_TOO_LARGE'],
    ['AREA_LIMIT_EXCEEDED (AreaLimitExceeded, 400: the accumulated area)', new MapflowRequestError('An accumulative area limit of 5 sq.m. is set', { ...at, status: 400, code: 'AREA_LIMIT_EXCEEDED' }), 'INSUFFICIENT_CREDITS'],
    ['ACCESS_DENIED (checkDataProviderAccess, 403)', new MapflowForbidden('Access denied to Data Provider 2b7c', { ...at, status: 403, code: 'ACCESS_DENIED' }), 'UNKNOWN_PROVIDER'],
    ['NOT_FOUND of a workflow definition (checkWorkflowDefPermission, 404)', new MapflowNotFound('WorkflowDef not found by id x', { ...at, status: 404, code: 'NOT_FOUND' }), 'UNKNOWN_MODEL'],
    ['NOT_FOUND of something else (404)', new MapflowNotFound('Entity Project with id=p not found.', { ...at, status: 404, code: 'NOT_FOUND' }), 'PROCESSING_REJECTED'],
    ['BAD_REQUEST about credits', new MapflowRequestError('Not enough credits: the processing costs 9 credits; 2 remain', { ...at, status: 400, code: 'BAD_REQUEST' }), 'INSUFFICIENT_CREDITS'],
  ])('%s is REJECTED with its own code', (_label, error, code) => {
    // Act
    const rejection = rejectionForRequestError(error, "part 'a'");
    // Assess
    expect(rejection).toBeInstanceOf(InputRejected);
    expect(rejection?.code).toBe(code);
    expect(rejection?.cause).toBe(error);
  });

  it('the v1 create\'s 400 BAD_REQUEST "Workflow Definition not found" (RunProcessingService; issue 36 point 8) is UNKNOWN_MODEL, not PROCESSING_REJECTED', () => {
    // Prepare
    const error = new MapflowRequestError('Workflow Definition not found', { ...at, path: '/processings', status: 400, code: 'BAD_REQUEST' });
    // Act
    const rejection = rejectionForRequestError(error, "part 'a'");
    // Assess
    expect(rejection).toBeInstanceOf(InputRejected);
    expect(rejection?.code).toBe('UNKNOWN_MODEL');
    expect(rejection?.message).toMatch(/Mapflow does not know the model of part 'a' \(Workflow Definition not found\).*set the route's "model"/);
    expect(rejection?.cause).toBe(error);
  });

  it('AREA_LIMIT_EXCEEDED says to raise the account\'s area limit, not to check the route\'s source', () => {
    const error = new MapflowRequestError('An accumulative area limit of 5 sq.m. is set for the user.', { ...at, status: 400, code: 'AREA_LIMIT_EXCEEDED' });
    expect(rejectionForRequestError(error, "part 'a'")?.message).toMatch(/accumulated area limit.*raise the account's area limit/);
    expect(rejectionForRequestError(error, "part 'a'")?.message).not.toMatch(/route's source/);
  });

  it('FORBIDDEN (canRunProcessing: account suspended, 403) FAILS as ACCOUNT_SUSPENDED, not UNKNOWN_PROVIDER', () => {
    // Prepare
    const error = new MapflowForbidden('User account is suspended due a team membership policy', { ...at, status: 403, code: 'FORBIDDEN' });
    // Act
    const failure = rejectionForRequestError(error, "part 'a'");
    const job = jobErrorFromThrown(failure);
    // Assess
    expect(failure).toBeInstanceOf(BridgeError);
    expect(failure).not.toBeInstanceOf(InputRejected);
    expect(job).toMatchObject({ rejected: false, error: { code: 'ACCOUNT_SUSPENDED' } });
    expect(job.error.message).toMatch(/suspended.*reactivate/);
  });

  it('BAD_TOKEN (BadToken, 400) is left to the token hint', () => {
    // Prepare: the client reads it as MapflowAuthError (test/unit/functions/mapflow/fidelity.test.ts)
    const error = new MapflowAuthError('Invalid token: x', { ...at, status: 400, code: 'BAD_TOKEN' });
    // Act
    const rejection = rejectionForRequestError(error, "part 'a'");
    const job = jobErrorFromThrown(error);
    // Assess
    expect(rejection).toBeUndefined();
    expect(job.error.message).toMatch(/check the Mapflow token/);
  });
});

describe('blocks by their API name, all of them explicit (mapflow-qgis mapflow/schema/workflow_def.py lines 51-57)', () => {
  const model = {
    id: 'm',
    name: '🏠 Buildings',
    blocks: [
      { name: 'Segmentation', displayName: 'Segmentation', optional: false, price: 0 },
      { name: 'Simplification', displayName: 'Polygon simplification', optional: true, price: 1 },
      { name: 'OSM', displayName: 'Merge with OSM', optional: true, price: 1 },
    ],
  };

  it('sends every optional block by its API name; a display name is translated, an unnamed block goes disabled', () => {
    expect(explicitBlocks(model, [{ name: 'merge with OSM', enabled: true }])).toEqual([{ name: 'Simplification', enabled: false }, { name: 'OSM', enabled: true }]);
    expect(explicitBlocks(model, undefined)).toEqual([{ name: 'Simplification', enabled: false }, { name: 'OSM', enabled: false }]);
  });

  it('refuses an unknown block and a mandatory block disabled; passes the route\'s blocks when the account lists none', () => {
    expect(() => explicitBlocks(model, [{ name: 'Heights', enabled: true }])).toThrow(/INVALID_ROUTE_OVERRIDE: block 'Heights'/);
    expect(() => explicitBlocks(model, [{ name: 'Segmentation', enabled: false }])).toThrow(/always on/);
    expect(explicitBlocks({ id: 'x', name: 'x' }, [{ name: 'A', enabled: true }])).toEqual([{ name: 'A', enabled: true }]);
    expect(explicitBlocks({ id: 'x', name: 'x' }, undefined)).toBeUndefined();
  });
});

describe('searchAreaLimit (mapflow-qgis mapflow/mapflow.py lines 2339-2349; spec/002_F_plan_processing_api.md lines 328-341)', () => {
  it('REJECTS a search over the limit before searching, and lets a missing or zero limit pass', () => {
    // Prepare: a 0.01° square is about 0.85 km²
    const aoi = square(0.01);
    // Act / Assess
    expect(() => checkSearchArea(aoi, 500_000)).toThrow(/SEARCH_AREA_TOO_LARGE: the area covers 0\.8\d km², more than the 0\.5 km²/);
    expect(() => checkSearchArea(aoi, 1e9)).not.toThrow();
    expect(() => checkSearchArea(aoi, 0)).not.toThrow();
    expect(() => checkSearchArea(aoi, undefined)).not.toThrow();
  });
});

describe('an image\'s area against aoiAreaLimit (server Validations.checkProcessingArea; mapflow-qgis processing_service.py lines 150-174)', () => {
  it('REJECTS an image whose footprint, or its box, is over the limit, with advice for an image', () => {
    expect(() => checkImageArea(square(0.01), 500_000, 'big.tif')).toThrow(/IMAGE_AREA_TOO_LARGE: the image 'big.tif' covers 0\.8\d km².*Cut the image into tiles/);
    // A thin diagonal footprint: small area, large box
    const diagonal = { type: 'Polygon' as const, coordinates: [[[7.44, 46.94], [7.4401, 46.94], [7.4501, 46.95], [7.45, 46.95], [7.44, 46.94]]] };
    expect(() => checkImageArea(diagonal, 500_000, 'thin.tif')).toThrow(/has a longitude\/latitude bounding box of 0\.8\d km²/);
    expect(() => checkImageArea(square(0.01), 1e9, 'ok.tif')).not.toThrow();
    expect(() => checkImageArea(square(0.01), undefined, 'ok.tif')).not.toThrow();
  });
});

describe('a 404 from the image status endpoint (mapflow-qgis spec/002_E_zoom_selector_api.md lines 101-119)', () => {
  const notFound = () => new MapflowNotFound('Not Found', { method: 'GET', path: '/rasters/image/i/status', attempts: 1, status: 404 });
  const client = (image: 'exists' | 'gone'): MapflowClient => ({
    getImageStatus: async () => { throw notFound(); },
    getImage: async (id: string) => {
      if (image === 'gone') throw notFound();
      return { id };
    },
  }) as unknown as MapflowClient;

  it('reads "no such endpoint" (the image itself is there) as an older service: ready', async () => {
    expect(await preprocessingOf(client('exists'), 'i')).toBeUndefined();
  });

  it('FAILS IMAGE_NOT_FOUND when the image itself is missing or foreign', async () => {
    const error = await preprocessingOf(client('gone'), 'i').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BridgeError);
    expect(error).toMatchObject({ code: 'IMAGE_NOT_FOUND' });
    expect(jobErrorFromThrown(error).error.code).toBe('IMAGE_NOT_FOUND');
  });
});
