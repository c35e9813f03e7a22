/**
 * Issue 24, the chaos run of seed 661127: a job's final ledger write and its
 * final event are two writes, and a kill -9 between them (a kill at "Job
 * Succeeded" lands while other jobs finish) left a SUCCEEDED row with no
 * final event: the row is final, so no start resumes it and no step ever
 * published the event. Killed here deterministically: the final event's
 * publish is where the process dies.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { GetObjectTaggingCommand } from '@aws-sdk/client-s3';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileEventPublisher } from '../../functions/events/publisher.ts';
import type { EventPublisher } from '../../functions/events/publisher.ts';
import type { WorkflowState } from '../../functions/jobs/workflow.ts';
import { registerJob } from '../../functions/jobs/steps/register-job.ts';
import { planProcessing } from '../../functions/jobs/steps/plan-processing.ts';
import { finishJob } from '../../functions/jobs/steps/finish-job.ts';
import { failJob } from '../../functions/jobs/steps/fail-job.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { publishFinalEventsOwed } from '../../packages/local/src/final-events.ts';
import { squareAoi, startTestBridge, tempFile } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';
import { Driver, dropInput, tagsOf, taskErrorOf, useBenches, type Bench } from '../support/workflow-harness.ts';

const FINAL = ['Job Succeeded', 'Job Failed', 'Job Rejected'];
const benches = useBenches();
const dirs: string[] = [];
let bridge: LocalBridge | undefined;
afterAll(async () => {
  await bridge?.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

class KilledHere extends Error {
  override name = 'KilledHere';
}

/** The bench's publisher, except that a final event's publish dies while `kill` is set. */
function killAtFinalEvent(bench: Bench): { kill: boolean } {
  const switched = { kill: true };
  const inner = bench.ctx.events;
  const publisher: EventPublisher = {
    publish: async (detailType, detail) => {
      if (switched.kill && FINAL.includes(detailType)) throw new KilledHere('killed between the final ledger write and the final event');
      return inner.publish(detailType, detail);
    },
  };
  (bench.ctx as { events: EventPublisher }).events = publisher;
  return switched;
}

/** A GeoJSON job run up to its Finish Job (every part done). */
async function jobAtFinish(bench: Bench, key: string): Promise<{ driver: Driver; state: WorkflowState }> {
  const start = await dropInput(benches.aws.s3, key, squareAoi());
  const driver = new Driver(bench.ctx);
  const state: WorkflowState = { jobId: start.jobId, input: start.input };
  state.job = await driver.task('Register Job', registerJob, { ...state, executionArn: `arn:aws:states:local:0:execution:jobs:${start.jobId}` });
  state.plan = await driver.task('Plan Processing', planProcessing, state);
  state.partOutcomes = await Promise.all(state.plan.parts.map((part) => driver.runPart(state.job!, part)));
  return { driver, state };
}

const finalsOf = (bench: Bench, jobId: string) => bench.events.filter((e) => e.detail.jobId === jobId && FINAL.includes(e.detailType)).map((e) => e.detailType);

describe('a kill between the final ledger write and the final event', { timeout: 180_000 }, () => {
  it('Finish Job run again (its Retry) publishes the event the first run owed, once', async () => {
    // Prepare: Finish Job dies after writing SUCCEEDED, before its event
    const bench = await benches.open();
    const kill = killAtFinalEvent(bench);
    const { driver, state } = await jobAtFinish(bench, 'inbox/dies-at-event.geojson');
    await expect(driver.task('Finish Job', finishJob, state)).rejects.toThrow(KilledHere);
    expect((await bench.ledger.get(state.jobId))).toMatchObject({ status: 'SUCCEEDED', finalEventPending: true });
    kill.kill = false;

    // Act: the step again, twice (a Retry, then a duplicate delivery)
    const again = await driver.task('Finish Job', finishJob, state);
    await driver.task('Finish Job', finishJob, state);

    // Assess
    expect(again.status).toBe('SUCCEEDED');
    expect(finalsOf(bench, state.jobId)).toEqual(['Job Succeeded']);
    expect((await bench.ledger.get(state.jobId))?.finalEventPending).toBeUndefined();
    expect(await tagsOf(benches.aws.s3, state.input.key)).toMatchObject({ 'mapflow-bridge:job-id': state.jobId, 'mapflow-bridge:status': 'SUCCEEDED' });
  });

  it('Fail Job after the Catch publishes the row’s own final event, not a second outcome', async () => {
    // Prepare: Finish Job dies after writing SUCCEEDED; its retries spent, the Catch goes to Fail Job
    const bench = await benches.open();
    const kill = killAtFinalEvent(bench);
    const { driver, state } = await jobAtFinish(bench, 'inbox/caught.geojson');
    const error = await driver.task('Finish Job', finishJob, state).catch((err: unknown) => err);
    kill.kill = false;

    // Act
    const failed = await driver.task('Fail Job', failJob, { ...state, error: taskErrorOf(error) });

    // Assess: the job stays SUCCEEDED, with its one final event
    expect(failed.status).toBe('SUCCEEDED');
    expect(finalsOf(bench, state.jobId)).toEqual(['Job Succeeded']);
  });

  it('the next local start publishes what a killed run owed, once, and not what got out before the kill', async () => {
    // Prepare: two final rows still marked; the event of the second is in the events file (killed after it, before the mark went)
    const bench = await benches.open();
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-final-events-'));
    dirs.push(dir);
    const eventsFile = path.join(dir, 'events.jsonl');
    const events = new FileEventPublisher(eventsFile, 'mapflow-bridge');
    const input = (name: string) => ({ bucket: 'b', key: `inbox/${name}.geojson`, etag: name, size: 1 });
    for (const jobId of ['owed', 'out']) {
      await bench.ledger.register({ jobId, input: input(jobId), kind: 'geojson', routeName: 'default' });
      await bench.ledger.transition(jobId, jobId === 'owed' ? 'SUCCEEDED' : 'FAILED');
    }
    await events.publish('Job Failed', { jobId: 'out', status: 'FAILED', kind: 'geojson', input: input('out'), routeName: 'default', at: new Date().toISOString() });

    // Act: two starts
    const first = await publishFinalEventsOwed(bench.ledger, events, eventsFile);
    const second = await publishFinalEventsOwed(bench.ledger, events, eventsFile);

    // Assess
    expect(first).toEqual({ published: ['owed'], alreadyOut: ['out'] });
    expect(second).toEqual({ published: [], alreadyOut: [] });
    const finals = (await readEvents(eventsFile)).map((e) => `${e.detail.jobId} ${e.detailType}`);
    expect(finals.sort()).toEqual(['out Job Failed', 'owed Job Succeeded']);
    expect((await bench.ledger.get('owed'))?.finalEventPending).toBeUndefined();
  });

  it('through the whole local bridge: a job killed at its final event gets it from the next start, once', async () => {
    // Prepare: a bridge whose final events never get out: the bridge stops there, as a kill -9 stops it
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-final-kill-'));
    dirs.push(stateDir);
    const shared = { stateDir, ...(await sharedLedgerOptions('final')) };
    let killed!: () => void;
    const atFinalEvent = new Promise<void>((resolve) => (killed = resolve));
    bridge = await startTestBridge({
      ...shared,
      // Every request allowed (no IAM here), except a final event's PutEvents: where this bridge dies.
      authorize: (request, raw) => {
        if (String(request.headers['x-amz-target']).endsWith('.PutEvents') && /"DetailType":"Job (Succeeded|Failed|Rejected)"/.test(raw.toString('utf8'))) {
          killed();
          return { status: 500, code: 'InternalException', message: 'the bridge died here' };
        }
        return undefined;
      },
    });
    const { jobId } = await bridge.putInbox(await tempFile('ends.geojson', squareAoi({ west: 7.45 })), 'ends.geojson');
    await atFinalEvent;
    await bridge.close();
    bridge = undefined;
    expect(await bridgeRow(shared, jobId)).toMatchObject({ status: 'SUCCEEDED', finalEventPending: true });
    expect((await readEvents(path.join(stateDir, 'events.jsonl'))).filter((e) => e.detail.jobId === jobId && FINAL.includes(e.detailType))).toEqual([]);

    // Act: the next start on the same state
    const logged: string[] = [];
    bridge = await startTestBridge({ ...shared, log: (line) => logged.push(line) });

    // Assess: its one final event, before the start returned; the mark gone
    const finals = (await readEvents(bridge.eventsFile)).filter((e) => e.detail.jobId === jobId && FINAL.includes(e.detailType));
    expect(finals.map((e) => [e.detailType, e.detail.status])).toEqual([['Job Succeeded', 'SUCCEEDED']]);
    expect((await bridge.ledger.get(jobId))?.finalEventPending).toBeUndefined();
    const { TagSet } = await bridge.s3.send(new GetObjectTaggingCommand({ Bucket: bridge.bucket, Key: 'inbox/ends.geojson' }));
    expect(TagSet).toEqual(expect.arrayContaining([{ Key: 'mapflow-bridge:job-id', Value: jobId }, { Key: 'mapflow-bridge:status', Value: 'SUCCEEDED' }]));
    expect(logged.join('\n')).toContain(`published the final event of 1 job(s) that ended as the bridge stopped: ${jobId}`);
  });
});

/** The ledger row with no bridge running (the shared DynamoDB Local, no gate). */
async function bridgeRow(shared: { dynamodbEndpoint: string; ledgerTable: string }, jobId: string) {
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  const { DynamoDBDocumentClient } = await import('@aws-sdk/lib-dynamodb');
  const { Ledger } = await import('../../functions/ledger/ledger.ts');
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: shared.dynamodbEndpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }));
  try {
    return await new Ledger(doc, shared.ledgerTable).get(jobId);
  } finally {
    doc.destroy();
  }
}
