/**
 * Concurrency slots through the whole local bridge: with one slot, jobs wait
 * QUEUED and never run two processings at once; the slot is released on every
 * path (success, Mapflow failure, a caught error, a poll timeout) and one held
 * by an execution that was stopped is reclaimed by the reconciler, which also
 * finishes the job (EXECUTION_LOST, report, event). Acquire and release are
 * idempotent and parallel acquires never overshoot.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { squareAoiText } from '../../packages/bench/fault-suite.ts';
import { MapflowClient } from '../../functions/mapflow/index.ts';
import { bridgeContext } from '../../functions/runtime/context.ts';
import { eventually, startReliabilityBridge, stopExecution, type ReliabilityBridge } from './support.ts';
import { tempFile } from '../e2e/helpers.ts';
import type { TaskTrace } from '../../packages/local/src/engine/engine.ts';

const drop = async (rel: ReliabilityBridge, name: string, body: string) =>
  rel.bridge.putInbox(await tempFile(`${name}.geojson`, body), `${name}.geojson`);

describe('concurrency slots: one slot', { timeout: 120_000 }, () => {
  let rel: ReliabilityBridge;
  // Every task invocation, timed by the local engine (who ran what, when).
  const traces: TaskTrace[] = [];
  const tracesOf = (jobId: string, state: string) => traces.filter((t) => t.state === state && JSON.stringify(t.input).includes(jobId));

  beforeAll(async () => {
    rel = await startReliabilityBridge({ bridge: { maxConcurrentProcessings: 1, onTask: (trace) => traces.push(trace) } });
  });
  afterAll(async () => {
    await rel?.close();
  });

  it('queues jobs beyond the maximum, never holds two slots, and finishes all with the slots row empty', async () => {
    // Prepare: watch the slots row while the jobs run
    let most = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        most = Math.max(most, (await rel.slots()).length);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    // Act
    const jobs = await Promise.all([
      drop(rel, 'queue-bern', squareAoiText('queue-bern', 7.44, 46.94)),
      drop(rel, 'queue-zurich', squareAoiText('queue-zurich', 8.54, 47.37)),
      drop(rel, 'queue-geneva', squareAoiText('queue-geneva', 6.14, 46.2)),
    ]);
    await rel.bridge.waitForJobs({ timeoutMs: 60_000 });
    watching = false;
    await watcher;
    const rows = await Promise.all(jobs.map((job) => rel.bridge.ledger.get(job.jobId)));
    // Assess
    expect(rows.map((row) => row?.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    const queued = rows.filter((row) => row?.statusHistory.some((step) => step.status === 'QUEUED'));
    expect(queued.length).toBeGreaterThanOrEqual(1);
    expect(most).toBe(1);
    expect(await rel.slots()).toEqual([]);
    const queuedEvents = (await rel.events()).filter((event) => event.detailType === 'Job Queued');
    expect(queuedEvents.length).toBe(queued.length);
  });

  it('releases the slot when the processing FAILS in Mapflow, and when a task error is caught (processing deleted mid-run)', async () => {
    // Prepare
    const failing = JSON.stringify({ ...JSON.parse(squareAoiText('slot-fails', 9.19, 45.46)), mapflow: { meta: { simulate: 'fail:dataloader.NoData' } } });
    const client = new MapflowClient({ baseUrl: rel.simulator.url, token: rel.token, email: rel.email });
    // Act: a failing processing
    const failed = await drop(rel, 'slot-fails', failing);
    const failedRow = await rel.bridge.waitForJob(failed.jobId, { timeoutMs: 30_000 });
    const slotsAfterFailure = await rel.slots();
    // Act: a processing removed in Mapflow while the bridge polls it
    const deleted = await drop(rel, 'slot-deleted', squareAoiText('slot-deleted', 11.57, 48.14));
    const processingId = await eventually(async () => (await rel.bridge.ledger.get(deleted.jobId))?.processingId);
    await client.deleteProcessing(processingId);
    const deletedRow = await rel.bridge.waitForJob(deleted.jobId, { timeoutMs: 30_000 });
    // Assess
    expect(failedRow?.status).toBe('FAILED');
    expect(slotsAfterFailure).toEqual([]);
    expect(deletedRow?.status).toBe('FAILED');
    expect(deletedRow?.reportKey).toMatch(/^failed\//);
    expect(await rel.slots()).toEqual([]);
    expect(rel.executions.filter((e) => e.name === deleted.jobId).map((e) => e.error?.Error ?? e.status)).toEqual(['SUCCEEDED']);
  });

  it('reclaims the slot of an execution stopped mid-poll; the reconciler finishes its job (EXECUTION_LOST, report, event) and the next job runs', async () => {
    // Prepare: a job polling its processing
    const stopped = await drop(rel, 'slot-stopped', squareAoiText('slot-stopped', 14.42, 50.08));
    await eventually(async () => ((await rel.bridge.ledger.get(stopped.jobId))?.status === 'IN_PROGRESS' ? true : undefined));
    // Act: StopExecution, as an operator would
    stopExecution(rel.bridge.engine, stopped.jobId);
    const execution = await rel.bridge.engine.waitFor(stopped.jobId);
    const slotsWhileDead = await rel.slots();
    await rel.bridge.reconcileNow();
    const row = await rel.bridge.ledger.get(stopped.jobId);
    // ... and the capacity is back: the next job gets the one slot
    const next = await drop(rel, 'slot-next', squareAoiText('slot-next', 13.4, 52.52));
    const nextRow = await rel.bridge.waitForJob(next.jobId, { timeoutMs: 30_000 });
    // Assess
    expect(execution?.status).toBe('ABORTED');
    expect(slotsWhileDead).toEqual([`${stopped.jobId}#0`]);
    expect(row?.status).toBe('FAILED');
    expect(row?.error?.code).toBe('EXECUTION_LOST');
    await expect(rel.bridge.s3.send(new HeadObjectCommand({ Bucket: rel.bridge.bucket, Key: row?.reportKey as string }))).resolves.toBeTruthy();
    expect((await rel.events(stopped.jobId)).at(-1)?.detailType).toBe('Job Failed');
    expect(nextRow?.status).toBe('SUCCEEDED');
    expect(await rel.slots()).toEqual([]);
  });

  it('a job stopped while it waits gives its place up: the released slot goes to the next waiter', async () => {
    // Prepare: the one slot held by a stand-in (released by the test, so nothing races the stop);
    // two jobs wait behind it, asleep on their task tokens; the first of them is stopped.
    const slots = bridgeContext(process.env).slots; // the bridge's own, with SendTaskSuccess to the local engine
    expect((await slots.acquire('stand-in#0', rel.bridge.engine.executionArn('stand-in'))).acquired).toBe(true);
    const killed = await drop(rel, 'slot-killed', squareAoiText('slot-killed', 11.25, 43.77));
    await eventually(async () => ((await rel.bridge.ledger.get(killed.jobId))?.status === 'QUEUED' ? true : undefined));
    const patient = await drop(rel, 'slot-patient', squareAoiText('slot-patient', 12.49, 41.89));
    await eventually(async () => ((await rel.bridge.ledger.get(patient.jobId))?.status === 'QUEUED' ? true : undefined));
    const waitingTokens = rel.bridge.engine.taskTokens.waiting();
    const queue = (await slots.waiters()).map((w) => w.holder);
    stopExecution(rel.bridge.engine, killed.jobId);
    const killedExecution = await rel.bridge.engine.waitFor(killed.jobId);
    // Act: the slot is released
    await slots.release('stand-in#0');
    const patientRow = await rel.bridge.waitForJob(patient.jobId, { timeoutMs: 60_000 });
    // Assess: both waited without polling, in arrival order; the stopped one never ran, the next one did
    expect(waitingTokens).toBe(2);
    expect(queue).toEqual([`${killed.jobId}#0`, `${patient.jobId}#0`]);
    expect(killedExecution?.status).toBe('ABORTED');
    expect(patientRow?.status).toBe('SUCCEEDED');
    expect((await rel.bridge.ledger.get(killed.jobId))?.statusHistory.some((h) => h.status === 'SUBMITTED')).toBe(false);
    expect(await slots.waiters()).toEqual([]);
    await rel.bridge.reconcileNow(); // settles the stopped job
    expect(await rel.slots()).toEqual([]);
  });

  it('hands the slot on the moment the poll sees the processing done: the next job is admitted before Store Results of the first', async () => {
    // Prepare: the one slot held by a stand-in; two jobs wait for it, asleep on their tokens
    const slots = bridgeContext(process.env).slots;
    expect((await slots.acquire('stand-in#0', rel.bridge.engine.executionArn('stand-in'))).acquired).toBe(true);
    const first = await drop(rel, 'handover-first', squareAoiText('handover-first', 9.19, 45.46));
    await eventually(async () => ((await rel.bridge.ledger.get(first.jobId))?.status === 'QUEUED' ? true : undefined));
    const second = await drop(rel, 'handover-second', squareAoiText('handover-second', 10.99, 45.44));
    await eventually(async () => ((await rel.bridge.ledger.get(second.jobId))?.status === 'QUEUED' ? true : undefined));
    let most = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        most = Math.max(most, (await rel.slots()).length);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    // Act
    await slots.release('stand-in#0');
    const rows = await Promise.all([first, second].map((job) => rel.bridge.waitForJob(job.jobId, { timeoutMs: 60_000 })));
    watching = false;
    await watcher;

    // Assess: the second job's grant (its Admit Job token settled) came inside the first job's
    // last poll, before the first job's Store Results began; never two slots held
    expect(rows.map((row) => row?.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    const lastPoll = tracesOf(first.jobId, 'Poll Processing').at(-1) as TaskTrace;
    const store = tracesOf(first.jobId, 'Store Results')[0] as TaskTrace;
    const secondAdmitted = tracesOf(second.jobId, 'Admit Job')[0] as TaskTrace;
    expect(secondAdmitted.endedAt).toBeGreaterThanOrEqual(lastPoll.startedAt);
    expect(secondAdmitted.endedAt).toBeLessThanOrEqual(lastPoll.endedAt);
    expect(secondAdmitted.endedAt).toBeLessThanOrEqual(store.startedAt);
    expect(most).toBe(1);
    expect(await rel.slots()).toEqual([]);
  });

  it('reclaims a slot whose execution is gone and keeps one whose execution runs', async () => {
    // Prepare: a slot left by a dead execution (e.g. Finish Part could not release it)
    // (added after the live job holds the bridge's one slot, with a larger maximum of its own)
    const live = await drop(rel, 'slot-live', squareAoiText('slot-live', 2.35, 48.85));
    await eventually(async () => ((await rel.slots()).includes(`${live.jobId}#0`) ? true : undefined));
    const slots = rel.slotsWithMax(5);
    await slots.acquire('ghost-job#0', rel.bridge.engine.executionArn('ghost-job'));
    const beforeReconcile = await rel.slots();
    // Act
    await rel.bridge.reconcileNow();
    const afterReconcile = await rel.slots();
    await rel.bridge.waitForJobs({ timeoutMs: 30_000 });
    // Assess
    expect(beforeReconcile.sort()).toEqual(['ghost-job#0', `${live.jobId}#0`].sort());
    expect(afterReconcile).toEqual([`${live.jobId}#0`]);
    expect((await rel.bridge.ledger.get(live.jobId))?.status).toBe('SUCCEEDED');
    expect(await rel.slots()).toEqual([]);
  });

  it('acquire and release are idempotent, and 10 parallel acquires for 3 slots take exactly 3', async () => {
    // Prepare
    const slots = rel.slotsWithMax(3);
    // Act
    const first = await slots.acquire('idem#0', 'arn:x');
    const again = await slots.acquire('idem#0', 'arn:x');
    await slots.release('idem#0');
    await slots.release('idem#0');
    const afterRelease = await rel.slots();
    const parallel = await Promise.all(Array.from({ length: 10 }, (_, i) => slots.acquire(`race-${i}#0`, `arn:race-${i}`)));
    const held = await rel.slots();
    await Promise.all(Array.from({ length: 10 }, (_, i) => slots.release(`race-${i}#0`)));
    // Assess
    expect(first).toEqual({ acquired: true, inUse: 1 });
    expect(again).toEqual({ acquired: true, inUse: 1 });
    expect(afterRelease).toEqual([]);
    expect(parallel.filter((result) => result.acquired)).toHaveLength(3);
    expect(held).toHaveLength(3);
    expect(await rel.slots()).toEqual([]);
  });
});

describe('concurrency slots: poll timeout', { timeout: 120_000 }, () => {
  let rel: ReliabilityBridge;

  beforeAll(async () => {
    rel = await startReliabilityBridge({ simulator: { processingSeconds: 120 }, bridge: { pollPolicy: { maxPolls: 3 } } });
  });
  afterAll(async () => {
    await rel?.close();
  });

  it('releases the slot when the part times out (PROCESSING_TIMEOUT)', async () => {
    // Act
    const job = await drop(rel, 'slot-timeout', squareAoiText('slot-timeout', -3.7, 40.42));
    const row = await rel.bridge.waitForJob(job.jobId, { timeoutMs: 30_000 });
    // Assess
    expect(row?.status).toBe('FAILED');
    const codes = [row?.error?.code, ...(row?.parts ?? []).map((part) => part.error?.code)];
    expect(codes).toContain('PROCESSING_TIMEOUT');
    expect(await rel.slots()).toEqual([]);
  });
});
