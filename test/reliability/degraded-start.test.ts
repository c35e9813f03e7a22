/**
 * Point 3 of issue 24: a bridge that started degraded (Mapflow answered only
 * faults at start-up) holds new jobs until Mapflow answers (LocalBridgeOptions
 * .dispatchAfter, which `start` resolves when it does), instead of refusing to start.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { jobIdFor } from '../../functions/routing/index.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { localS3Client } from '../../packages/local/src/s3/client.ts';
import { startLocalS3 } from '../../packages/local/src/s3/server.ts';
import { squareAoi, startTestBridge } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

const BUCKET = 'mapflow-bridge-local';
let bridge: LocalBridge | undefined;
let stateDir: string | undefined;
afterAll(async () => {
  await bridge?.close();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

describe('degraded start', () => {
  it('holds a job until Mapflow answers, then runs it', { timeout: 180_000 }, async () => {
    // Prepare: an input waiting in the inbox (the start's inbox sweep dispatches it), and a closed gate
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-degraded-'));
    const s3rver = await startLocalS3({ directory: path.join(stateDir, 's3'), buckets: [BUCKET], port: 0 });
    const put = await localS3Client(s3rver.endpoint, s3rver.credentials).send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inbox/held.geojson', Body: squareAoi() }));
    await s3rver.close();
    const jobId = jobIdFor({ bucket: BUCKET, key: 'inbox/held.geojson', etag: put.ETag ?? '' });
    let answer!: () => void;
    const mapflowAnswers = new Promise<void>((resolve) => (answer = resolve));

    // Act 1: the bridge starts (its sweep has queued the dispatch by the time it returns)
    bridge = await startTestBridge({ stateDir, ...(await sharedLedgerOptions('degraded')), dispatchAfter: mapflowAnswers });
    const whileHeld = { running: bridge.engine.running().length, row: await bridge.ledger.get(jobId) };
    // Act 2: Mapflow answers
    answer();
    await bridge.waitForJobs();

    // Assess
    expect(whileHeld).toEqual({ running: 0, row: undefined });
    expect((await bridge.ledger.get(jobId))?.status).toBe('SUCCEEDED');
  });
});
