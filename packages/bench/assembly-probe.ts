/**
 * Loads the local bridge's cloud assembly in a fresh process (packages/bench/startup.ts):
 * prints { ms, cache, cdkLoaded } from process start, as the definition probe
 * does for the definition alone. A run with the cache on fills it.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { loadLocalAssembly } from '@mapflow-bridge/local/assembly/cache';
import { localAssemblySettings } from '@mapflow-bridge/local/bridge';

const result = await loadLocalAssembly(localAssemblySettings({}));
const ms = performance.now();
await result.dispose();
const cdkLoaded = Object.keys(createRequire(import.meta.url).cache).some((id) => id.includes(`${path.sep}aws-cdk-lib${path.sep}`));
process.stdout.write(`${JSON.stringify({ ms, cache: result.cache, cdkLoaded })}\n`);
