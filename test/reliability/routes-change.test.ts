/**
 * Issue 39, point 10: a restart with other routes never rewrites history. The
 * bridge stops with one job in its processing and others planned and QUEUED
 * for the one slot, on routes that run Forest at the inbox root and Roads
 * under roads/. It starts again on routes without a roads route and with the
 * default model at the root, against the same Mapflow restarted with another
 * processing time (the simulator's `--processing-seconds`). Every job keeps
 * the route it was registered with: the model Mapflow ran (asked of the
 * simulator), the request in job.json, the ledger row and the events agree.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MapflowClient } from '../../functions/mapflow/index.ts';
import { DEFAULT_PREFIXES, resultKeys } from '../../functions/routing/index.ts';
import { auditMapflow, squareAoiText } from '../../packages/bench/fault-suite.ts';
import { startLocalBridge, type LocalBridge, type LocalBridgeOptions } from '../../packages/local/src/bridge.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { tempFile } from '../e2e/helpers.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { RELIABILITY_ROUTES } from '../support/routes.ts';
import { testTmp } from '../support/temp.ts';
import { eventually, processingsOf, RELIABILITY_BRIDGE_OPTIONS } from './support.ts';

const TOKEN = 'routes-change-token-4c81d2';
const EMAIL = 'routes-change@mapflow-bridge.invalid';
const FINAL = ['Job Succeeded', 'Job Failed', 'Job Rejected'];
/** The routes of the first start: Forest at the root, Roads under roads/. */
const FIRST_ROUTES = JSON.stringify({
  routes: [
    { name: 'default', prefix: '', model: '🌲 Forest and trees' },
    { name: 'roads', prefix: 'roads/', model: '🚗 Roads' },
  ],
});

describe('a restart with other routes while jobs are in flight', { timeout: 360_000 }, () => {
  let simulator: RunningSimulator;
  let simulatorDir: string;
  let stateDir: string;
  let bridge: LocalBridge | undefined;
  let ledger: Pick<LocalBridgeOptions, 'dynamodbEndpoint' | 'ledgerTable'>;

  beforeAll(async () => {
    simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-routes-change-sim-'));
    stateDir = await mkdtemp(path.join(testTmp(), 'mfb-routes-change-state-'));
    ledger = await sharedLedgerOptions('routes-change');
    // Long enough for the other two to plan and queue behind the first; its duration is fixed when it is created.
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 12, seed: 11, dataDir: simulatorDir });
  });
  afterAll(async () => {
    await bridge?.close();
    await simulator?.close();
    await rm(simulatorDir, { recursive: true, force: true });
    await rm(stateDir, { recursive: true, force: true });
  });

  it('keeps each job on the route it was registered with: records name the model Mapflow ran', async () => {
    // Prepare: one job processing (12 s), two planned and QUEUED for the only slot, on the first routes
    const options = (routes: string): LocalBridgeOptions => ({
      stateDir,
      ...ledger,
      mapflow: { url: simulator.url, token: TOKEN, email: EMAIL },
      ...RELIABILITY_BRIDGE_OPTIONS,
      routes,
      maxConcurrentProcessings: 1,
    });
    bridge = await startLocalBridge(options(FIRST_ROUTES));
    const first = bridge;
    const files = [
      { key: 'bern.geojson', lon: 7.44, lat: 46.94, route: 'default', model: '🌲 Forest and trees' },
      { key: 'roads/zurich.geojson', lon: 8.54, lat: 47.37, route: 'roads', model: '🚗 Roads' },
      { key: 'basel.geojson', lon: 7.59, lat: 47.56, route: 'default', model: '🌲 Forest and trees' },
    ];
    const jobs: ((typeof files)[number] & { name: string; jobId: string })[] = [];
    for (const file of files) {
      const name = path.basename(file.key, '.geojson');
      jobs.push({ ...file, name, ...(await first.putInbox(await tempFile(`${name}.geojson`, squareAoiText(name, file.lon, file.lat)), file.key)) });
    }
    await eventually(async () => {
      const statuses = (await Promise.all(jobs.map((job) => first.ledger.get(job.jobId)))).map((row) => row?.status);
      return statuses.filter((s) => s === 'IN_PROGRESS').length === 1 && statuses.filter((s) => s === 'QUEUED').length === 2 ? true : undefined;
    }, { timeoutMs: 120_000 });

    // Act: stop; Mapflow restarted with another processing time; the bridge started on other routes
    await first.close();
    await simulator.close();
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 1, seed: 11, dataDir: simulatorDir, port: simulator.port });
    bridge = await startLocalBridge(options(RELIABILITY_ROUTES));
    const rows = await Promise.all(jobs.map((job) => bridge!.waitForJob(job.jobId, { timeoutMs: 180_000 })));

    // Assess: per job, what Mapflow ran (v1 names the model), job.json, the ledger row and the events
    expect(rows.map((row) => row?.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    const client = new MapflowClient({ baseUrl: simulator.url, token: TOKEN, email: EMAIL });
    const events = await readEvents(bridge.eventsFile);
    for (const [i, job] of jobs.entries()) {
      const row = rows[i]!;
      const ran = await client.getProcessingV1(row.processingId!);
      const { jobJsonKey } = resultKeys(DEFAULT_PREFIXES, `inbox/${job.key}`, job.name);
      const stored = await bridge.s3.send(new GetObjectCommand({ Bucket: bridge.bucket, Key: jobJsonKey }));
      const jobJson = JSON.parse(await stored.Body!.transformToString()) as { route: string; request: { wdId: string } };
      expect({ file: job.key, model: ran.workflowDef?.name }).toEqual({ file: job.key, model: job.model });
      expect({ file: job.key, route: jobJson.route, wdId: jobJson.request.wdId }).toEqual({ file: job.key, route: job.route, wdId: ran.workflowDef?.id });
      expect(row.routeName).toBe(job.route);
      const finals = events.filter((e) => e.detail.jobId === job.jobId && FINAL.includes(e.detailType));
      expect(finals.map((e) => [e.detailType, e.detail.routeName])).toEqual([['Job Succeeded', job.route]]);
    }
    const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
    for (const job of jobs) expect(processingsOf(audit, job.jobId)).toHaveLength(1);
  });
});
