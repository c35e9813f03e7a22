/**
 * One start of the local bridge in a fresh process (bench/startup.ts runs it):
 * prints JSON { readyMs, firstPollMs } measured from process start, so module
 * loading (aws-cdk-lib on a cold definition cache) counts as it does for `npm start`.
 */
import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalBridge } from '../local/bridge.ts';

const sinceStart = () => performance.now();
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
const bridge = await startLocalBridge({ simulator: { processingSeconds: 30 }, dropFolder: false, reconcileIntervalMs: 0, log: () => undefined });
const readyMs = sinceStart();
const dir = await mkdtemp(path.join(tmpdir(), 'startup-probe-'));
const file = path.join(dir, 'one.geojson');
const ring = [[7.4, 46.9], [7.41, 46.9], [7.41, 46.91], [7.4, 46.91], [7.4, 46.9]];
await writeFile(file, JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } }] }));
const { jobId } = await bridge.putInbox(file, 'one.geojson');
let firstPollMs = -1;
for (let i = 0; i < 1200; i++) {
  const row = await bridge.ledger.get(jobId);
  // Poll Processing moves the job to IN_PROGRESS on its first look.
  if (row && ['IN_PROGRESS', 'SUCCEEDED', 'FAILED', 'REJECTED'].includes(row.status)) {
    firstPollMs = sinceStart();
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
}
await bridge.close();
process.stdout.write(`${JSON.stringify({ readyMs, firstPollMs })}\n`);
process.exit(0);
