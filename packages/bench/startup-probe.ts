/**
 * One start of the local bridge in a fresh process (packages/bench/startup.ts runs it):
 * prints JSON { readyMs, firstPollMs, startup } measured from process start, so module
 * loading (aws-cdk-lib on a cold definition cache) counts as it does for `npm start`;
 * `startup` is the bridge's phase timeline (LocalBridge.startup), plus the job's own
 * marks (file in the inbox, first poll) and whether aws-cdk-lib was loaded at all.
 * packages/bench/startup.ts also copies it into an older checkout of the bridge (--before):
 * it uses only what startLocalBridge offered then.
 */
import { createRequire } from 'node:module';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalBridge } from '@mapflow-bridge/local/bridge';

const sinceStart = () => performance.now();
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
// As `npm start` starts it (prewarm: an older bridge ignores the option).
const bridge = await startLocalBridge({ simulator: { processingSeconds: 30 }, dropFolder: false, reconcileIntervalMs: 0, prewarm: true, log: () => undefined } as Parameters<typeof startLocalBridge>[0]);
const readyMs = sinceStart();
const dir = await mkdtemp(path.join(tmpdir(), 'startup-probe-'));
const file = path.join(dir, 'one.geojson');
const ring = [[7.4, 46.9], [7.41, 46.9], [7.41, 46.91], [7.4, 46.91], [7.4, 46.9]];
await writeFile(file, JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } }] }));
const droppedAt = sinceStart();
const { jobId } = await bridge.putInbox(file, 'one.geojson');
const inInboxMs = sinceStart();
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
await rm(dir, { recursive: true, force: true });
// aws-cdk-lib is CommonJS: loaded, it is in the require cache (a warm start must not load it).
const cdkLoaded = Object.keys(createRequire(import.meta.url).cache).some((id) => id.includes(`${path.sep}aws-cdk-lib${path.sep}`));
// A bridge from before the fast-start work (packages/bench/startup.ts --before) kept no timeline.
const startup = (bridge as { startup?: typeof bridge.startup }).startup ?? { entryMs: Number.NaN, readyMs, definitionCache: 'off' as const, phases: [] };
const phases = [
  ...startup.phases,
  { name: 'one file into the inbox (putInbox)', startMs: droppedAt, endMs: inInboxMs },
  { name: 'dispatch to first poll (job IN_PROGRESS)', startMs: inInboxMs, endMs: firstPollMs },
];
process.stdout.write(`${JSON.stringify({ readyMs, firstPollMs, startup: { ...startup, phases, cdkLoaded } })}\n`);
process.exit(0);
