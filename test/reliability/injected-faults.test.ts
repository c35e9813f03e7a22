/**
 * Issue 37 (6, 10): what AWS does now and then, injected into a local bridge
 * (--inject-faults, packages/local/src/faults.ts): TransactWriteItems cancelled
 * by a TransactionConflict, a global secondary index that has not caught up
 * with recent writes, S3 notifications delivered twice, Lambda invocations
 * throttled. Several jobs, queued
 * behind one concurrency slot (so the slot queue's transactions and its index
 * are busy), still end with exactly one final ledger row and one final event
 * each, one Mapflow processing per part (a processing is what spends credits),
 * and every kind of fault was injected at least once.
 * Rates: every notification twice, every index read lagging by 500 ms (the
 * window AWS gives as "within 1 second"), half the transactions cancelled,
 * a fifth of the Task invocations throttled.
 * The seed is printed: INJECT_FAULTS_SEED=<n> draws the same faults again.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { squareAoiText } from '../../packages/bench/fault-suite.ts';
import { jobIdFor } from '../../functions/routing/index.ts';
import { processingsOf, startReliabilityBridge, type ReliabilityBridge } from './support.ts';

const seed = Number(process.env.INJECT_FAULTS_SEED ?? Math.floor(Math.random() * 1_000_000));
const JOBS = 4;

describe(`injected faults: conflicts, index lag, duplicate deliveries, throttles (seed ${seed})`, { timeout: 240_000 }, () => {
  let rel: ReliabilityBridge;

  beforeAll(async () => {
    console.log(`injected faults: seed ${seed} (INJECT_FAULTS_SEED=${seed} draws the same again)`);
    rel = await startReliabilityBridge({
      bridge: {
        maxConcurrentProcessings: 1,
        injectFaults: { dynamodbConflict: 0.5, gsiLag: 1, gsiLagMs: 500, duplicateDelivery: 1, lambdaThrottle: 0.2, seed },
      },
    });
  }, 180_000);
  afterAll(async () => {
    await rel?.close();
  });

  it(`ends ${JOBS} jobs once each, with one processing each, while every kind of fault is injected`, async () => {
    // Prepare
    const createdBefore = rel.simulator.stats().processingsCreated;
    const inputs = Array.from({ length: JOBS }, (_, i) => ({ key: `inbox/injected-${i}.geojson`, body: squareAoiText(`injected-${i}`, 5 + i / 10, 46) }));

    // Act: all at once; each notification may reach dispatch twice
    const jobIds = await Promise.all(
      inputs.map(async ({ key, body }) => {
        const { ETag } = await rel.bridge.s3.send(new PutObjectCommand({ Bucket: rel.bridge.bucket, Key: key, Body: body }));
        return jobIdFor({ bucket: rel.bridge.bucket, key, etag: (ETag ?? '').replace(/"/g, '') });
      }),
    );
    await rel.bridge.waitForJobs({ timeoutMs: 180_000 });
    const rows = await Promise.all(jobIds.map((jobId) => rel.bridge.ledger.get(jobId)));
    const audit = await rel.audit();
    const events = await rel.events();
    const injected = { ...rel.bridge.injectedFaults };
    console.log(`injected faults (seed ${seed}): ${JSON.stringify(injected)}`);

    // Assess: every input one final row, one final event, one processing
    expect(new Set(jobIds).size).toBe(JOBS);
    expect(rows.map((row) => row?.status)).toEqual(jobIds.map(() => 'SUCCEEDED'));
    for (const jobId of jobIds) {
      const own = events.filter((event) => event.detail.jobId === jobId);
      expect(own.filter((event) => event.detailType === 'Job Received'), jobId).toHaveLength(1);
      expect(own.filter((event) => ['Job Succeeded', 'Job Failed', 'Job Rejected'].includes(event.detailType)), jobId).toHaveLength(1);
      expect(processingsOf(audit, jobId), jobId).toHaveLength(1);
    }
    expect(rel.simulator.stats().processingsCreated - createdBefore).toBe(JOBS);
    expect(audit.duplicateProcessings).toBe(0);
    // The slots are given back, none held by a finished job
    expect(await rel.slots()).toEqual([]);
    // Each kind of fault met the bridge: its conflict retry, its pauses for the index, dispatch's duplicate check, the Tasks' Retry
    expect(injected.dynamodbConflict).toBeGreaterThan(0);
    expect(injected.gsiLag).toBeGreaterThan(0);
    expect(injected.duplicateDelivery).toBeGreaterThan(0);
    expect(injected.lambdaThrottle).toBeGreaterThan(0);
  });
});
