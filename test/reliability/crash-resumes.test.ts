/**
 * Issue 23, point 1(b): a job whose step keeps crashing the bridge is not
 * resumed forever. Each start counts the unclean stops a job was in flight
 * through; the third ends it FAILED (PROCESS_CRASHED) and the bridge serves
 * the other jobs. A clean stop clears the counts. Issue 39, point 1: only a
 * death the bridge recorded (crash.json, an uncaught error) counts; a kill
 * from outside leaves none, and the job is resumed.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { CRASH_RECORD_FILE, MAX_UNCLEAN_RESUMES, planResumes, PROCESS_CRASHED, readResumeCounts, STEPS_IN_FLIGHT_FILE, writeResumeCounts } from '../../packages/local/src/crash-resumes.ts';
import type { LocalEvent } from '../../packages/local/src/events/file.ts';
import { squareAoi, startTestBridge } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { testTmp } from '../support/temp.ts';

describe('planResumes', () => {
  it('resumes jobs after a clean stop without counting, and counts each unclean stop a job was in flight through', () => {
    // Act
    const clean = planResumes(['a', 'b'], undefined);
    const first = planResumes(['a', 'b'], clean.counts);
    const second = planResumes(['a', 'c'], first.counts);

    // Assess
    expect(clean).toEqual({ resume: ['a', 'b'], giveUp: [], counts: { a: 0, b: 0 } });
    expect(first.counts).toEqual({ a: 1, b: 1 });
    expect(second).toEqual({ resume: ['a', 'c'], giveUp: [], counts: { a: 2, c: 1 } });
  });

  it(`gives a job up at the ${MAX_UNCLEAN_RESUMES}rd unclean stop in a row and keeps resuming the others`, () => {
    // Act
    const plan = planResumes(['stuck', 'other'], { stuck: MAX_UNCLEAN_RESUMES - 1, other: 0 });

    // Assess
    expect(plan).toEqual({ resume: ['other'], giveUp: [{ jobId: 'stuck', uncleanStops: MAX_UNCLEAN_RESUMES }], counts: { other: 1 } });
  });

  it('counts an unclean stop only against the jobs a crash found in a step that decodes their input', () => {
    // Act: two jobs at two unclean stops; the last crash found only 'decoding' mid-step (a kill -9 from outside finds others waiting)
    const plan = planResumes(['decoding', 'waiting'], { decoding: MAX_UNCLEAN_RESUMES - 1, waiting: MAX_UNCLEAN_RESUMES - 1 }, MAX_UNCLEAN_RESUMES, new Set(['decoding']));
    // Assess
    expect(plan.giveUp).toEqual([{ jobId: 'decoding', uncleanStops: MAX_UNCLEAN_RESUMES }]);
    expect(plan.resume).toEqual(['waiting']);
    expect(plan.counts).toEqual({ waiting: 0 });
  });

  it('reads a counts file cut short by the crash as an unclean stop', async () => {
    // Prepare
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-resumes-'));
    await writeFile(path.join(dir, 'unclean-resumes.json'), '{"a":');

    // Act
    const counts = readResumeCounts(dir);

    // Assess
    expect(counts).toEqual({});
    expect(planResumes(['a'], counts).counts).toEqual({ a: 1 });
    await rm(dir, { recursive: true, force: true });
  });
});

describe('a local bridge after unclean stops', () => {
  let stateDir: string;
  let bridge: LocalBridge | undefined;

  afterAll(async () => {
    await bridge?.close();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  /** A bridge on a fresh state folder with one job in flight (Mapflow takes long), then closed: its job id. */
  async function jobInFlight(prefix: string): Promise<{ jobId: string; aoi: string; ledger: Awaited<ReturnType<typeof sharedLedgerOptions>> }> {
    stateDir = await mkdtemp(path.join(testTmp(), prefix));
    // The ledger outlives the bridge in the run's DynamoDB Local, as it would in DynamoDB; its own JVM would add nothing here.
    const ledger = await sharedLedgerOptions('crashes');
    let inProgress!: (event: LocalEvent) => void;
    const started = new Promise<LocalEvent>((resolve) => (inProgress = resolve));
    bridge = await startTestBridge({
      stateDir,
      ...ledger,
      simulator: { processingSeconds: 600 },
      onEvent: (event) => {
        if (event.detail.status === 'IN_PROGRESS') inProgress(event);
      },
    });
    const aoi = path.join(stateDir, 'area.geojson');
    await writeFile(aoi, squareAoi());
    await bridge.putInbox(aoi, 'stuck.geojson');
    const { detail } = await started;
    await bridge.close();
    bridge = undefined;
    return { jobId: detail.jobId, aoi, ledger };
  }

  it('resumes a job that was mid-step through three kills from outside (no crash record), blaming no file', { timeout: 240_000 }, async () => {
    // Prepare: what two starts killed with -9 leave (counts, the job mid-step), and a third kill: no crash record
    const { jobId, ledger } = await jobInFlight('mfb-kills-');
    writeResumeCounts(stateDir, { [jobId]: MAX_UNCLEAN_RESUMES - 1 });
    writeFileSync(path.join(stateDir, STEPS_IN_FLIGHT_FILE), JSON.stringify([jobId]));

    // Act
    bridge = await startTestBridge({ stateDir, ...ledger, simulator: { processingSeconds: 600 } });
    const row = await bridge.ledger.get(jobId);

    // Assess: resumed (unfinished, not FAILED), its count back to 0
    expect(row?.status).not.toBe('FAILED');
    expect(row?.error?.code).not.toBe(PROCESS_CRASHED);
    expect(readResumeCounts(stateDir)).toEqual({ [jobId]: 0 });
    await bridge.close();
    bridge = undefined;
    await rm(stateDir, { recursive: true, force: true });
  });

  it('ends a job in flight through three unclean stops FAILED with PROCESS_CRASHED, and finishes a new one', { timeout: 240_000 }, async () => {
    // Prepare: a job in flight (Mapflow takes long), the bridge stopped with it unfinished
    const { jobId, aoi, ledger } = await jobInFlight('mfb-crashes-');
    const detail = { jobId };
    const cleared = !existsSync(path.join(stateDir, 'unclean-resumes.json'));
    // What two starts that each died with the job in flight leave behind (a crash cannot run close()).
    writeResumeCounts(stateDir, { [detail.jobId]: MAX_UNCLEAN_RESUMES - 1 });
    // ... and the last of them died of an uncaught error (its crash record) while a step that decodes the job's input was running.
    writeFileSync(path.join(stateDir, STEPS_IN_FLIGHT_FILE), JSON.stringify([detail.jobId]));
    writeFileSync(path.join(stateDir, CRASH_RECORD_FILE), JSON.stringify({ jobs: [detail.jobId], reason: 'RangeError: Invalid typed array length', at: new Date().toISOString() }));

    // Act: the next start
    bridge = await startTestBridge({ stateDir, ...ledger, simulator: { processingSeconds: 1 } });
    const stuck = await bridge.ledger.get(detail.jobId);
    const other = await bridge.putInbox(aoi, 'other.geojson');
    const otherRow = await bridge.waitForJob(other.jobId);

    // Assess
    expect(cleared).toBe(true);
    expect(stuck).toMatchObject({ status: 'FAILED', error: { code: PROCESS_CRASHED } });
    expect(stuck?.error?.message).toMatch(/died 3 times in a row of an error no code caught.*RangeError: Invalid typed array length.*A kill or Ctrl-C never counts.*jobs retry/);
    expect(existsSync(path.join(stateDir, CRASH_RECORD_FILE))).toBe(false);
    expect(otherRow?.status).toBe('SUCCEEDED');
    expect(readResumeCounts(stateDir)).toEqual({});
  });
});
