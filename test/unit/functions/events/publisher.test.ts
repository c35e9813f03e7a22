import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { eventDetailFromRow, type LocalEventRecord } from '../../../../functions/events/publisher.ts';
import { createPublisher } from '../../../../functions/runtime/events.ts';
import type { JobEventDetail } from '../../../../functions/events/types.ts';
import { loadConfig } from '../../../../functions/runtime/config.ts';
import { ledgerRow } from '../../../support/ledger-row.ts';
import { testTmp } from '../../../support/temp.ts';

const eventBridge = mockClient(EventBridgeClient);
// The mocks patch the SDK clients' prototypes: put them back for the next file in this worker (vitest.config.ts, project 'shared').
afterAll(() => {
  eventBridge.restore();
});

const row = ledgerRow({
  status: 'SUCCEEDED',
  projectId: 'proj-1',
  processingId: 'p-0',
  parts: [
    { index: 0, name: 'a', processingId: 'p-0' },
    { index: 1, name: 'b', processingId: 'p-1' },
  ],
  actualCost: 4.5,
  resultPrefix: 'results/area.geojson/',
  executionArn: 'arn:aws:states:...:execution:x:area-0123456789abcdef',
  finishedAt: '2025-01-01T00:10:00.000Z',
});

describe('eventDetailFromRow', () => {
  it('carries the job, ids, costs and result location, and nothing internal', () => {
    // Act
    const detail = eventDetailFromRow(row);
    // Assess
    expect(detail).toEqual({
      jobId: 'area-0123456789abcdef',
      status: 'SUCCEEDED',
      kind: 'geojson',
      input: row.input,
      routeName: 'default',
      projectId: 'proj-1',
      processingIds: ['p-0', 'p-1'],
      actualCost: 4.5,
      resultPrefix: 'results/area.geojson/',
      at: '2025-01-01T00:10:00.000Z',
    });
  });
});

describe('EventBridge publisher', () => {
  beforeEach(() => eventBridge.reset());
  const config = loadConfig({ LEDGER_TABLE: 'ledger', EVENT_BUS_NAME: 'jobs-bus', EVENT_SOURCE: 'acme.bridge', AWS_REGION: 'eu-west-1' });
  const detail: JobEventDetail = eventDetailFromRow(row);

  it('puts one entry with the source, detail-type, bus and JSON detail', async () => {
    // Prepare
    eventBridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] });
    const publisher = createPublisher(config, new EventBridgeClient({ region: 'eu-west-1' }));
    // Act
    await publisher.publish('Job Succeeded', detail);
    // Assess
    const [call] = eventBridge.commandCalls(PutEventsCommand);
    const [entry] = call.args[0].input.Entries!;
    expect(entry).toMatchObject({ Source: 'acme.bridge', DetailType: 'Job Succeeded', EventBusName: 'jobs-bus' });
    expect(JSON.parse(entry.Detail!)).toEqual(detail);
    expect(entry.Time?.toISOString()).toBe(detail.at);
  });

  it('throws when EventBridge reports a failed entry in a 200 response', async () => {
    // Prepare
    eventBridge.on(PutEventsCommand).resolves({
      FailedEntryCount: 1,
      Entries: [{ ErrorCode: 'InternalFailure', ErrorMessage: 'try again' }],
    });
    const publisher = createPublisher(config, new EventBridgeClient({ region: 'eu-west-1' }));
    // Act
    const attempt = publisher.publish('Job Succeeded', detail);
    // Assess
    await expect(attempt).rejects.toMatchObject({
      name: 'EventPublishError',
      message: expect.stringContaining('InternalFailure (try again)'),
    });
  });

  it('wraps a failed call and keeps its cause', async () => {
    // Prepare
    const cause = Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
    eventBridge.on(PutEventsCommand).rejects(cause);
    const publisher = createPublisher(config, new EventBridgeClient({ region: 'eu-west-1' }));
    // Act
    const error = await publisher.publish('Job Failed', detail).catch((e: unknown) => e as Error);
    // Assess
    expect(error).toMatchObject({ name: 'EventPublishError' });
    expect((error as Error).message).toContain('ThrottlingException');
    expect((error as Error).cause).toBe(cause);
  });
});

describe('JSON-lines file publisher (local mode)', () => {
  it('appends one {time, source, detailType, detail} object per line, also under concurrency', async () => {
    // Prepare
    eventBridge.reset();
    const dir = await mkdtemp(join(testTmp(), 'events-'));
    const eventsFile = join(dir, 'nested', 'events.jsonl');
    const config = loadConfig({ LEDGER_TABLE: 'ledger', BRIDGE_EVENTS_FILE: eventsFile });
    const publisher = createPublisher(config);
    const detail = eventDetailFromRow(row);
    // Act
    await Promise.all(Array.from({ length: 20 }, (_, i) => publisher.publish(i % 2 ? 'Job Failed' : 'Job Received', { ...detail, jobId: `job-${i}` })));
    // Assess
    const lines = (await readFile(eventsFile, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(20);
    const records = lines.map((line) => JSON.parse(line) as LocalEventRecord);
    expect(new Set(records.map((r) => r.detail.jobId)).size).toBe(20);
    expect(records[0]).toEqual({ time: detail.at, source: 'mapflow.bridge', detailType: expect.any(String), detail: expect.any(Object) });
    // Each line keeps its own detail-type and detail together (no interleaving of concurrent writes).
    const byJob = new Map(records.map((r) => [r.detail.jobId, r]));
    for (let i = 0; i < 20; i++) {
      expect(byJob.get(`job-${i}`)).toEqual({
        time: detail.at,
        source: 'mapflow.bridge',
        detailType: i % 2 ? 'Job Failed' : 'Job Received',
        detail: { ...detail, jobId: `job-${i}` },
      });
    }
    expect(eventBridge.commandCalls(PutEventsCommand)).toHaveLength(0);
  });
});
