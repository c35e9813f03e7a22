/**
 * Loads the local bridge's cloud assembly in a fresh process (packages/bench/startup.ts,
 * test/perf/assembly-synth-process.test.ts): prints { ms, cache, cdkLoaded, peakRssMb }
 * from process start, as the definition probe does for the definition alone. A run with
 * the cache on fills it.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { resourceUsage } from 'node:process';
import { loadLocalAssembly } from '@mapflow-bridge/local/assembly/cache';
import { localAssemblySettings } from '@mapflow-bridge/local/bridge';

const result = await loadLocalAssembly(localAssemblySettings({}));
const ms = performance.now();
await result.dispose();
// aws-cdk-lib is CommonJS: once loaded, its modules are in the require cache.
const cdkLoaded = Object.keys(createRequire(import.meta.url).cache).some((id) => id.includes(`${path.sep}aws-cdk-lib${path.sep}`));
// The kernel's high-water mark of this process (maxRSS is in KiB).
const peakRssMb = Math.round(resourceUsage().maxRSS / 1024);
process.stdout.write(`${JSON.stringify({ ms, cache: result.cache, cdkLoaded, peakRssMb })}\n`);
