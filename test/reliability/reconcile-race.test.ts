/**
 * The reconciler next to live jobs: it reads the unfinished jobs, then asks
 * whether each one's execution is alive. A job whose execution finishes in
 * between (its row turns final, then the execution stops) must be left
 * alone: no EXECUTION_LOST report over the job's real outcome, no event.
 */
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../functions/handlers/reconcile.ts';
import { reportKey } from '../../functions/routing/index.ts';
import { bridgeContext } from '../../functions/runtime/context.ts';
import { startReliabilityBridge, type ReliabilityBridge } from './support.ts';

describe('the reconciler and a job that finishes while it looks', () => {
  let rel: ReliabilityBridge;

  beforeAll(async () => {
    rel = await startReliabilityBridge();
  });
  afterAll(async () => {
    await rel?.close();
  });

  // Finding F4 (docs/reliability.md, Findings): the reconciler used to write its
  // EXECUTION_LOST report from the row it had listed, over the report of a job
  // that had just ended. It now re-reads the row after the liveness check.
  it('leaves a job alone whose execution was running when listed and has finished by the liveness check', async () => {
    // Prepare: a job IN_PROGRESS under a running execution (as the listing sees it)
    const ctx = bridgeContext(process.env);
    const jobId = 'race-job-0123456789abcdef0123456789abcdef';
    const input = { bucket: rel.bridge.bucket, key: 'inbox/race.geojson', etag: 'e1', size: 10 };
    const executionArn = rel.bridge.engine.executionArn(jobId);
    await ctx.ledger.register({ jobId, input, kind: 'geojson', routeName: 'default', executionArn });
    await ctx.ledger.transition(jobId, 'IN_PROGRESS');
    const key = reportKey(ctx.config.prefixes, input.key);
    // The job's own ending, between the listing and the liveness check: its real report, FAILED, then the execution stops.
    const finishMeanwhile = async (): Promise<boolean> => {
      await rel.bridge.s3.send(new PutObjectCommand({ Bucket: input.bucket, Key: key, Body: JSON.stringify({ code: 'PROCESSING_FAILED' }) }));
      await ctx.ledger.transition(jobId, 'FAILED', { error: { code: 'PROCESSING_FAILED', message: 'Mapflow failed' }, reportKey: key });
      return false;
    };
    // Act
    const summary = await reconcile(ctx, finishMeanwhile);
    const report = await (await rel.bridge.s3.send(new GetObjectCommand({ Bucket: input.bucket, Key: key }))).Body?.transformToString();
    const row = await ctx.ledger.get(jobId);
    // Assess
    expect(summary.lost).toEqual([]);
    expect(row?.error?.code).toBe('PROCESSING_FAILED');
    expect(JSON.parse(report ?? '{}').code).toBe('PROCESSING_FAILED');
  });
});
