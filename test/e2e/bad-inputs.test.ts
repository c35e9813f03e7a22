/**
 * Every file of the bad-inputs corpus (test/fixtures/bad-inputs/manifest.json)
 * through the whole local pipeline at once: each ends REJECTED with its
 * expected code (the controls SUCCEEDED), no handler crashes, every job is
 * final, and no rejected input created a processing but those left to
 * Mapflow's validator (`decidedBy: 'mapflow'`), which end REJECTED all the same.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import type { ExecutionRecord } from '../../packages/local/src/engine/engine.ts';
import { ROOT, startTestBridge } from './helpers.ts';

const CORPUS = path.join(ROOT, 'test/fixtures/bad-inputs');
const MANIFEST = path.join(CORPUS, 'manifest.json');

interface CorpusEntry {
  file: string;
  kind: 'geojson' | 'geotiff';
  expectedCode: string | null;
  note: string;
  model?: string;
  decidedBy?: 'mapflow';
}

/** Where an entry is dropped: GeoTIFFs on a route that runs their model, so the model checks apply. */
function inboxPath(entry: CorpusEntry): string {
  if (entry.kind === 'geojson') return entry.file;
  return entry.model?.includes('Aerial') ? `aerial/${entry.file}` : `buildings/${entry.file}`;
}

// The manifest is part of the repository: a missing one fails the suite instead of skipping it.
describe('bad-inputs corpus through the local pipeline', { timeout: 300_000 }, () => {
  const entries = JSON.parse(readFileSync(MANIFEST, 'utf8')) as CorpusEntry[];
  let bridge: LocalBridge;
  const executions: ExecutionRecord[] = [];

  beforeAll(async () => {
    bridge = await startTestBridge({ onExecutionStopped: (execution) => executions.push(execution) });
  });
  afterAll(async () => {
    await bridge?.close();
  });

  it('ends every file final, REJECTED with its expected code (controls SUCCEEDED), nothing processed for an input refused before the upload', async () => {
    // Prepare
    const controls = entries.filter((entry) => entry.expectedCode === null).length;
    expect(controls).toBeGreaterThan(0);
    expect(entries.length - controls).toBeGreaterThanOrEqual(30);
    // Act
    const jobs = await Promise.all(
      entries.map(async (entry) => ({ entry, ...(await bridge.putInbox(path.join(CORPUS, entry.file), inboxPath(entry))) })),
    );
    await bridge.waitForJobs({ timeoutMs: 240_000 });
    const outcomes = await Promise.all(jobs.map(async (job) => ({ ...job, row: await bridge.ledger.get(job.jobId) })));
    // Assess: one line per file, so a failure names every mismatch at once
    const actual = outcomes.map(({ entry, row }) => `${entry.file}: ${row?.status ?? 'NO ROW'} ${row?.error?.code ?? ''}`.trim());
    const expected = outcomes.map(({ entry }) =>
      entry.expectedCode === null ? `${entry.file}: SUCCEEDED` : `${entry.file}: REJECTED ${entry.expectedCode}`,
    );
    expect(actual).toEqual(expected);
    for (const { entry, row } of outcomes) {
      if (entry.expectedCode !== null) expect(row?.error?.message.length ?? 0, entry.file).toBeGreaterThan(10);
    }
    // No execution died outside the workflow: a stopped job ends in the 'Job Failed' state (JobFailed), never on a raw task error.
    const crashed = executions.filter((execution) => execution.status !== 'SUCCEEDED' && execution.error?.Error !== 'JobFailed');
    expect(crashed.map((execution) => `${execution.name}: ${execution.status} ${execution.error?.Error} ${execution.error?.Cause}`)).toEqual([]);
    expect(bridge.engine.running()).toEqual([]);
    // A file left to Mapflow's validator is uploaded and processed, and refused there.
    expect(bridge.simulator?.stats().processingsCreated).toBe(controls + entries.filter((entry) => entry.decidedBy === 'mapflow').length);
  });
});
