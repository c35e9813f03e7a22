/**
 * Issue 37 point 4, the bridge's half: a job whose execution was stopped
 * before Register Job wrote its ledger row keeps its execution name taken
 * (90 days on AWS, and locally too now), so every StartExecution of it answers
 * ExecutionAlreadyExists and the inbox sweep would dispatch it on every run
 * for ever. The reconciler's sweep describes that execution, finds it closed,
 * and ends the job FAILED (EXECUTION_ENDED_UNREGISTERED) with its report and
 * one final event; the next sweep leaves it alone.
 *
 * And the other side: an execution the bridge was running when it was killed,
 * before Register Job wrote the row, is not stopped on AWS. The next local
 * start resumes it under its own name with the input it started with (kept
 * in the state folder's names file), so the job ends as it would have.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { EXECUTION_ENDED_UNREGISTERED, sweepInboxOnSchedule } from '../../functions/handlers/reconcile.ts';
import { jobIdFor } from '../../functions/routing/index.ts';
import { bridgeContext } from '../../functions/runtime/context.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { EXECUTION_NAMES_FILE, ExecutionNames } from '../../packages/local/src/engine/execution-names.ts';
import { localS3Client } from '../../packages/local/src/s3/client.ts';
import { startLocalS3 } from '../../packages/local/src/s3/server.ts';
import { squareAoi, startTestBridge } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

let bridge: LocalBridge | undefined;
const dirs: string[] = [];
afterAll(async () => {
  await bridge?.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
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

  it('killed before Register Job, it is resumed by the next start under its own name and input, and the job ends SUCCEEDED once', { timeout: 180_000 }, async () => {
    // Prepare: a first bridge made the state folder; then, as a run killed right after StartExecution leaves them,
    // the object in the inbox (its notification died with that run) and its execution's name recorded RUNNING with its input
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-names-'));
    dirs.push(stateDir);
    const shared = { stateDir, ...(await sharedLedgerOptions('names-resume')) };
    const first = await startTestBridge(shared);
    const bucket = first.bucket;
    await first.close();
    const body = squareAoi({ west: 7.48 });
    const object = { bucket, key: 'inbox/killed.geojson', etag: createHash('md5').update(body).digest('hex'), size: Buffer.byteLength(body) };
    const jobId = jobIdFor(object);
    const s3rver = await startLocalS3({ directory: path.join(stateDir, 's3'), buckets: [bucket], port: 0 });
    try {
      await localS3Client(s3rver.endpoint, s3rver.credentials).send(new PutObjectCommand({ Bucket: bucket, Key: object.key, Body: body }));
    } finally {
      await s3rver.close();
    }
    new ExecutionNames({ file: path.join(stateDir, EXECUTION_NAMES_FILE) }).started(jobId, new Date().toISOString(), { jobId, input: object });
    const logged: string[] = [];

    // Act: the next start
    bridge = await startTestBridge({ ...shared, log: (line) => logged.push(line) });
    const row = await bridge.waitForJob(jobId, { timeoutMs: 120_000 });

    // Assess: the same execution went on (its name was not refused as a new start would be) and the job ended once
    expect(row?.status).toBe('SUCCEEDED');
    expect(row?.executionArn).toBe(bridge.engine.executionArn(jobId));
    expect(logged.join('\n')).toContain(`resumed 1 execution(s) left running by the last run: ${jobId}`);
    const events = (await readEvents(bridge.eventsFile)).filter((event) => event.detail.jobId === jobId && event.detailType === 'Job Succeeded');
    expect(events).toHaveLength(1);
    expect(await bridge.engine.start(jobId, { jobId, input: object })).toBe('duplicate');
  });
});
