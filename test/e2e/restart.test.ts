/**
 * State survives a restart: a file copied into the drop folder becomes a job;
 * the bridge is stopped while Mapflow processes it; started again on the same
 * state folder, it resumes the job, reuses the processing and finishes it.
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import type { LocalEvent } from '../../packages/local/src/events/file.ts';
import { LIVE_SHAPES, SAMPLES, startTestBridge } from './helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

// Both simulator modes: the reference shapes, and the live service's (paged lists, v2 paths, null/UNPROCESSED first).
// The first keeps its ledger on disk in a DynamoDB Local of its own, as `npm start` does; the second, about the
// shapes, keeps it in a table of the run's shared one (a JVM start less).
describe.each([
  { mode: 'reference shapes', shapes: {}, ownLedger: true },
  { mode: 'live shapes', shapes: LIVE_SHAPES, ownLedger: false },
])('local bridge across a restart ($mode)', ({ shapes, ownLedger }) => {
  let stateDir: string;
  let bridge: LocalBridge | undefined;

  afterAll(async () => {
    await bridge?.close();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  it('uploads from the drop folder, and resumes an unfinished job after a restart', { timeout: 180_000 }, async () => {
    // Prepare
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-restart-'));
    const ledger = ownLedger ? {} : await sharedLedgerOptions('restart');
    let inProgress!: (event: LocalEvent) => void;
    const started = new Promise<LocalEvent>((resolve) => (inProgress = resolve));
    bridge = await startTestBridge({
      stateDir,
      ...ledger,
      dropFolder: true,
      // The copy is whole at once; the stability window itself is tested in packages/local/test/s3/drop-folder.test.ts.
      // The job is unfinished in the ledger when the bridge stops, whether or not Mapflow finishes meanwhile.
      dropStableMs: 300,
      simulator: { ...shapes, processingSeconds: 4 },
      onEvent: (event) => {
        if (event.detail.status === 'IN_PROGRESS') inProgress(event);
      },
    });
    // Act 1: a file copied into the drop folder starts a job; stop while it is processed
    await copyFile(path.join(SAMPLES, 'bern-three-quarters.geojson'), path.join(bridge.dropDir, 'bern.geojson'));
    const { detail } = await started;
    const before = await bridge.ledger.get(detail.jobId);
    await bridge.close();
    bridge = undefined;
    // Act 2: start again on the same state
    bridge = await startTestBridge({ stateDir, ...ledger, dropFolder: true, simulator: { ...shapes, processingSeconds: 4 } });
    const after = await bridge.waitForJob(detail.jobId);
    // Assess
    expect(detail.input.key).toBe('inbox/bern.geojson');
    expect(before?.status).toBe('IN_PROGRESS');
    expect(after?.status).toBe('SUCCEEDED');
    expect(after?.processingId).toBe(before?.processingId);
    expect(bridge.simulator?.stats().processingsCreated).toBe(0);
  });
});
