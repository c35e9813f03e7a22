import { describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { Ledger, LedgerError } from '../../../../functions/ledger/ledger.ts';
import type { RegisterInput } from '../../../../functions/ledger/ledger.ts';
import { useDynamoDbLocal } from '../../../support/dynamodb.ts';

const ddb = useDynamoDbLocal();

function newJob(jobId = 'scene-1-abc'): RegisterInput {
  return {
    jobId,
    input: { bucket: 'drop', key: `inbox/${jobId}.tif`, etag: 'e1', size: 10 },
    kind: 'geotiff',
    routeName: 'default',
  };
}

async function freshLedger(clockStart = Date.parse('2025-01-01T00:00:00Z')) {
  const table = await ddb.createLedgerTable();
  let tick = clockStart;
  const ledger = new Ledger(ddb.doc, table, () => new Date((tick += 1000)));
  return { ledger, table };
}

describe('Ledger.register', () => {
  it('creates the row once; a duplicate register returns the first row unchanged', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    // Act
    const first = await ledger.register(newJob());
    const second = await ledger.register({ ...newJob(), routeName: 'other' });
    // Assess
    expect(first.created).toBe(true);
    expect(first.row).toMatchObject({ status: 'RECEIVED', entity: 'JOB', routeName: 'default' });
    expect(first.row.statusHistory).toEqual([{ status: 'RECEIVED', at: first.row.createdAt }]);
    expect(second.created).toBe(false);
    expect(second.row.routeName).toBe('default');
    expect(second.row.createdAt).toBe(first.row.createdAt);
  });

  it('lets exactly one of many concurrent registers create the row', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    // Act
    const results = await Promise.all(Array.from({ length: 8 }, () => ledger.register(newJob('race'))));
    // Assess
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.row.createdAt)).size).toBe(1);
  });
});

describe('Ledger.transition', () => {
  it('moves forward, appends history, stores the rank and sets finishedAt on a final status', async () => {
    // Prepare
    const { ledger, table } = await freshLedger();
    await ledger.register(newJob());
    // Act
    const queued = await ledger.transition('scene-1-abc', 'QUEUED');
    const done = await ledger.transition('scene-1-abc', 'SUCCEEDED', { actualCost: 3, resultPrefix: 'results/x/' }, 'all parts ok');
    // Assess
    expect(queued.changed).toBe(true);
    expect(done.changed).toBe(true);
    expect(done.row.status).toBe('SUCCEEDED');
    expect(done.row.statusHistory.map((h) => h.status)).toEqual(['RECEIVED', 'QUEUED', 'SUCCEEDED']);
    expect(done.row.statusHistory[2].note).toBe('all parts ok');
    expect(done.row.finishedAt).toBe(done.row.updatedAt);
    expect(done.row).toMatchObject({ actualCost: 3, resultPrefix: 'results/x/' });
    const raw = await ddb.doc.send(new GetCommand({ TableName: table, Key: { jobId: 'scene-1-abc' } }));
    expect(raw.Item?.statusRank).toBe(6);
    expect(done.row).not.toHaveProperty('statusRank');
  });

  it('refuses to move backwards or to the same status, and leaves the row untouched', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    await ledger.register(newJob());
    await ledger.transition('scene-1-abc', 'SUBMITTED');
    // Act
    const back = await ledger.transition('scene-1-abc', 'QUEUED', { mosaicId: 'm-1' });
    const same = await ledger.transition('scene-1-abc', 'SUBMITTED');
    // Assess
    expect(back.changed).toBe(false);
    expect(same.changed).toBe(false);
    expect(back.row.status).toBe('SUBMITTED');
    expect(back.row.mosaicId).toBeUndefined();
    expect(same.row.statusHistory).toHaveLength(2);
  });

  it('allows IN_PROGRESS to be re-entered (a restart) but never leaves a final status', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    await ledger.register(newJob());
    await ledger.transition('scene-1-abc', 'IN_PROGRESS');
    // Act
    const again = await ledger.transition('scene-1-abc', 'IN_PROGRESS', {}, 'restarted');
    const failed = await ledger.transition('scene-1-abc', 'FAILED', { error: { code: 'X', message: 'boom' } });
    const rejected = await ledger.transition('scene-1-abc', 'REJECTED');
    const succeeded = await ledger.transition('scene-1-abc', 'SUCCEEDED');
    // Assess
    expect(again.changed).toBe(true);
    expect(again.row.statusHistory.map((h) => h.status)).toEqual(['RECEIVED', 'IN_PROGRESS', 'IN_PROGRESS']);
    expect(failed.changed).toBe(true);
    expect(rejected.changed).toBe(false);
    expect(succeeded.changed).toBe(false);
    expect(succeeded.row.status).toBe('FAILED');
  });

  it('lets only one of two racing final transitions win', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    await ledger.register(newJob());
    // Act
    const [a, b] = await Promise.all([
      ledger.transition('scene-1-abc', 'SUCCEEDED'),
      ledger.transition('scene-1-abc', 'FAILED'),
    ]);
    // Assess
    expect([a.changed, b.changed].filter(Boolean)).toHaveLength(1);
    expect((await ledger.get('scene-1-abc'))?.statusHistory).toHaveLength(2);
  });

  it('lets a GeoTIFF wait as QUEUED after its upload and move on from where it was', async () => {
    // Prepare
    const { ledger, table } = await freshLedger();
    await ledger.register(newJob());
    await ledger.transition('scene-1-abc', 'UPLOADING');
    await ledger.transition('scene-1-abc', 'UPLOADED');
    // Act
    const queued = await ledger.transition('scene-1-abc', 'QUEUED', {}, 'waiting for a processing slot (1 in use)');
    const staleUpload = await ledger.transition('scene-1-abc', 'UPLOADED');
    const submitted = await ledger.transition('scene-1-abc', 'SUBMITTED');
    // Assess
    expect(queued.changed).toBe(true);
    expect(queued.row.status).toBe('QUEUED');
    expect(staleUpload.changed).toBe(false);
    expect(submitted.changed).toBe(true);
    expect(submitted.row.statusHistory.map((h) => h.status)).toEqual(['RECEIVED', 'UPLOADING', 'UPLOADED', 'QUEUED', 'SUBMITTED']);
    const raw = await ddb.doc.send(new GetCommand({ TableName: table, Key: { jobId: 'scene-1-abc' } }));
    expect(raw.Item?.statusRank).toBe(4);
  });

  it('keeps the rank of where the job was while it is QUEUED', async () => {
    // Prepare
    const { ledger, table } = await freshLedger();
    await ledger.register(newJob());
    await ledger.transition('scene-1-abc', 'UPLOADED');
    // Act
    await ledger.transition('scene-1-abc', 'QUEUED');
    // Assess
    const raw = await ddb.doc.send(new GetCommand({ TableName: table, Key: { jobId: 'scene-1-abc' } }));
    expect(raw.Item).toMatchObject({ status: 'QUEUED', statusRank: 3 });
  });

  it('refuses QUEUED twice in a row, once SUBMITTED, and after a final status', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    await ledger.register(newJob('a'));
    await ledger.register(newJob('b'));
    await ledger.register(newJob('c'));
    await ledger.transition('a', 'QUEUED');
    await ledger.transition('b', 'SUBMITTED');
    await ledger.transition('c', 'REJECTED');
    // Act
    const again = await ledger.transition('a', 'QUEUED');
    const afterSubmit = await ledger.transition('b', 'QUEUED');
    const afterFinal = await ledger.transition('c', 'QUEUED');
    // Assess
    expect([again.changed, afterSubmit.changed, afterFinal.changed]).toEqual([false, false, false]);
    expect(again.row.statusHistory.map((h) => h.status)).toEqual(['RECEIVED', 'QUEUED']);
    expect(afterSubmit.row.status).toBe('SUBMITTED');
    expect(afterFinal.row.status).toBe('REJECTED');
  });

  it('reports a missing job with a typed error', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    // Act
    const attempt = ledger.transition('nope', 'QUEUED');
    // Assess
    await expect(attempt).rejects.toMatchObject({ name: 'LedgerError', code: 'JOB_NOT_FOUND' });
  });

  it('rejects patches that would bypass the status rules', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    await ledger.register(newJob());
    // Act
    const attempt = ledger.update('scene-1-abc', { status: 'SUCCEEDED' });
    // Assess
    await expect(attempt).rejects.toBeInstanceOf(LedgerError);
    expect((await ledger.get('scene-1-abc'))?.status).toBe('RECEIVED');
  });
});

describe('Ledger parts and indexes', () => {
  it('upserts parts by index concurrently and indexes the first processing id', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    await ledger.register({ ...newJob(), kind: 'geojson' });
    // Act
    await Promise.all(
      [0, 1, 2, 3].map((index) => ledger.upsertPart('scene-1-abc', { index, name: `f${index}`, processingId: `p-${index}` })),
    );
    const row = await ledger.upsertPart('scene-1-abc', { index: 2, name: 'f2', processingId: 'p-2', status: 'OK', percentCompleted: 100 });
    const found = await ledger.findByProcessingId(row.processingId!);
    // Assess
    expect(row.parts?.map((p) => p.index)).toEqual([0, 1, 2, 3]);
    expect(row.parts?.[2]).toMatchObject({ status: 'OK', percentCompleted: 100 });
    expect(row.processingId).toMatch(/^p-[0-3]$/);
    expect(found?.jobId).toBe('scene-1-abc');
    expect(await ledger.findByProcessingId('unknown')).toBeUndefined();
  });

  it('lists jobs by status and recent jobs newest first', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    for (const id of ['a', 'b', 'c', 'd']) await ledger.register(newJob(id));
    await ledger.transition('b', 'QUEUED');
    await ledger.transition('d', 'FAILED');
    // Act
    const received = await ledger.listByStatus('RECEIVED');
    const recent = await ledger.listRecent({ limit: 3 });
    // Assess
    expect(received.map((r) => r.jobId)).toEqual(['c', 'a']);
    expect(recent.map((r) => r.jobId)).toEqual(['d', 'c', 'b']);
  });

  it('updates non-status fields and drops undefined values', async () => {
    // Prepare
    const { ledger } = await freshLedger();
    await ledger.register(newJob());
    // Act
    const row = await ledger.update('scene-1-abc', { percentCompleted: 40, messages: ['hello'], projectId: undefined });
    // Assess
    expect(row).toMatchObject({ percentCompleted: 40, messages: ['hello'], status: 'RECEIVED' });
    expect(row).not.toHaveProperty('projectId');
  });
});
