/**
 * Issue 38 through the task handlers, against the simulator: a GeoJSON whose
 * imagery cannot exist (86° N on the default route's Mapbox) or whose file
 * asks a zoom its model refuses ends REJECTED at Plan Processing, with no cost
 * call and no processing.
 */
import { describe, expect, it } from 'vitest';
import { Driver, dropInput, useBenches, type Bench, type BenchOptions } from '../../../support/workflow-harness.ts';

const benches = useBenches((options) => ({ ...options, simulator: { realShapes: true, billingType: 'CREDITS', queuedSeconds: 0.1, ...options.simulator } }));
const open = (options?: BenchOptions): Promise<Bench> => benches.open(options);
const feature = (coordinates: number[][][], mapflow?: unknown) =>
  JSON.stringify({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates }, ...(mapflow !== undefined && { mapflow }) });
const box = (w: number, s: number, e: number, n: number) => [[[w, s], [e, s], [e, n], [w, n], [w, s]]];

describe('nothing is spent on a GeoJSON that will fail', () => {
  it.each([
    ['an AOI at 86° N on Mapbox', 'arctic.geojson', feature(box(10, 86, 10.2, 86.1)), 'NO_IMAGERY'],
    ['"mapflow.zoom": 0 on Buildings', 'zoom0.geojson', feature(box(7.44, 46.94, 7.45, 46.95), { zoom: 0 }), 'INVALID_ROUTE_OVERRIDE'],
  ])('refuses %s at Plan Processing', async (_label, name, text, code) => {
    // Prepare
    const b = await open();
    const start = await dropInput(benches.aws.s3, `inbox/${name}`, Buffer.from(text));
    const driver = new Driver(b.ctx);

    // Act
    const final = await driver.runJob(start);

    // Assess
    expect(final.finish).toMatchObject({ status: 'REJECTED', error: { code } });
    expect(driver.calls.some((c) => c.state === 'Create Processing')).toBe(false);
    expect(b.sim.stats().processingsCreated).toBe(0);
  });
});
