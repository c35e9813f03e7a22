/**
 * The stack's bucket is versioned, and so is the local one (issue 37 point
 * 7): a dropped file's version id flows from its S3 event through dispatch
 * into the job (ledger row, execution input), and the job reads that version.
 * A key overwritten before its job reads it still gives the first file's
 * results. Without versions the first job read the second file's bytes (or
 * none: the ETag it was made for was gone).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { jobIdFor } from '../../functions/routing/keys.ts';
import { squareAoi, startTestBridge } from './helpers.ts';

/** Each notification is held this long: the second upload is answered before the first one's event is out. */
const NOTIFICATION_DELAY_MS = 1_000;

describe('versioned bucket, end to end', () => {
  let bridge: LocalBridge;

  beforeAll(async () => {
    bridge = await startTestBridge({ s3NotificationDelayMs: NOTIFICATION_DELAY_MS });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('pins a job to the version its event names, even when the key is overwritten before the job reads it', { timeout: 300_000 }, async () => {
    // Prepare: the template's bucket is versioned
    expect(bridge.assembly.model.dataBucketVersioned).toBe(true);
    const key = 'inbox/pinned.geojson';
    const put = async (body: string) => {
      const answer = await bridge.s3.send(new PutObjectCommand({ Bucket: bridge.bucket, Key: key, Body: body }));
      const etag = (answer.ETag ?? '').replace(/"/g, '');
      return { versionId: answer.VersionId, jobId: jobIdFor({ bucket: bridge.bucket, key, etag }) };
    };

    // Act: a small square, then at once a square four times as wide under the same key
    const first = await put(squareAoi({ west: 7.46, sizeDeg: 0.005 }));
    const second = await put(squareAoi({ west: 7.46, sizeDeg: 0.02 }));
    const firstRow = await bridge.waitForJob(first.jobId, { timeoutMs: 240_000 });
    const secondRow = await bridge.waitForJob(second.jobId, { timeoutMs: 240_000 });

    // Assess: two versions, each job made from and pinned to its own
    expect(first.versionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(second.versionId).not.toBe(first.versionId);
    expect(firstRow).toMatchObject({ status: 'SUCCEEDED', input: { key, versionId: first.versionId } });
    expect(secondRow).toMatchObject({ status: 'SUCCEEDED', input: { key, versionId: second.versionId } });
    // The first job read the first file: its area is a sixteenth of the second's
    expect(firstRow!.areaSqKm).toBeGreaterThan(0);
    expect(secondRow!.areaSqKm! / firstRow!.areaSqKm!).toBeCloseTo(16, 0);
    const execution = bridge.engine.executions().find((e) => e.name === first.jobId);
    expect(JSON.stringify(execution?.input)).toContain(first.versionId!);
  });
});
