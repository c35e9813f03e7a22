/**
 * Loads the local definition in a fresh process (bench/startup.ts, test/perf/definition-cache.test.ts):
 * prints { ms, cache, cdkLoaded } from process start. It imports local/bridge.ts as `npm start` does,
 * so `cdkLoaded` says whether anything on a warm start's import path loaded aws-cdk-lib.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { loadLocalDefinition } from '../lib/private/local-definition-cache.ts';
import { LOCAL_POLL_POLICY } from '../local/bridge.ts';

const result = await loadLocalDefinition({ pollPolicy: LOCAL_POLL_POLICY });
const ms = performance.now();
// aws-cdk-lib is CommonJS: once loaded, its modules are in the require cache.
const cdkLoaded = Object.keys(createRequire(import.meta.url).cache).some((id) => id.includes(`${path.sep}aws-cdk-lib${path.sep}`));
process.stdout.write(`${JSON.stringify({ ms, cache: result.cache, cdkLoaded })}\n`);
