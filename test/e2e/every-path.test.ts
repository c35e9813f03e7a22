/**
 * The same file gets the same treatment on every path into the local bridge
 * (issue 8.4, issue 11 keys): a file the bridge does not take, put with an S3
 * client or dropped into the drop folder, ends REJECTED UNSUPPORTED_FILE_TYPE
 * with a ledger row, failed/<path>/report.json and Job Received / Job
 * Rejected events; a key with dot or empty segments that reaches the state
 * machine (S3 on AWS accepts such keys) ends REJECTED INVALID_KEY with its
 * report under failed/.invalid-keys/ and nothing written anywhere else;
 * folder markers and hidden files are ignored.
 *
 * The local S3 here holds each notification 1 s before handing it over (as a
 * loaded machine can: s3rver runs in a child process and the notification
 * travels behind the HTTP answer), so every wait below also proves that
 * waitForJobs()/waitForJob() account for uploads answered but not yet notified.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionInput, LedgerRow } from '../../functions/core/model.ts';
import { jobIdFor, reportKey, DEFAULT_PREFIXES } from '../../functions/routing/index.ts';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import type { LocalEvent } from '../../packages/local/src/events/file.ts';
import { listKeys, readText, startTestBridge } from './helpers.ts';

/** Resolves once `check` gives a value (polled; the test's own timeout bounds it). */
async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, everyMs = 100): Promise<T> {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** How long the local S3 holds each notification (a waitForJobs that only let 100 ms pass returned before the job existed). */
const NOTIFICATION_DELAY_MS = 1_000;

describe('every path: one treatment for files the bridge cannot take', () => {
  let bridge: LocalBridge;
  const events: LocalEvent[] = [];
  const eventsOf = (jobId: string) => events.filter((event) => event.detail.jobId === jobId).map((event) => event.detailType);

  beforeAll(async () => {
    bridge = await startTestBridge({ dropFolder: true, dropStableMs: 300, s3NotificationDelayMs: NOTIFICATION_DELAY_MS, onEvent: (event) => events.push(event) });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  async function putObject(key: string, body: string): Promise<{ jobId: string; etag: string }> {
    const put = await bridge.s3.send(new PutObjectCommand({ Bucket: bridge.bucket, Key: key, Body: body }));
    const etag = (put.ETag ?? '').replace(/"/g, '');
    return { jobId: jobIdFor({ bucket: bridge.bucket, key, etag }), etag };
  }

  async function expectRejected(jobId: string, key: string, code: string): Promise<LedgerRow> {
    const row = await bridge.waitForJob(jobId, { timeoutMs: 240_000 });
    expect(row).toMatchObject({ status: 'REJECTED', error: { code }, input: { key } });
    expect(row!.statusHistory.map((step) => step.status)).toEqual(['RECEIVED', 'REJECTED']);
    const report = JSON.parse(await readText(bridge.s3, bridge.bucket, row!.reportKey!)) as { code: string; jobId: string; input: { key: string } };
    expect(report).toMatchObject({ code, jobId, input: { key } });
    await eventually(() => (eventsOf(jobId).includes('Job Rejected') ? true : undefined));
    expect(eventsOf(jobId)).toEqual(['Job Received', 'Job Rejected']);
    return row!;
  }

  it('rejects a .txt put with an S3 client: ledger row, failed/<path>/report.json, events', { timeout: 300_000 }, async () => {
    // Act
    const { jobId } = await putObject('inbox/notes/readme.txt', 'not an input');
    // Assess
    const row = await expectRejected(jobId, 'inbox/notes/readme.txt', 'UNSUPPORTED_FILE_TYPE');
    expect(row.kind).toBe('unsupported');
    expect(row.reportKey).toBe('failed/notes/readme.txt/report.json');
    expect(row.error?.message).toContain('.geojson');
  });

  it('rejects a .txt dropped into the drop folder the same way', { timeout: 300_000 }, async () => {
    // Prepare
    await mkdir(path.join(bridge.dropDir, 'drawings'), { recursive: true });
    // Act: waitForJobs covers the drop's stability window, the upload and its late notification
    await writeFile(path.join(bridge.dropDir, 'drawings', 'sketch.PNG'), 'not an image either');
    await bridge.waitForJobs({ timeoutMs: 240_000 });
    // Assess: the job has ended by then (its ledger row is final)
    const ended = (await bridge.ledger.listByStatus('REJECTED', { limit: 1_000 })).find((r) => r.input.key === 'inbox/drawings/sketch.PNG');
    expect(ended).toBeDefined();
    expect(bridge.engine.running()).toEqual([]);
    const row = await expectRejected(ended!.jobId, 'inbox/drawings/sketch.PNG', 'UNSUPPORTED_FILE_TYPE');
    expect(row.reportKey).toBe('failed/drawings/sketch.PNG/report.json');
  });

  it('rejects a U+2028 key put with an S3 client (INVALID_KEY), through dispatch and the IAM gate, with its report', { timeout: 300_000 }, async () => {
    // Prepare / Act: the local S3 stores it, as S3 does; the gate's wildcards must match the separator
    const key = 'inbox/sep\u2028line.geojson';
    const { jobId } = await putObject(key, '{}');
    // Assess
    const row = await expectRejected(jobId, key, 'INVALID_KEY');
    expect(row.reportKey).toMatch(/^failed\/\.invalid-keys\/[0-9a-f]{32}\/report\.json$/);
  });

  it('rejects a 1,000-byte key (INVALID_KEY) before anything is spent: its results key would pass 1,024 bytes', { timeout: 300_000 }, async () => {
    // Prepare: a valid GeoJSON, so only the length stands in the way
    const key = `inbox/long/${'x'.repeat(1000 - 'inbox/long/'.length - '.geojson'.length)}.geojson`;
    const square = JSON.stringify({ type: 'Polygon', coordinates: [[[10, 50], [10.01, 50], [10.01, 50.01], [10, 50.01], [10, 50]]] });
    // Act
    const { jobId } = await putObject(key, square);
    // Assess
    const row = await expectRejected(jobId, key, 'INVALID_KEY');
    expect(row.error?.message).toMatch(/over S3's limit of 1024/);
    expect(row.processingId).toBeUndefined();
    expect(Buffer.byteLength(row.reportKey!, 'utf8')).toBeLessThanOrEqual(1024);
  });

  it('rejects a name with escape sequences dropped into the drop folder (INVALID_KEY), once, without uploading it', { timeout: 300_000 }, async () => {
    // Prepare: the local S3 refuses this key; the old watcher retried it every 10 s for ever
    const name = 'esc-\x1b[2J\x1b]0;pwned\x07.geojson';
    const before = await listKeys(bridge.s3, bridge.bucket, 'inbox/');
    // Act
    await writeFile(path.join(bridge.dropDir, name), '{}');
    await bridge.waitForJobs({ timeoutMs: 240_000 });
    // Assess
    const ended = (await bridge.ledger.listByStatus('REJECTED', { limit: 1_000 })).find((r) => r.input.key === `inbox/${name}`);
    expect(ended).toBeDefined();
    await expectRejected(ended!.jobId, `inbox/${name}`, 'INVALID_KEY');
    expect(await listKeys(bridge.s3, bridge.bucket, 'inbox/')).toEqual(before);
    expect(await readdir(bridge.dropDir)).not.toContain(name);
  });

  it('waitForJobs waits for the job of an object put with an S3 client just before the call', { timeout: 300_000 }, async () => {
    // Prepare: the upload is answered, its notification is still on its way
    const { jobId } = await putObject('inbox/late-notice/readme.txt', 'not an input');
    // Act
    await bridge.waitForJobs({ timeoutMs: 240_000 });
    // Assess: the job exists and has ended, with no execution left running
    expect((await bridge.ledger.get(jobId))?.status).toBe('REJECTED');
    expect(bridge.engine.running()).toEqual([]);
  });

  it('ignores folder markers and hidden files put with an S3 client: no row, no event', { timeout: 300_000 }, async () => {
    // Prepare: a .txt after them shows when their notifications have been dispatched
    const ignored = await Promise.all([
      putObject('inbox/folder/', ''),
      putObject('inbox/.partial.geojson', '{}'),
      putObject('inbox/.sync/area.tif', 'x'),
      putObject('inbox/area/.~lock.area.geojson#', 'x'),
    ]);
    // Act
    const after = await putObject('inbox/after.txt', 'x');
    await bridge.waitForJob(after.jobId, { timeoutMs: 240_000 });
    await bridge.waitForJobs({ timeoutMs: 240_000 });
    // Assess
    for (const { jobId } of ignored) {
      expect(await bridge.ledger.get(jobId)).toBeUndefined();
      expect(eventsOf(jobId)).toEqual([]);
    }
  });

  it.each([
    ['a dot-dot segment', 'inbox/a/../../b.geojson'],
    ['a dot segment', 'inbox/./b.geojson'],
    ['an empty segment', 'inbox//b.tif'],
    ['a control character', 'inbox/b\u0007.geojson'],
  ])('rejects a key with %s that reaches the state machine (INVALID_KEY), writing only its report', { timeout: 300_000 }, async (_label, key) => {
    // Prepare: the execution dispatch starts for such a key (S3 takes it, on AWS and in the local S3 alike)
    const input: ExecutionInput = { jobId: jobIdFor({ bucket: bridge.bucket, key, etag: 'e1' }), input: { bucket: bridge.bucket, key, etag: 'e1', size: 2 } };
    const before = await listKeys(bridge.s3, bridge.bucket, '');
    // Act
    await bridge.engine.start(input.jobId, input);
    // Assess
    const row = await expectRejected(input.jobId, key, 'INVALID_KEY');
    expect(row.reportKey).toBe(reportKey(DEFAULT_PREFIXES, key));
    expect(row.reportKey).toMatch(/^failed\/\.invalid-keys\/[0-9a-f]{32}\/report\.json$/);
    const written = (await listKeys(bridge.s3, bridge.bucket, '')).filter((k) => !before.includes(k));
    expect(written.every((k) => k.startsWith('failed/.invalid-keys/'))).toBe(true);
    expect(written).toContain(row.reportKey);
    // Nothing landed beside the bucket's folder in the state folder.
    expect((await readdir(path.join(bridge.stateDir, 's3'))).sort()).toEqual([bridge.bucket]);
  });
});
