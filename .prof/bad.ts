import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startLocalBridge } from '../local/bridge.ts';
const ROOT = path.resolve(import.meta.dirname, '..');
const CORPUS = path.join(ROOT, 'test/fixtures/bad-inputs');
const entries = JSON.parse(readFileSync(path.join(CORPUS, 'manifest.json'), 'utf8')) as { file: string; kind: string; model?: string }[];
const routes = JSON.stringify({ routes: [
  { name: 'default', prefix: '' },
  { name: 'buildings', prefix: 'buildings/', model: '🏠 Buildings', processImages: true },
  { name: 'aerial', prefix: 'aerial/', model: '🏠⭐️ Buildings (Aerial)', processImages: true },
] });
const t0 = Date.now(); const c0 = process.cpuUsage();
const bridge = await startLocalBridge({ simulator: { processingSeconds: 2, seed: 7 }, routes, dropFolder: false, reconcileIntervalMs: 0, retryIntervalMs: 50, waitOverridesMs: { 'Wait For Slot': 200 }, log: () => undefined });
const c1 = process.cpuUsage(c0); console.log('start', Date.now() - t0, 'ms', (c1.user + c1.system) / 1000, 'ms cpu');
const t1 = Date.now(); const c2 = process.cpuUsage();
const inbox = (e: { file: string; kind: string; model?: string }) => e.kind === 'geojson' ? e.file : e.model?.includes('Aerial') ? `aerial/${e.file}` : `buildings/${e.file}`;
await Promise.all(entries.map((e) => bridge.putInbox(path.join(CORPUS, e.file), inbox(e))));
await bridge.waitForJobs({ timeoutMs: 240_000 });
const c3 = process.cpuUsage(c2); console.log('jobs', entries.length, Date.now() - t1, 'ms', (c3.user + c3.system) / 1000, 'ms cpu');
await bridge.close();
process.exit(0);
