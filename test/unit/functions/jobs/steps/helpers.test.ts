import { describe, expect, it } from 'vitest';
import { InputRejected } from '../../../../../functions/core/errors.ts';
import { aggregate } from '../../../../../functions/jobs/steps/finish-job.ts';
import { checkBlocks, normaliseModelName, resolveModel } from '../../../../../functions/jobs/models.ts';
import { isRejectionCode, jobErrorFromMapflow, jobErrorFromTaskError } from '../../../../../functions/jobs/outcome.ts';
import { processingNameFor, shortJobId } from '../../../../../functions/jobs/common.ts';
import { isLonLat, parseWktPolygon } from '../../../../../functions/jobs/wkt.ts';
import { rejectionForUploadError } from '../../../../../functions/jobs/steps/upload-image.ts';
import { rejectionForCreateError } from '../../../../../functions/jobs/steps/create-processing.ts';
import { overrunAsRejection } from '../../../../../functions/jobs/steps/fail-job.ts';
import { MapflowAuthError, MapflowForbidden, MapflowRequestError, MapflowUnavailable } from '../../../../../functions/mapflow/index.ts';
import type { PlanPart } from '../../../../../functions/jobs/workflow.ts';

const MODELS = [
  { id: 'a1', name: '🏠 Buildings', blocks: [{ name: 'Classification', displayName: 'Building classes', optional: true, price: 1 }] },
  { id: 'b2', name: '🌲 Forest and trees' },
  { id: 'c3', name: '🏠⭐️ Buildings (Aerial)' },
];

describe('resolveModel', () => {
  it('finds a model by id, by exact name and by name without emoji in any case', () => {
    expect(resolveModel(MODELS, 'b2').name).toBe('🌲 Forest and trees');
    expect(resolveModel(MODELS, '🏠 Buildings').id).toBe('a1');
    expect(resolveModel(MODELS, 'buildings').id).toBe('a1');
    expect(resolveModel(MODELS, 'Buildings (Aerial)').id).toBe('c3');
    expect(normaliseModelName('🏠⭐️ Buildings (Aerial)')).toBe('buildings (aerial)');
  });

  it('rejects an unknown model with UNKNOWN_MODEL listing what the account has', () => {
    // Act
    const act = () => resolveModel(MODELS, 'Roads');
    // Assess
    expect(act).toThrow(InputRejected);
    expect(act).toThrow(/^UNKNOWN_MODEL: model 'Roads' is not available.*'🏠 Buildings', '🌲 Forest and trees'/);
  });

  it('rejects a block the model does not have', () => {
    expect(() => checkBlocks(MODELS[0]!, [{ name: 'classification', enabled: true }])).not.toThrow();
    expect(() => checkBlocks(MODELS[0]!, [{ name: 'Heights', enabled: true }])).toThrow(/INVALID_ROUTE_OVERRIDE: block 'Heights'.*'Classification'/);
  });
});

describe('jobErrorFromTaskError', () => {
  it('reads an InputRejected code out of the Lambda Cause', () => {
    // Prepare
    const error = { Error: 'InputRejected', Cause: JSON.stringify({ errorType: 'InputRejected', errorMessage: 'BUDGET_EXCEEDED: too dear; raise it' }) };
    // Act
    const result = jobErrorFromTaskError(error);
    // Assess
    expect(result).toEqual({ rejected: true, error: { code: 'BUDGET_EXCEEDED', message: 'too dear; raise it' } });
  });

  it('turns other errors into a code and a message with a hint', () => {
    const result = jobErrorFromTaskError({ Error: 'MapflowUnavailable', Cause: JSON.stringify({ errorType: 'MapflowUnavailable', errorMessage: 'GET /x: 503' }) });
    expect(result.rejected).toBe(false);
    expect(result.error.code).toBe('MAPFLOW_UNAVAILABLE');
    expect(result.error.message).toMatch(/^GET \/x: 503 \(Mapflow did not answer/);
  });

  it('explains a failed Map Run (States.ExceedToleratedFailureThreshold): which part, where to look, how to retry', () => {
    // Prepare: the Map's Catch gets the Map Run's error, not the part's (issue 37 point 2)
    const caught = { Error: 'States.ExceedToleratedFailureThreshold', Cause: "The Map Run of 'Process Parts' failed: 1 item failed, above the tolerated count of 0." };

    // Act
    const result = jobErrorFromTaskError(caught);

    // Assess
    expect(result.rejected).toBe(false);
    expect(result.error.code).toBe('STATES_EXCEED_TOLERATED_FAILURE_THRESHOLD');
    expect(result.error.message).toMatch(/^The Map Run of 'Process Parts' failed/);
    expect(result.error.message).toContain('could record its own outcome');
    expect(result.error.message).toContain('jobs show <jobId>');
    expect(result.error.message).toContain('jobs retry <jobId>');
  });

  // Issue 37 point 9: Step Functions may report an out-of-memory or a timeout as Lambda.Unknown
  // (its payload in a plain-text Cause), where Lambda's runtime and local mode name them.
  const UNKNOWN_OOM = {
    Error: 'Lambda.Unknown',
    Cause: 'The cause could not be determined because Lambda did not return an error type. Returned payload: {"errorType":"Runtime.OutOfMemory","errorMessage":"RequestId: 1f2e Error: Runtime exited with error: signal: killed"}',
  };
  const UNKNOWN_TIMEOUT = {
    Error: 'Lambda.Unknown',
    Cause: 'The cause could not be determined because Lambda did not return an error type. Returned payload: {"errorMessage":"2026-11-28T09:00:00.000Z 1f2e Task timed out after 60.05 seconds"}',
  };

  it('gives an out-of-memory reported as Lambda.Unknown the outcome of Runtime.OutOfMemory: REJECTED INPUT_TOO_COMPLEX before anything was spent', () => {
    // Act
    const named = overrunAsRejection(jobErrorFromTaskError({ Error: 'Runtime.OutOfMemory', Cause: JSON.stringify({ errorType: 'Runtime.OutOfMemory', errorMessage: 'out of memory' }) }), undefined);
    const unknown = overrunAsRejection(jobErrorFromTaskError(UNKNOWN_OOM), undefined);
    // Assess
    expect(named).toMatchObject({ rejected: true, error: { code: 'INPUT_TOO_COMPLEX' } });
    expect(unknown).toMatchObject({ rejected: true, error: { code: 'INPUT_TOO_COMPLEX' } });
  });

  it('keeps an out-of-memory FAILED once the parts ran: Finish Job\'s catch carries $.partOutcomes (issue 37 point 3), older executions $.parts', () => {
    // Prepare
    const oom = jobErrorFromTaskError({ Error: 'Runtime.OutOfMemory', Cause: JSON.stringify({ errorType: 'Runtime.OutOfMemory', errorMessage: 'out of memory' }) });
    const base = { jobId: 'j', input: { bucket: 'b', key: 'inbox/a.geojson', etag: 'e', size: 1 } };

    // Act
    const afterMap = overrunAsRejection(oom, { ...base, partOutcomes: [{ index: 0, status: 'OK' }] });
    const olderExecution = overrunAsRejection(oom, { ...base, parts: [{ index: 0, name: 'a', status: 'OK' }] });

    // Assess
    expect(afterMap).toMatchObject({ rejected: false, error: { code: 'RUNTIME_OUT_OF_MEMORY' } });
    expect(olderExecution).toMatchObject({ rejected: false, error: { code: 'RUNTIME_OUT_OF_MEMORY' } });
  });

  it('gives a timeout reported as Lambda.Unknown the code and hint of Sandbox.Timedout', () => {
    // Act
    const named = jobErrorFromTaskError({ Error: 'Sandbox.Timedout', Cause: JSON.stringify({ errorType: 'Sandbox.Timedout', errorMessage: 'Task timed out after 60.05 seconds' }) });
    const unknown = jobErrorFromTaskError(UNKNOWN_TIMEOUT);
    // Assess
    expect(unknown.error.code).toBe(named.error.code);
    expect(unknown.error.message).toContain("ran past its function's Timeout");
    // The payload's own words reach the user, not Step Functions' wrapper around them.
    expect(unknown.error.message).toMatch(/^2026-11-28T09:00:00.000Z 1f2e Task timed out after 60.05 seconds/);
    expect(unknown.error.message).not.toContain('The cause could not be determined');
  });

  it('leaves any other Lambda.Unknown as it is', () => {
    // Act
    const result = jobErrorFromTaskError({ Error: 'Lambda.Unknown', Cause: 'The cause could not be determined because Lambda did not return an error type.' });
    // Assess
    expect(result.error.code).toBe('LAMBDA_UNKNOWN');
  });

  it.each([undefined, null, 'text', 42, {}, { Error: 7 }, { Error: 'States.Timeout' }, { Cause: 'not json' }, { Error: 'X', Cause: '"a string"' }])(
    'never throws on an odd shape (%j)',
    (shape) => {
      const result = jobErrorFromTaskError(shape);
      expect(result.error.code).toMatch(/^[A-Z_]+$/);
      expect(result.error.message.length).toBeGreaterThan(0);
    },
  );
});

describe('jobErrorFromMapflow', () => {
  it('describes the messages and what to do', () => {
    const error = jobErrorFromMapflow('FAILED', [{ code: 'source-validator.PixelSizeTooHigh', parameters: { level: 'error', actual_res: '3', max_res: '1.2' } }], 'FAILED');
    expect(error.code).toBe('PROCESSING_FAILED');
    expect(error.message).toContain('source-validator.PixelSizeTooHigh (actual_res=3, max_res=1.2): the imagery is too coarse');
    expect(error.mapflowMessages).toHaveLength(1);
    expect(jobErrorFromMapflow('IN_PROGRESS', [], 'TIMEOUT').code).toBe('PROCESSING_TIMEOUT');
  });
});

describe('jobErrorFromMapflow on an uploaded image (issue 36: Mapflow\'s validator decides what the sources leave open)', () => {
  const failed = (...codes: string[]) => codes.map((code) => ({ code, parameters: { level: 'error' } }));

  it.each([
    ['source-validator.DtypeNotAllowed', 'UNSUPPORTED_DATA_TYPE', /convert it to 8-bit/],
    ['source-validator.NChannelsNotAllowed', 'UNSUPPORTED_BANDS', /keep the RGB bands, or one band/],
    ['source-validator.PixelSizeTooHigh', 'PIXEL_SIZE_TOO_COARSE', /use sharper imagery/],
    ['source-validator.PixelSizeTooLow', 'PIXEL_SIZE_TOO_FINE', /resample the image/],
  ])('%s is the rejection %s, with the fix', (mapflowCode, code, fix) => {
    // Act
    const error = jobErrorFromMapflow('FAILED', failed(mapflowCode), 'FAILED', { image: true });

    // Assess
    expect(error.code).toBe(code);
    expect(isRejectionCode(error.code)).toBe(true);
    expect(error.message).toContain(`Mapflow's validator refused the image for the model: ${mapflowCode}`);
    expect(error.message).toMatch(fix);
    expect(error.mapflowMessages).toEqual(failed(mapflowCode));
  });

  it('takes the first code and lists every message when several are about the image', () => {
    // Act
    const error = jobErrorFromMapflow('FAILED', failed('source-validator.DtypeNotAllowed', 'source-validator.NChannelsNotAllowed'), 'FAILED', { image: true });

    // Assess
    expect(error.code).toBe('UNSUPPORTED_DATA_TYPE');
    expect(error.message).toMatch(/DtypeNotAllowed.*; source-validator.NChannelsNotAllowed/);
  });

  it('stays a FAILED processing for a GeoJSON job, or when any message is not about the image', () => {
    // Act
    const geojson = jobErrorFromMapflow('FAILED', failed('source-validator.PixelSizeTooHigh'), 'FAILED');
    const mixed = jobErrorFromMapflow('FAILED', failed('source-validator.PixelSizeTooHigh', 'dataloader.TileNotLoaded'), 'FAILED', { image: true });

    // Assess
    expect(geojson.code).toBe('PROCESSING_FAILED');
    expect(mixed.code).toBe('PROCESSING_FAILED');
  });
});

describe('aggregate', () => {
  it('succeeds when all parts are OK, rejects when all failed as rejections, fails otherwise', () => {
    const ok = { index: 0, name: 'a', status: 'OK' };
    const rejected = { index: 1, name: 'b', status: 'FAILED', error: { code: 'AREA_TOO_LARGE', message: 'split it' } };
    const failed = { index: 2, name: 'c', status: 'FAILED', error: { code: 'PROCESSING_FAILED', message: 'x' } };
    expect(aggregate([ok], 1).status).toBe('SUCCEEDED');
    expect(aggregate([rejected], 1)).toEqual({ status: 'REJECTED', error: rejected.error });
    expect(aggregate([ok, rejected], 2).status).toBe('FAILED');
    expect(aggregate([ok, failed], 2).error?.message).toMatch(/1 of 2 parts failed .*The other parts succeeded/);
    expect(aggregate([ok], 2).status).toBe('FAILED');
  });
});

describe('names and WKT', () => {
  it('names a processing after its part and the job hash', () => {
    expect(shortJobId('city-0123456789abcdef0123456789abcdef')).toBe('01234567');
    expect(processingNameFor('city', 'city-0123456789abcdef0123456789abcdef')).toBe('city [01234567]');
  });

  it('parses WKT polygons and multipolygons', () => {
    expect(parseWktPolygon('POLYGON ((1 2, 3 4, 5 6, 1 2))')).toEqual({ type: 'Polygon', coordinates: [[[1, 2], [3, 4], [5, 6], [1, 2]]] });
    const multi = parseWktPolygon('MULTIPOLYGON(((1 2,3 4,5 6,1 2)),((-1.5 -2e1,3 4,5 6,-1.5 -2e1)))');
    expect(multi?.type).toBe('MultiPolygon');
    expect(multi && isLonLat(multi)).toBe(true);
    expect(parseWktPolygon('POINT (1 2)')).toBeUndefined();
    expect(parseWktPolygon('POLYGON ((1 2, 3')).toBeUndefined();
    expect(isLonLat({ type: 'Polygon', coordinates: [[[500000, 4000000]]] })).toBe(false);
  });
});

describe('Mapflow refusals as rejections', () => {
  const at = { method: 'POST', path: '/x' };
  const part = { name: 'city' } as PlanPart;

  it.each([
    ['FileTooBig', 400, 'FILE_TOO_LARGE'],
    ['MemoryLimitExceeded', 400, 'STORAGE_QUOTA_EXCEEDED'],
    // mapflow-qgis errors/data_errors.py: FileValidationFailed = does not fit the mosaic, ImageOutOfBounds = bad CRS/transform.
    ['FileValidationFailed', 422, 'MOSAIC_MISMATCH'],
    ['ImageOutOfBounds', 400, 'NOT_GEOREFERENCED'],
    ['FileOpenError', 400, 'NOT_GEOTIFF'],
    [undefined, 413, 'MOSAIC_MISMATCH'],
  ])('maps the upload error %s (%i) to %s', (code, status, expected) => {
    const rejection = rejectionForUploadError(new MapflowRequestError('refused', { ...at, status, ...(code && { code }) }), 'a.tif');
    expect(rejection?.code).toBe(expected);
    expect(rejection?.message).toMatch(new RegExp(`^${expected}: .*a\\.tif`));
  });

  it('leaves transient and unknown upload errors alone', () => {
    expect(rejectionForUploadError(new MapflowUnavailable('503', { ...at, status: 503 }), 'a.tif')).toBeUndefined();
    expect(rejectionForUploadError(new MapflowRequestError('conflict', { ...at, status: 409 }), 'a.tif')).toBeUndefined();
  });

  it.each([
    [new MapflowRequestError('too large', { ...at, status: 400, code: 'TOO_LARGE_PROCESSING', params: { area: '5', aoiAreaLimit: '1' } }), 'AREA_TOO_LARGE'],
    [new MapflowRequestError('small', { ...at, status: 400, code: 'ProviderMinAreaError' }), 'AREA_TOO_SMALL'],
    [new MapflowRequestError('credits', { ...at, status: 400, code: 'NOT_ENOUGH_CREDITS' }), 'INSUFFICIENT_CREDITS'],
    [new MapflowForbidden('forbidden', { ...at, status: 403 }), 'UNKNOWN_PROVIDER'],
    [new MapflowRequestError('bad', { ...at, status: 400, code: 'BAD_REQUEST' }), 'PROCESSING_REJECTED'],
  ])('maps a create refusal to a rejection (%#)', (error, expected) => {
    expect(rejectionForCreateError(error, part)?.code).toBe(expected);
  });

  it('does not reject on a bad token or an unavailable service', () => {
    expect(rejectionForCreateError(new MapflowAuthError('bad token', { ...at, status: 401 }), part)).toBeUndefined();
    expect(rejectionForCreateError(new MapflowUnavailable('down', { ...at, status: 503 }), part)).toBeUndefined();
  });
});
