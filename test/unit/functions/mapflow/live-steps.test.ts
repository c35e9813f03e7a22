/**
 * What the steps do with the live service's answers (sources named per test):
 * billing by billingType, provider names and limits from /user/status,
 * refusals on the cost call, data error codes, finding an uploaded image the
 * answer did not name, preprocessing readiness, NOT_ACCEPTED, and a poll
 * budget that follows from the job duration.
 */
import { describe, expect, it } from 'vitest';
import { MapflowNotFound, MapflowRequestError, type ImageRecord, type ImageStatus, type MapflowClient, type UserStatus } from '../../../../functions/mapflow/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { assertAccountCanPay, checkAccountLimits, resolveProvider, type DraftPart } from '../../../../functions/jobs/steps/plan-processing.ts';
import { rejectionForRequestError } from '../../../../functions/jobs/refusals.ts';
import { isReady, locateUploaded, rejectionForUploadError } from '../../../../functions/jobs/steps/upload-image.ts';
import { awaitsRework } from '../../../../functions/jobs/steps/poll-processing.ts';
import { DEFAULT_POLL_POLICY, maxPollsOf, pollBudgetExhausted, pollsFor } from '../../../../functions/polling/poll-policy.ts';

const status = (fields: Partial<UserStatus>): UserStatus => ({ models: [], teams: [], dataProviders: [], raw: {}, ...fields });

function thrown(fn: () => unknown): InputRejected {
  try {
    fn();
  } catch (error) {
    if (error instanceof InputRejected) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

const square = (west: number, size = 0.01) => [[[west, 46], [west + size, 46], [west + size, 46 + size], [west, 46 + size], [west, 46]]];
const draft = (fields: Partial<DraftPart>): DraftPart => ({ index: 0, name: 'part', displayName: 'part', geometry: { type: 'Polygon', coordinates: square(7) }, areaSqM: 5e6, ...fields } as DraftPart);

const requestError = (status: number, code: string | undefined, message: string, params?: Record<string, unknown>) =>
  new MapflowRequestError(`Mapflow POST /x answered HTTP ${status}: ${message}`, { method: 'POST', path: '/x', status, code, params });

describe('point 2: billing by billingType (mapflow-qgis functional/helpers.py check_processing_limit)', () => {
  it('does not reject a credit-billed account whose remainingArea is 0 (the unused counter)', () => {
    // Act and Assess
    expect(() => assertAccountCanPay(status({ billingType: 'CREDITS', credits: 500, remainingAreaSqM: 0 }), 12, 5e6, '5 km²')).not.toThrow();
  });

  it('rejects a credit-billed account with too few remainingCredits', () => {
    // Act
    const error = thrown(() => assertAccountCanPay(status({ billingType: 'CREDITS', credits: 3, remainingAreaSqM: 1e12 }), 12, 5e6, '5 km²'));
    // Assess
    expect(error.code).toBe('INSUFFICIENT_CREDITS');
  });

  it('checks only the area of an AREA-billed account, and nothing for NONE', () => {
    // Act and Assess
    expect(() => assertAccountCanPay(status({ billingType: 'AREA', credits: 0, remainingAreaSqM: 1e7 }), 12, 5e6, '5 km²')).not.toThrow();
    expect(thrown(() => assertAccountCanPay(status({ billingType: 'AREA', credits: 0, remainingAreaSqM: 1e6 }), 12, 5e6, '5 km²')).code).toBe('INSUFFICIENT_CREDITS');
    expect(() => assertAccountCanPay(status({ billingType: 'NONE', credits: 0, remainingAreaSqM: 0 }), 12, 5e6, '5 km²')).not.toThrow();
  });
});

describe('point 11: providers and limits from /user/status (mapflow-mcp src/schemas.ts, mapflow-qgis processing_service.py, ProcessingService.scala)', () => {
  const providers = status({ dataProviders: [{ name: 'Mapbox', displayName: 'Mapbox Satellite' }, { name: 'sentinel_l2a', minAreaSqKm: 10 }], maxAoisPerProcessing: 2 });

  it('resolves a provider name case-insensitively to the account\'s spelling', () => {
    // Act
    const source = resolveProvider(providers, { dataProvider: { providerName: 'mapbox', zoom: 18 } } as never);
    // Assess
    expect(source).toEqual({ dataProvider: { providerName: 'Mapbox', zoom: 18 } });
  });

  it('rejects a provider the account does not have, naming the ones it has', () => {
    // Act
    const error = thrown(() => resolveProvider(providers, { dataProvider: { providerName: 'maxar' } } as never));
    // Assess
    expect(error.code).toBe('UNKNOWN_PROVIDER');
    expect(error.message).toContain('Mapbox, sentinel_l2a');
  });

  it('rejects an AOI below the provider\'s minAreaSqKm before any cost call', () => {
    // Act
    const error = thrown(() => checkAccountLimits(providers, { dataProvider: { providerName: 'sentinel_l2a' } } as never, [draft({ areaSqM: 2e6 })]));
    // Assess
    expect(error.code).toBe('AREA_TOO_SMALL');
  });

  it('rejects more polygons than maxAoisPerProcessing with its own code and the advice to merge or split', () => {
    // Prepare: three separate squares after the dissolve
    const geometry = { type: 'MultiPolygon', coordinates: [square(7), square(7.1), square(7.2)] };
    // Act
    const error = thrown(() => checkAccountLimits(providers, { dataProvider: { providerName: 'Mapbox' } } as never, [draft({ geometry } as never)]));
    // Assess
    expect(error.code).toBe('TOO_MANY_AOIS');
    expect(error.message).toMatch(/at most 2/);
    expect(error.message).toMatch(/merge the polygons/);
    expect(error.message).toMatch(/splitFeatures/);
  });
});

describe('point 5: refusals on the cost call classified like the create (processing_service.py: ProviderMinAreaError rides on /cost)', () => {
  it.each([
    ['ProviderMinAreaError', 'AREA_TOO_SMALL'],
    ['TOO_LARGE_PROCESSING', 'AREA_TOO_LARGE'],
  ])('%s -> REJECTED %s', (code, expected) => {
    // Act
    const rejection = rejectionForRequestError(requestError(400, code, 'refused', { aoiArea: 0.5, providerName: 'Mapbox', providerMinArea: 1 }), "part 'x'");
    // Assess
    expect(rejection?.code).toBe(expected);
  });

  it('classifies the server\'s "Too many AOI geometries" BadRequest as TOO_MANY_AOIS (ProcessingService.scala)', () => {
    // Act
    const rejection = rejectionForRequestError(requestError(400, 'BAD_REQUEST', 'Too many AOI geometries. One processing can have up to 10 geometries'), "part 'x'");
    // Assess
    expect(rejection?.code).toBe('TOO_MANY_AOIS');
  });
});

describe('point 7: data error codes (mapflow-qgis errors/data_errors.py)', () => {
  it.each([
    ['FileValidationFailed', 'MOSAIC_MISMATCH', /same band count/],
    ['ImageOutOfBounds', 'NOT_GEOREFERENCED', /CRS and geotransform/],
    ['FileOpenError', 'NOT_GEOTIFF', /as a GeoTIFF/],
    ['ImageExtentTooBig', 'FILE_TOO_LARGE', /cut the image into parts/],
    ['FileCheckFailed', 'IMAGE_INCOMPATIBLE', /incompatible/],
  ])('%s -> %s', (code, expected, advice) => {
    // Act
    const rejection = rejectionForUploadError(requestError(400, code, 'refused', { param_name: 'crs', got_param: 'EPSG:32618', expected_param: 'EPSG:3857' }), 'a.tif');
    // Assess
    expect(rejection?.code).toBe(expected);
    expect(rejection?.message).toMatch(advice);
  });
});

describe('points 1 and 12: the uploaded image, found and ready (spec/002_E_zoom_selector_api.md)', () => {
  const image = (id: string, fields: Partial<ImageRecord>): ImageRecord => ({ id, file_size: 100, uploaded_at: '2026-03-22T12:35:00Z', ...fields });
  const fakeClient = (images: ImageRecord[], statuses: ImageStatus[] | Error) =>
    ({
      listMosaicImages: async () => images,
      getMosaicStatus: async () => {
        if (statuses instanceof Error) throw statuses;
        return statuses;
      },
    }) as unknown as MapflowClient;
  const sent = { checksum: 'abc', size: 100, filename: 'a.tif', uploadedAt: '2026-03-22T12:34:50Z' };

  it('finds the image by checksum although the server renamed it', async () => {
    // Act
    const found = await locateUploaded(fakeClient([image('old', { checksum: 'zzz' }), image('new', { checksum: 'ABC', filename: 'renamed_1.tif' })], []), 'm', sent);
    // Assess
    expect(found.image?.id).toBe('new');
  });

  it('never takes an image that was in the mosaic before the upload (same bytes, other name)', async () => {
    // Prepare: the old copy has the same checksum; the new one is still preprocessing (not listed)
    const statuses: ImageStatus[] = [{ imageId: 'new', preprocessingStatus: 'PENDING', dataAvailable: false, uploadedAt: '2026-03-22T12:35:01Z' }];
    // Act
    const found = await locateUploaded(fakeClient([image('old', { checksum: 'abc' })], statuses), 'm', { ...sent, prior: ['old'] });
    // Assess
    expect(found).toEqual({ imageId: 'new' });
  });

  it('finds nothing (and waits) when neither the list nor an older service without the mosaic status has it', async () => {
    // Act
    const found = await locateUploaded(fakeClient([], new MapflowNotFound('no', { method: 'GET', path: '/x', status: 404 })), 'm', sent);
    // Assess
    expect(found).toEqual({});
  });

  it('is ready only when COMPLETED and data_available (or when the service has no status endpoint)', () => {
    // Assess
    expect(isReady({ imageId: 'i', preprocessingStatus: 'COMPLETED', dataAvailable: true })).toBe(true);
    expect(isReady({ imageId: 'i', preprocessingStatus: 'COMPLETED', dataAvailable: false })).toBe(false);
    expect(isReady({ imageId: 'i', preprocessingStatus: 'IN_PROGRESS', dataAvailable: false })).toBe(false);
    expect(isReady({ imageId: 'i', preprocessingStatus: 'PENDING' })).toBe(false);
    expect(isReady(undefined)).toBe(true);
  });
});

describe('point 10: lifecycles (real-api-notes: OK + NOT_ACCEPTED not final; AWAITING for hours)', () => {
  it('does not take OK with review status NOT_ACCEPTED as done', () => {
    // Assess
    expect(awaitsRework({ status: 'OK', reviewStatus: { status: 'NOT_ACCEPTED', raw: { status: 'NOT_ACCEPTED' } } })).toBe(true);
    expect(awaitsRework({ status: 'OK', reviewStatus: { status: 'ACCEPTED', raw: null } })).toBe(false);
    expect(awaitsRework({ status: 'OK', reviewStatus: { status: null, raw: null } })).toBe(false);
  });

  it('lets a processing AWAITING for 20 h keep polling when maxJobSeconds is 24 h, and ends it after', () => {
    // Prepare: a poll every maxSeconds (60 s) for 20 h
    const policy = DEFAULT_POLL_POLICY;
    const start = new Date('2026-01-01T00:00:00Z');
    const polls20h = Math.ceil((20 * 3600) / policy.maxSeconds);
    // Act and Assess
    expect(pollBudgetExhausted(policy, polls20h, start, new Date(start.getTime() + 20 * 3600_000))).toBe(false);
    expect(pollBudgetExhausted(policy, polls20h + 300, start, new Date(start.getTime() + 24 * 3600_000 + 1000))).toBe(true);
    // The old fixed 500 polls x 60 s would have ended it at 8.3 h.
    expect(maxPollsOf(policy)).toBeGreaterThan((24 * 3600) / policy.maxSeconds);
    expect(pollsFor({ ...policy, maxJobSeconds: 2 * 86_400 })).toBeGreaterThan(pollsFor(policy));
  });
});
