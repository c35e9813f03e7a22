/**
 * Issue 37 point 1, through the whole local bridge under the template's IAM:
 * the second part of a split job waits for a slot inside the Distributed Map,
 * where `$$.Execution.Id` is a child execution's ARN (the local engine gives
 * Map items AWS's child ARNs). A reconciler run meanwhile must succeed (on AWS
 * it failed: the waiter recorded the child's ARN, and DescribeExecution on it
 * was denied) and leave the live waiter alone; once the job's execution is
 * stopped, the next run finishes the job and frees its slot and place.
 */
import { createHash } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startReliabilityBridge, stopExecution, type ReliabilityBridge } from './support.ts';
import { tempFile } from '../e2e/helpers.ts';
import { bridgeContext } from '../../functions/runtime/context.ts';
import { waiterRowId } from '../../functions/ledger/slots.ts';
import { jobIdFor } from '../../functions/routing/index.ts';

const SPLIT_ROUTES = JSON.stringify({ routes: [{ name: 'default', prefix: '', splitFeatures: true }] });

/** Two small squares: one part each on a splitFeatures route. */
function twoSquares(): string {
  const square = (west: number, south: number) => ({
    type: 'Feature',
    properties: {},
    geometry: { type: 'Polygon', coordinates: [[[west, south], [west + 0.004, south], [west + 0.004, south + 0.004], [west, south + 0.004], [west, south]]] },
  });
  return JSON.stringify({ type: 'FeatureCollection', features: [square(7.44, 46.94), square(8.54, 47.37)] });
}

describe('a split job whose second part waits for a slot', { timeout: 120_000 }, () => {
  let rel: ReliabilityBridge;

  beforeAll(async () => {
    // Two slots (the Map runs two items at once); long processings keep part 0's slot held.
    rel = await startReliabilityBridge({ simulator: { processingSeconds: 600 }, bridge: { routes: SPLIT_ROUTES, maxConcurrentProcessings: 2 } });
  });
  afterAll(async () => {
    await rel?.close();
  });

  it('is left alone by a reconciler run while it waits, and reclaimed once its execution is gone', async () => {
    // Prepare: a stand-in holds one slot under the job's own execution (alive while the job runs);
    // part 0 takes the other, part 1 waits on its task token inside the Map
    const context = bridgeContext(process.env);
    const slots = context.slots;
    const body = twoSquares();
    const jobId = jobIdFor({ bucket: rel.bridge.bucket, key: 'inbox/split.geojson', etag: createHash('md5').update(body).digest('hex') });
    expect((await slots.acquire('stand-in#0', rel.bridge.engine.executionArn(jobId))).acquired).toBe(true);
    const job = await rel.bridge.putInbox(await tempFile('split.geojson', body), 'split.geojson');
    expect(job.jobId).toBe(jobId);
    await eventually(async () => ((await slots.waiters()).some((w) => w.holder === `${job.jobId}#1`) ? true : undefined));
    const { Item: waiter } = await context.doc.send(new GetCommand({ TableName: rel.bridge.ledgerTable, Key: { jobId: waiterRowId(`${job.jobId}#1`) }, ConsistentRead: true }));

    // Act: a run while it waits, then one after its execution is stopped
    await rel.bridge.reconcileNow();
    const heldWhileAlive = (await rel.slots()).sort();
    const waitingWhileAlive = (await slots.waiters()).map((w) => w.holder);
    stopExecution(rel.bridge.engine, job.jobId);
    await rel.bridge.engine.waitFor(job.jobId);
    await rel.bridge.reconcileNow();

    // Assess: the waiter records the job's own execution, which the reconcile role may describe
    expect(waiter?.executionArn).toBe(rel.bridge.engine.executionArn(job.jobId));
    expect(heldWhileAlive).toEqual([`${job.jobId}#0`, 'stand-in#0'].sort());
    expect(waitingWhileAlive).toEqual([`${job.jobId}#1`]);
    expect((await rel.bridge.ledger.get(job.jobId))?.error?.code).toBe('EXECUTION_LOST');
    expect(await slots.waiters()).toEqual([]);
    expect(await rel.slots()).toEqual([]);
  });
});
