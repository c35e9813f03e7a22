/**
 * The same file gets the same treatment on every path into the local bridge
 * (issue 8.4, issue 11 keys): a file the bridge does not take, put with an S3
 * client or dropped into the drop folder, ends REJECTED UNSUPPORTED_FILE_TYPE
 * with a ledger row, failed/<path>/report.json and Job Received / Job
 * Rejected events; a key with dot or empty segments that reaches the state
 * machine (S3 on AWS accepts such keys) ends REJECTED INVALID_KEY with its
 * report under failed/.invalid-keys/ and nothing written anywhere else;
 * folder markers and hidden files are ignored.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ExecutionInput, LedgerRow } from '../../functions/core/model.ts';
import { jobIdFor, reportKey, DEFAULT_PREFIXES } from '../../functions/routing/index.ts';
import type { LocalBridge } from '../../local/bridge.ts';
import type { LocalEvent } from '../../local/events/file.ts';
import { listKeys, readText, startTestBridge } from './helpers.ts';

/** Resolves once `check` gives a value (polled; the test's own timeout bounds it). */
async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, everyMs = 100): Promise<T> {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

describe('every path: one treatment for files the bridge cannot take', () => {
  let bridge: LocalBridge;
  const events: LocalEvent[] = [];
  const eventsOf = (jobId: string) => events.filter((event) => event.detail.jobId === jobId).map((event) => event.detailType);

  beforeAll(async () => {
    bridge = await startTestBridge({ dropFolder: true, dropStableMs: 300, onEvent: (event) => events.push(event) });
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
    // Act
    await writeFile(path.join(bridge.dropDir, 'drawings', 'sketch.PNG'), 'not an image either');
    // Wait on the job's first event: the drop waits out its stability window, and the
    // S3 notification arrives from the local S3's process after the upload returns.
    await vi.waitFor(() => expect(events.some((event) => event.detail.input.key === 'inbox/drawings/sketch.PNG')).toBe(true), { timeout: 240_000, interval: 100 });
    const uploaded = events.find((event) => event.detail.input.key === 'inbox/drawings/sketch.PNG');
    await bridge.waitForJob(uploaded!.detail.jobId, { timeoutMs: 240_000 });
    // Assess
    expect(uploaded).toBeDefined();
    const row = await expectRejected(uploaded!.detail.jobId, 'inbox/drawings/sketch.PNG', 'UNSUPPORTED_FILE_TYPE');
    expect(row.reportKey).toBe('failed/drawings/sketch.PNG/report.json');
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
    // Prepare: the execution dispatch starts on AWS, where S3 takes such keys (the local S3 refuses them)
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
