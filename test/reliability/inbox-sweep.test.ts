/**
 * Point 1 of issue 24: an input whose notification was lost (the bridge was
 * killed between the upload and the dispatch; on AWS a missed EventBridge
 * delivery) is found by the inbox sweep and becomes one job, through the same
 * idempotent dispatch: nothing already done runs again, hidden files stay
 * ignored, and a bounded sweep goes on where the last one stopped.
 */
import { PutObjectCommand, PutObjectTaggingCommand } from '@aws-sdk/client-s3';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { InputObject } from '../../functions/core/model.ts';
import { sweepInbox } from '../../functions/jobs/inbox-sweep.ts';
import { jobIdFor } from '../../functions/routing/index.ts';
import { bridgeContext } from '../../functions/runtime/context.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { localS3Client } from '../../packages/local/src/s3/client.ts';
import { startLocalS3 } from '../../packages/local/src/s3/server.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { squareAoi, startTestBridge } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

const BUCKET = 'mapflow-bridge-local';
const dirs: string[] = [];
let bridge: LocalBridge | undefined;
afterAll(async () => {
  await bridge?.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Puts objects into the state folder's S3 with no bridge listening: their notifications go nowhere, as when the bridge was killed. */
async function putWithoutBridge(stateDir: string, objects: Record<string, string>): Promise<void> {
  const s3rver = await startLocalS3({ directory: path.join(stateDir, 's3'), buckets: [BUCKET], port: 0 });
  try {
    const s3 = localS3Client(s3rver.endpoint, s3rver.credentials);
    for (const [key, body] of Object.entries(objects)) await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  } finally {
    await s3rver.close();
  }
}

describe('inbox sweep', () => {
  it('on start, dispatches every inbox object without a ledger row once, and nothing done before again', { timeout: 180_000 }, async () => {
    // Prepare: one job done by a first bridge; then three inputs land in its inbox with nobody to notify
    const stateDir = await mkdtemp(path.join(testTmp(), 'mfb-sweep-'));
    dirs.push(stateDir);
    const shared = { stateDir, ...(await sharedLedgerOptions('sweep')) };
    bridge = await startTestBridge(shared);
    const done = await bridge.putInbox(await aoiFile(stateDir, 'done', 7.40), 'done.geojson');
    expect((await bridge.waitForJob(done.jobId))?.status).toBe('SUCCEEDED');
    await bridge.close();
    bridge = undefined;
    await putWithoutBridge(stateDir, {
      'inbox/lost-1.geojson': squareAoi({ west: 7.41 }),
      'inbox/lost-2.geojson': squareAoi({ west: 7.42 }),
      'inbox/sub/lost-3.geojson': squareAoi({ west: 7.43 }),
      'inbox/.partial.geojson': squareAoi({ west: 7.44 }),
    });

    // Act: the bridge starts again on the same state
    const logged: string[] = [];
    bridge = await startTestBridge({ ...shared, log: (line) => logged.push(line) });
    await bridge.waitForJobs();

    // Assess: three new jobs, each SUCCEEDED with one final event; the old one untouched; the hidden file ignored
    const lost = ['inbox/lost-1.geojson', 'inbox/lost-2.geojson', 'inbox/sub/lost-3.geojson'];
    const rows = await Promise.all(lost.map(async (key) => bridge!.ledger.get(jobIdOf(await headEtag(bridge!, key), key))));
    expect(rows.map((row) => row?.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    expect(bridge.simulator?.stats().processingsCreated).toBe(3);
    const events = await readEvents(bridge.eventsFile);
    for (const row of rows) expect(events.filter((e) => e.detail.jobId === row!.jobId && e.detailType === 'Job Succeeded')).toHaveLength(1);
    expect(events.filter((e) => e.detail.jobId === done.jobId && e.detailType === 'Job Succeeded')).toHaveLength(1);
    expect(events.some((e) => e.detail.input.key === 'inbox/.partial.geojson')).toBe(false);
    expect(logged.join('\n')).toContain('3 file(s) in the inbox had no job yet');
  });

  it('on AWS terms: leaves young objects to their notification, skips inputs tagged done whose row expired, and bounds a run, going on next time', { timeout: 120_000 }, async () => {
    // Prepare: a local S3 and a ledger table; 7 old objects, one of them tagged as done by its job, 1 young one
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-sweep-aws-'));
    dirs.push(dir);
    const s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET], port: 0 });
    // Local clients sign with the process's keys (functions/runtime/aws.ts localCredentials): the ones this S3 issued.
    vi.stubEnv('AWS_ACCESS_KEY_ID', s3rver.credentials.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', s3rver.credentials.secretAccessKey);
    try {
      const { ensureLedgerTable } = await import('../../packages/local/src/dynamodb/index.ts');
      const { dynamodbEndpoint: endpoint, ledgerTable: table } = await sharedLedgerOptions('sweep');
      await ensureLedgerTable(endpoint, table);
      const ctx = bridgeContext({
        LEDGER_TABLE: table,
        BRIDGE_S3_ENDPOINT: s3rver.endpoint,
        BRIDGE_DYNAMODB_ENDPOINT: endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: s3rver.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: s3rver.credentials.secretAccessKey,
        MAPFLOW_TOKEN: 'unused',
      });
      const keys = Array.from({ length: 7 }, (_, i) => `inbox/old-${i}.geojson`);
      for (const key of keys) await ctx.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: squareAoi({ west: 7 + keys.indexOf(key) / 100 }) }));
      const tagged = await objectOf(ctx.s3, keys[3]!);
      await ctx.s3.send(new PutObjectTaggingCommand({ Bucket: BUCKET, Key: tagged.key, Tagging: { TagSet: [{ Key: 'mapflow-bridge:job-id', Value: jobIdFor(tagged) }, { Key: 'mapflow-bridge:status', Value: 'SUCCEEDED' }] } }));
      const later = new Date(Date.now() + 10 * 60_000);
      await ctx.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/young.geojson', Body: squareAoi() }));
      const dispatched: InputObject[] = [];
      const dispatch = async (objects: InputObject[]) => void dispatched.push(...objects);
      const bounded = { minAgeSeconds: 300, maxObjects: 3, maxPages: 10, now: () => later };

      // Act: three bounded runs (3 objects each), then one of a young object's view (now = real time)
      const first = await sweepInbox(ctx, BUCKET, dispatch, bounded);
      const second = await sweepInbox(ctx, BUCKET, dispatch, bounded);
      const third = await sweepInbox(ctx, BUCKET, dispatch, bounded);
      const fresh = await sweepInbox(ctx, BUCKET, async () => undefined, { minAgeSeconds: 300, resume: false });

      // Assess
      expect([first.listed, second.listed, third.listed]).toEqual([3, 3, 2]);
      expect([first.complete, second.complete, third.complete]).toEqual([false, false, true]);
      expect(dispatched.map((o) => o.key).sort()).toEqual([...keys.filter((k) => k !== tagged.key), 'inbox/young.geojson'].sort());
      expect(third.processedWithoutRow + second.processedWithoutRow + first.processedWithoutRow).toBe(1);
      expect(fresh.tooYoung).toBe(8);
      for (const object of dispatched) expect(object.etag).toMatch(/^[0-9a-f]{32}$/);
    } finally {
      vi.unstubAllEnvs();
      await s3rver.close();
    }
  });
});

async function aoiFile(dir: string, name: string, west: number): Promise<string> {
  const { writeFile } = await import('node:fs/promises');
  const file = path.join(dir, `${name}.geojson`);
  await writeFile(file, squareAoi({ west }));
  return file;
}

async function headEtag(b: LocalBridge, key: string): Promise<string> {
  const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
  return ((await b.s3.send(new HeadObjectCommand({ Bucket: b.bucket, Key: key }))).ETag ?? '').replace(/"/g, '');
}

function jobIdOf(etag: string, key: string): string {
  return jobIdFor({ bucket: BUCKET, key, etag });
}

async function objectOf(s3: import('@aws-sdk/client-s3').S3Client, key: string): Promise<InputObject> {
  const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
  return { bucket: BUCKET, key, etag: (head.ETag ?? '').replace(/"/g, ''), size: head.ContentLength ?? 0 };
}

