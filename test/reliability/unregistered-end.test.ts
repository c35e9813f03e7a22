/**
 * Issue 37 point 4, the bridge's half: a job whose execution was stopped
 * before Register Job wrote its ledger row keeps its execution name taken
 * (90 days on AWS, and locally too now), so every StartExecution of it answers
 * ExecutionAlreadyExists and the inbox sweep would dispatch it on every run
 * for ever. The reconciler's sweep describes that execution, finds it closed,
 * and ends the job FAILED (EXECUTION_ENDED_UNREGISTERED) with its report and
 * one final event; the next sweep leaves it alone.
 */
import { createHash } from 'node:crypto';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { EXECUTION_ENDED_UNREGISTERED, sweepInboxOnSchedule } from '../../functions/handlers/reconcile.ts';
import { jobIdFor } from '../../functions/routing/index.ts';
import { bridgeContext } from '../../functions/runtime/context.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { squareAoi, startTestBridge } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';

let bridge: LocalBridge | undefined;
afterAll(async () => {
  await bridge?.close();
});

describe('an execution stopped before Register Job', () => {
  it('is ended FAILED by the reconciler\'s inbox sweep, once, and not dispatched again', { timeout: 120_000 }, async () => {
    // Prepare: the job's execution starts and is stopped at once, before its first Task; then its file lands in the inbox
    bridge = await startTestBridge(await sharedLedgerOptions('unregistered'));
    const body = squareAoi({ west: 7.47 });
    const object = { bucket: bridge.bucket, key: 'inbox/stopped.geojson', etag: createHash('md5').update(body).digest('hex'), size: Buffer.byteLength(body) };
    const jobId = jobIdFor(object);
    bridge.engine.startExecution(jobId, { jobId, input: object });
    const stopped = await bridge.engine.stopExecution(jobId);
    await bridge.s3.send(new PutObjectCommand({ Bucket: bridge.bucket, Key: object.key, Body: body }));
    expect((await bridge.s3.send(new HeadObjectCommand({ Bucket: bridge.bucket, Key: object.key }))).ETag).toBe(`"${object.etag}"`);
    // The reconciler's context on the bridge's endpoints (the operator environment the bridge set), with its state machine.
    const ctx = bridgeContext({ ...process.env, STATE_MACHINE_ARN: bridge.assembly.model.stateMachine.arn });

    // Act: two runs of the reconciler's sweep (no minimum age: the object was just put)
    const first = await sweepInboxOnSchedule(ctx, bridge.bucket, { minAgeSeconds: 0 });
    const second = await sweepInboxOnSchedule(ctx, bridge.bucket, { minAgeSeconds: 0 });

    // Assess
    expect(stopped?.status).toBe('ABORTED');
    expect(bridge.engine.taskInvocations.get('Register Job') ?? 0).toBe(0);
    expect(first).toMatchObject({ dispatched: [object.key], endedUnregistered: [jobId] });
    const row = await bridge.ledger.get(jobId);
    expect(row).toMatchObject({ status: 'FAILED', error: { code: EXECUTION_ENDED_UNREGISTERED } });
    expect(row?.error?.message).toContain(`jobs retry ${jobId}`);
    const events = (await readEvents(bridge.eventsFile)).filter((event) => event.detail.jobId === jobId);
    expect(events.map((event) => event.detailType)).toEqual(['Job Failed']);
    expect(second).toMatchObject({ dispatched: [], endedUnregistered: [] });
    expect((await readEvents(bridge.eventsFile)).filter((event) => event.detail.jobId === jobId)).toHaveLength(1);
  });
});
