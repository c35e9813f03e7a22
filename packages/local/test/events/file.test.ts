import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { followEvents, parseEventLine, readEvents, repairEventsFile, type LocalEvent } from '../../src/events/file.ts';
import { testTmp } from '../../../../test/support/temp.ts';

const detail = { jobId: 'j1', status: 'RECEIVED', kind: 'geojson', routeName: 'default', at: '2024-01-01T00:00:00Z' };

describe('local events file', () => {
  it('parses both EventBridge spellings, with the detail as an object or a JSON string', () => {
    // Act
    const a = parseEventLine(JSON.stringify({ 'detail-type': 'Job Received', source: 'mapflow.bridge', detail }));
    const b = parseEventLine(JSON.stringify({ DetailType: 'Job Received', Source: 'mapflow.bridge', Detail: JSON.stringify(detail) }));
    // Assess
    expect(a).toEqual({ detailType: 'Job Received', source: 'mapflow.bridge', detail });
    expect(b).toEqual(a);
    expect(parseEventLine('not json')).toBeUndefined();
    expect(parseEventLine('{"detail-type": "x"}')).toBeUndefined();
  });

  it('follows appended lines, including a line written in two pieces', async () => {
    // Prepare
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-events-'));
    const file = path.join(dir, 'events.jsonl');
    await writeFile(file, JSON.stringify({ 'detail-type': 'Old', detail }) + '\n');
    const seen: LocalEvent[] = [];
    const follower = await followEvents(file, (e) => seen.push(e), { intervalMs: 10_000 });
    const line = JSON.stringify({ 'detail-type': 'Job Succeeded', detail: { ...detail, status: 'SUCCEEDED' } });
    // Act
    await appendFile(file, line.slice(0, 10));
    await follower.poll();
    await appendFile(file, line.slice(10) + '\n');
    await follower.close();
    // Assess: the event written before following started is not replayed.
    expect(seen.map((e) => e.detailType)).toEqual(['Job Succeeded']);
    expect((await readEvents(file)).map((e) => e.detailType)).toEqual(['Old', 'Job Succeeded']);
    await rm(dir, { recursive: true, force: true });
  });

  it('cuts a half-written last line (a stop mid-append), so the next event is not glued onto it and lost', async () => {
    // Prepare: two whole lines, then half of a third, as a kill -9 in the middle of an append leaves them
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-events-'));
    const file = path.join(dir, 'events.jsonl');
    const line = (type: string) => JSON.stringify({ 'detail-type': type, detail });
    const torn = line('Job Succeeded').slice(0, 40);
    await writeFile(file, `${line('Job Received')}\n${line('Job Queued')}\n${torn}`);

    // Act
    const removed = await repairEventsFile(file);
    await appendFile(file, `${line('Job Failed')}\n`);

    // Assess: the torn bytes are gone, every whole event and the next one read back
    expect(removed).toBe(torn.length);
    expect((await readEvents(file)).map((e) => e.detailType)).toEqual(['Job Received', 'Job Queued', 'Job Failed']);
    expect(await repairEventsFile(file)).toBe(0);
    expect(await repairEventsFile(path.join(dir, 'missing.jsonl'))).toBe(0);
    await rm(dir, { recursive: true, force: true });
  });
});
