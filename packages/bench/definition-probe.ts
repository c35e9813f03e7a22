/**
 * Loads the local definition in a fresh process (packages/bench/startup.ts, test/perf/definition-cache.test.ts):
 * prints { ms, cache, cdkLoaded } from process start. It imports packages/local/src/bridge.ts as `npm start` does,
 * so `cdkLoaded` says whether anything on a warm start's import path loaded aws-cdk-lib.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { loadLocalDefinition } from '@mapflow-bridge/local/assembly/local-definition-cache';
import { LOCAL_POLL_POLICY } from '@mapflow-bridge/local/bridge';

const result = await loadLocalDefinition({ pollPolicy: LOCAL_POLL_POLICY });
const ms = performance.now();
// aws-cdk-lib is CommonJS: once loaded, its modules are in the require cache.
const cdkLoaded = Object.keys(createRequire(import.meta.url).cache).some((id) => id.includes(`${path.sep}aws-cdk-lib${path.sep}`));
process.stdout.write(`${JSON.stringify({ ms, cache: result.cache, cdkLoaded })}\n`);
