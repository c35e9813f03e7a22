/**
 * Exactly once: the same object delivered many times (at once, through the
 * dispatch core and through s3rver re-puts of identical bytes) is one job,
 * one execution and one Mapflow processing; a new version of the content
 * under the same key is a new job; a final job dropped again is not redone.
 * Mapflow's side is counted through its API (processings of every project,
 * grouped by the bridge's job part), not through the bridge's own records.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { squareAoiText } from '../../packages/bench/fault-suite.ts';
import { dispatchObjectCreated } from '../../functions/handlers/dispatch.ts';
import { jobIdFor } from '../../functions/routing/index.ts';
import { bridgeContext } from '../../functions/runtime/context.ts';
import { processingsOf, startReliabilityBridge, type ReliabilityBridge } from './support.ts';

describe('exactly once', { timeout: 180_000 }, () => {
  let rel: ReliabilityBridge;

  beforeAll(async () => {
    rel = await startReliabilityBridge();
  });
  afterAll(async () => {
    await rel?.close();
  });

  const put = async (key: string, body: string) => {
    const { ETag } = await rel.bridge.s3.send(new PutObjectCommand({ Bucket: rel.bridge.bucket, Key: key, Body: body }));
    const object = { bucket: rel.bridge.bucket, key, etag: (ETag ?? '').replace(/"/g, ''), size: Buffer.byteLength(body) };
    return { object, jobId: jobIdFor(object) };
  };

  it('makes one job, one execution and one processing of one object delivered 10 times, 8 of them at once', async () => {
    // Prepare
    const key = 'inbox/lyon-dup.geojson';
    const body = squareAoiText('lyon-dup', 4.83, 45.76);
    const ctx = bridgeContext(process.env);
    // Act: the first put notifies; 8 deliveries of the same event at once; then the same bytes put again (another notification)
    const { object, jobId } = await put(key, body);
    const summaries = await Promise.all(
      Array.from({ length: 8 }, () => dispatchObjectCreated(ctx, [object], (name, input) => rel.bridge.engine.start(name, input))),
    );
    const again = await put(key, body);
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    const row = await rel.bridge.ledger.get(jobId);
    const audit = await rel.audit();
    const events = await rel.events(jobId);
    // Assess
    expect(again.jobId).toBe(jobId);
    const started = summaries.flatMap((s) => s.started).length;
    const duplicates = summaries.flatMap((s) => s.duplicates).length;
    expect(started).toBeLessThanOrEqual(1);
    expect(started + duplicates).toBe(8);
    expect(rel.executions.filter((e) => e.name === jobId)).toHaveLength(1);
    expect(row?.status).toBe('SUCCEEDED');
    expect(processingsOf(audit, jobId)).toHaveLength(1);
    expect(row?.processingId).toBe(processingsOf(audit, jobId)[0]);
    expect(events.filter((e) => e.detailType === 'Job Received')).toHaveLength(1);
    expect(events.filter((e) => e.detailType === 'Job Succeeded')).toHaveLength(1);
  });

  it('does not process the same content twice when it is dropped again under the same key after it finished', async () => {
    // Prepare: a finished job
    const key = 'inbox/milan-again.geojson';
    const body = squareAoiText('milan-again', 9.19, 45.46);
    const { jobId } = await put(key, body);
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    const createdBefore = rel.simulator.stats().processingsCreated;
    // Act: the very same bytes again, twice
    await put(key, body);
    await put(key, body);
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    // Assess
    expect((await rel.bridge.ledger.get(jobId))?.status).toBe('SUCCEEDED');
    expect(rel.simulator.stats().processingsCreated).toBe(createdBefore);
    expect(processingsOf(await rel.audit(), jobId)).toHaveLength(1);
    expect((await rel.events(jobId)).filter((e) => e.detailType === 'Job Succeeded')).toHaveLength(1);
  });

  it('does not redo a FAILED job whose same content is dropped again (its execution name stays taken, as on AWS)', async () => {
    // Prepare: a job that fails in Mapflow
    const key = 'inbox/rome-fails.geojson';
    const aoi = JSON.parse(squareAoiText('rome-fails', 12.5, 41.9)) as Record<string, unknown>;
    const body = JSON.stringify({ ...aoi, mapflow: { meta: { simulate: 'fail:dataloader.NoData' } } });
    const { jobId } = await put(key, body);
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    expect((await rel.bridge.ledger.get(jobId))?.status).toBe('FAILED');
    const createdBefore = rel.simulator.stats().processingsCreated;
    // Act
    await put(key, body);
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    // Assess: still one processing and one final event
    expect((await rel.bridge.ledger.get(jobId))?.status).toBe('FAILED');
    expect(rel.simulator.stats().processingsCreated).toBe(createdBefore);
    expect((await rel.events(jobId)).filter((e) => e.detailType === 'Job Failed')).toHaveLength(1);
  });

  it('makes a new job of new content under the same key, with its own processing', async () => {
    // Prepare
    const key = 'inbox/vienna-versions.geojson';
    const first = await put(key, squareAoiText('vienna-versions', 16.37, 48.2));
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    // Act: a new version of the file (another area)
    const second = await put(key, squareAoiText('vienna-versions', 16.38, 48.21));
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    const audit = await rel.audit();
    // Assess
    expect(second.jobId).not.toBe(first.jobId);
    expect((await rel.bridge.ledger.get(first.jobId))?.status).toBe('SUCCEEDED');
    expect((await rel.bridge.ledger.get(second.jobId))?.status).toBe('SUCCEEDED');
    expect(processingsOf(audit, first.jobId)).toHaveLength(1);
    expect(processingsOf(audit, second.jobId)).toHaveLength(1);
    expect(processingsOf(audit, second.jobId)[0]).not.toBe(processingsOf(audit, first.jobId)[0]);
  });

  it('holds across the whole run: no job part has a second processing', async () => {
    // Act
    const audit = await rel.audit();
    // Assess
    expect(audit.processings).toBeGreaterThanOrEqual(5);
    expect(audit.duplicateProcessings).toBe(0);
  });
});
