/**
 * Issue 36 points 1 and 2 through the task handlers, against the simulator
 * playing the live service (--real-shapes): drone orthophotos the live service
 * takes are uploaded and processed, those outside the model's pixel-size range
 * are refused before the upload, and the budget is checked in the account's
 * own unit.
 */
import { describe, expect, it } from 'vitest';
import { tiff } from '../../../../packages/bench/fixtures/tiff.ts';
import { budgetOf } from '../../../../functions/jobs/steps/plan-processing.ts';
import { DEFAULT_ROUTES, type Route } from '../../../../functions/routing/index.ts';
import { Driver, dropInput, useBenches, type Bench, type BenchOptions } from '../../../support/workflow-harness.ts';

// Preprocessing takes no time here: the harness's Driver runs Upload Image once (no Wait For Image loop).
const benches = useBenches((options) => ({
  ...options,
  simulator: { realShapes: true, billingType: 'CREDITS', preprocessingSeconds: 0, queuedSeconds: 0.1, awaitingSeconds: 0.1, ...options.simulator },
}));
const open = (options?: BenchOptions): Promise<Bench> => benches.open(options);

/** A 64 x 64 px GeoTIFF in UTM 32N near Bern at `pixel` m: `bands` bands of `bits` bits. */
function droneImage(bands: number, pixel: number, bits = 8): Buffer {
  const size = 64;
  return Buffer.from(tiff({ width: size, height: size, bands, bits, blocks: [new Uint8Array(size * size * bands * (bits / 8)).fill(90)], geo: { epsg: 32632, origin: [380000, 5200000], pixel } }));
}

/** A rectangle of about 20 km² near Bern: an ordinary Buildings job, about 120 credits on the simulated account. */
const twentySqKm = JSON.stringify({
  type: 'FeatureCollection',
  features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[7.40, 46.92], [7.46, 46.92], [7.46, 46.96], [7.40, 46.96], [7.40, 46.92]]] } }],
});

const forest: Route = { name: 'forest', prefix: 'forest/', model: '🌲 Forest and trees', processImages: true };

describe('drone orthophotos (mapflow-docs-en reference.rst: RGB, RGBa or single band; each model\'s pixel-size range)', () => {
  it.each([
    ['a 4-band RGBA uint8 image at 0.5 m under buildings/', 'buildings/drone-rgba.tif', droneImage(4, 0.5)],
    ['a single-band image at 0.5 m under a Forest route', 'forest/drone-pan.tif', droneImage(1, 0.5)],
  ])('uploads and processes %s', async (_label, key, bytes) => {
    // Prepare
    const b = await open({ routes: [...DEFAULT_ROUTES.routes, forest] });
    const start = await dropInput(benches.aws.s3, `inbox/${key}`, bytes);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish?.error).toBeUndefined();
    expect(final.finish?.status).toBe('SUCCEEDED');
    expect(b.sim.stats().processingsCreated).toBe(1);
  });

  it.each([
    ['a 4-band RGBA image at 0.05 m under buildings/', 'buildings/drone-fine.tif', droneImage(4, 0.05), /minimum of 0.3 m\/px/],
    ['a single-band image at 0.05 m under a Forest route', 'forest/drone-fine.tif', droneImage(1, 0.05), /minimum of 0.15 m\/px/],
  ])('refuses %s before the upload', async (_label, key, bytes, minimum) => {
    // Prepare
    const b = await open({ routes: [...DEFAULT_ROUTES.routes, forest] });
    const start = await dropInput(benches.aws.s3, `inbox/${key}`, bytes);
    const driver = new Driver(b.ctx);

    // Act
    const final = await driver.runJob(start);

    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'PIXEL_SIZE_TOO_FINE' } });
    expect(final.finish?.error?.message).toMatch(minimum);
    expect(driver.calls.some((c) => c.state === 'Ensure Mosaic' || c.state === 'Upload Image')).toBe(false);
    expect(b.sim.stats().processingsCreated).toBe(0);
  });

  it('leaves a uint16 image to Mapflow, whose validator\'s refusal ends the job REJECTED UNSUPPORTED_DATA_TYPE (spec mode)', async () => {
    // Prepare: the spec's simulator takes only uint8
    const b = await open({ routes: [...DEFAULT_ROUTES.routes], simulator: { realShapes: false } });
    const start = await dropInput(benches.aws.s3, 'inbox/buildings/rgb16.tif', droneImage(3, 0.5, 16));
    const driver = new Driver(b.ctx);

    // Act
    const final = await driver.runJob(start);

    // Assess
    expect(driver.calls.some((c) => c.state === 'Upload Image')).toBe(true);
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'UNSUPPORTED_DATA_TYPE' } });
    expect(final.finish?.error?.message).toMatch(/Mapflow's validator refused the image for the model: source-validator.DtypeNotAllowed/);
  });
});

describe('budgets in the account\'s unit (mapflow-qgis processing_service.py lines 1071-1079, helpers.py check_processing_limit)', () => {
  it('does not refuse an AREA-billed account for credits with the default routes', async () => {
    // Prepare
    const b = await open({ routes: [...DEFAULT_ROUTES.routes], simulator: { billingType: 'AREA' } });
    const start = await dropInput(benches.aws.s3, 'inbox/twenty.geojson', twentySqKm);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess: the estimate is above the default 100 credits, which this account never pays
    expect(final.plan?.estimatedCost).toBeGreaterThan(100);
    expect(final.finish?.error).toBeUndefined();
    expect(final.finish?.status).toBe('SUCCEEDED');
  });

  it('refuses an AREA-billed account\'s job over the route\'s areaBudgetSqKm before anything is created', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', areaBudgetSqKm: 10 }], simulator: { billingType: 'AREA' } });
    const start = await dropInput(benches.aws.s3, 'inbox/twenty.geojson', twentySqKm);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'BUDGET_EXCEEDED' } });
    expect(final.finish?.error?.message).toMatch(/covers more than the budget of 10 km² of route 'default' \(the Mapflow account is billed by area\).*raise the route's areaBudgetSqKm/);
    expect(b.sim.stats().processingsCreated).toBe(0);
  });

  it('still refuses a CREDITS-billed account\'s job over the credit budget', async () => {
    // Prepare
    const b = await open({ routes: [...DEFAULT_ROUTES.routes] });
    const start = await dropInput(benches.aws.s3, 'inbox/twenty.geojson', twentySqKm);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code: 'BUDGET_EXCEEDED' } });
    expect(final.finish?.error?.message).toMatch(/above the budget of 100 credits/);
  });

  it('checks neither budget for a NONE-billed account', async () => {
    // Prepare
    const b = await open({ routes: [{ name: 'default', prefix: '', creditBudget: 1, areaBudgetSqKm: 1 }], simulator: { billingType: 'NONE' } });
    const start = await dropInput(benches.aws.s3, 'inbox/twenty.geojson', twentySqKm);

    // Act
    const final = await new Driver(b.ctx).runJob(start);

    // Assess
    expect(final.finish?.error).toBeUndefined();
    expect(final.finish?.status).toBe('SUCCEEDED');
  });

  it.each([
    ['CREDITS', 'credits'],
    [undefined, 'credits'],
    ['AREA', 'area'],
    ['NONE', 'none'],
  ] as const)('checks the %s account\'s budget in %s', (billingType, budget) => {
    expect(budgetOf({ billingType })).toBe(budget);
  });
});
