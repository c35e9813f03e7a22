/**
 * The two answer shapes: the spec's short v2 records and reviewStatus string,
 * and under realShapes the live service's full records and reviewStatus object.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/index.ts';
import { call, start, v2Body } from './helpers.ts';

let spec: RunningSimulator;
let real: RunningSimulator;
beforeAll(async () => {
  spec = await start();
  real = await start({ realShapes: true });
});
afterAll(async () => {
  await spec.close();
  await real.close();
});

describe('v2 records', () => {
  it('are short in the spec shape', async () => {
    // Act
    const created = await call(spec, 'POST', '/processings/v2', v2Body());
    const read = await call(spec, 'GET', `/processings/${created.json.id}/v2`);
    const full = await call(spec, 'GET', `/processings/${created.json.id}`);
    // Assess
    expect(Object.keys(created.json).sort()).toEqual(['cost', 'created', 'id', 'name', 'percentCompleted', 'status']);
    expect(Object.keys(read.json).sort()).toEqual(['area', 'cost', 'created', 'id', 'name', 'percentCompleted', 'status', 'updated', 'vectorLayer']);
    expect(full.json.reviewStatus).toBeNull();
  });

  it('are full records with reviewStatus as an object under realShapes', async () => {
    // Act
    const created = await call(real, 'POST', '/processings/v2', v2Body({ meta: { 'source-app': 'test' } }));
    const read = await call(real, 'GET', `/processings/${created.json.id}/v2`);
    // Assess
    for (const record of [created.json, read.json]) {
      expect(record).toMatchObject({
        id: created.json.id, projectId: expect.any(String), messages: [], params: { sourceParams: expect.any(Object) },
        blocks: expect.any(Array), meta: { 'source-app': 'test' }, rasterLayer: expect.any(Object), workflowDef: { name: '🏠 Buildings' },
        reviewStatus: { reviewStatus: null, inReviewUntil: null },
      });
    }
    // real-api-notes: "Status may be null or UNPROCESSED at first"; times without a zone (UTC).
    expect(created.json).toMatchObject({ status: null, percentCompleted: 0 });
    expect(read.json.status === null || read.json.status === 'UNPROCESSED').toBe(true);
    expect(read.json.created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/);
  });
});
