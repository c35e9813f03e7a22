/**
 * Transient failures: a processing that FAILS with transient codes only is
 * restarted once (the same Mapflow processing, no second create) and the
 * ledger keeps both attempts; one that fails again, or with a code about the
 * input, is not restarted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { squareAoiText } from '../../packages/bench/fault-suite.ts';
import { tempFile } from '../e2e/helpers.ts';
import { processingsOf, startReliabilityBridge, type ReliabilityBridge } from './support.ts';

const withTrigger = (name: string, lon: number, lat: number, simulate: string) =>
  JSON.stringify({ ...JSON.parse(squareAoiText(name, lon, lat)), mapflow: { meta: { simulate } } });

describe('restart of transient failures', { timeout: 120_000 }, () => {
  let rel: ReliabilityBridge;

  beforeAll(async () => {
    rel = await startReliabilityBridge();
  });
  afterAll(async () => {
    await rel?.close();
  });

  const run = async (name: string, body: string) => {
    const { jobId } = await rel.bridge.putInbox(await tempFile(`${name}.geojson`, body), `${name}.geojson`);
    return { jobId, row: await rel.bridge.waitForJob(jobId, { timeoutMs: 40_000 }) };
  };

  it('restarts a processing that failed once with a transient code: SUCCEEDED, one processing, two attempts in the ledger', async () => {
    // Act
    const { jobId, row } = await run('fail-once', withTrigger('fail-once', 8.54, 47.37, 'fail-once:dataloader.TileNotReadable'));
    const audit = await rel.audit();
    const events = (await rel.events(jobId)).map((event) => event.detailType);
    // Assess
    expect(row?.status).toBe('SUCCEEDED');
    expect(row?.parts?.[0]?.attempts).toBe(2);
    expect(processingsOf(audit, jobId)).toHaveLength(1);
    const notes = JSON.stringify(row?.statusHistory ?? []);
    expect(notes).toContain('dataloader.TileNotReadable');
    expect(events.filter((type) => type === 'Processing Restarted')).toHaveLength(1);
    expect(events.at(-1)).toBe('Job Succeeded');
  });

  it('restarts only once: a processing that fails again with the transient code ends FAILED after two attempts', async () => {
    // Act
    const { jobId, row } = await run('fail-always', withTrigger('fail-always', 6.14, 46.2, 'fail:dataloader.TileNotReadable'));
    const events = (await rel.events(jobId)).map((event) => event.detailType);
    // Assess
    expect(row?.status).toBe('FAILED');
    expect(row?.parts?.[0]?.attempts).toBe(2);
    expect(events.filter((type) => type === 'Processing Restarted')).toHaveLength(1);
    expect(processingsOf(await rel.audit(), jobId)).toHaveLength(1);
  });

  it('does not restart a failure about the input', async () => {
    // Act
    const { jobId, row } = await run('fail-input', withTrigger('fail-input', 4.83, 45.76, 'fail:source-validator.PixelSizeTooHigh'));
    const events = (await rel.events(jobId)).map((event) => event.detailType);
    // Assess
    expect(row?.status).toBe('FAILED');
    expect(row?.parts?.[0]?.attempts ?? 1).toBe(1);
    expect(events).not.toContain('Processing Restarted');
  });
});
