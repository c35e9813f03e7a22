/** Loads the local definition in a fresh process (bench/startup.ts): prints { ms, cache } from process start. */
import { loadLocalDefinition } from '../lib/local-definition-cache.ts';
import { LOCAL_POLL_POLICY } from '../local/bridge.ts';

const result = await loadLocalDefinition({ pollPolicy: LOCAL_POLL_POLICY });
process.stdout.write(`${JSON.stringify({ ms: performance.now(), cache: result.cache })}\n`);
