/**
 * The cloud assemblies the suites run (vitest.config.ts `globalSetup`), made
 * once per run before any test file starts, in this one process: the bundles
 * (once per state of functions/) and one synthesis per settings the suites
 * share (local run's defaults, the e2e bridge's, the reliability bridge's).
 * Test files then read them from the disk cache (packages/local/src/assembly/cache.ts)
 * instead of each synthesizing on a loaded machine; settings only one file
 * uses are synthesized by that file, once.
 *
 * `npm run test:construct` sets MAPFLOW_BRIDGE_SHARED_ASSEMBLIES=none: none of
 * its files runs a local bridge, and after a change to lib/ or functions/ the
 * three syntheses would hold every file back (a test that does need one still
 * synthesizes it on first use, through the same cache).
 */
import { loadLocalAssembly } from '../../packages/local/src/assembly/cache.ts';
import { localAssemblySettings } from '../../packages/local/src/bridge.ts';
import { RELIABILITY_ROUTES, TEST_ROUTES } from './routes.ts';

export default async function setup(): Promise<void> {
  if (process.env.MAPFLOW_BRIDGE_SHARED_ASSEMBLIES === 'none') return;
  const shared = [
    localAssemblySettings({}),
    localAssemblySettings({ routes: TEST_ROUTES }),
    // The reliability bridge talks to a simulator by URL: the production poll policy, its own routes.
    localAssemblySettings({ mapflow: { url: 'http://127.0.0.1', token: 'unused' }, routes: RELIABILITY_ROUTES }),
  ];
  const started = Date.now();
  // The first builds the handler bundles the others share; then the others side by side, each
  // synthesized in a process of its own (packages/local/src/assembly/synth-child.mjs).
  const [first, ...others] = shared;
  const loaded = [await loadLocalAssembly(first!), ...(await Promise.all(others.map((settings) => loadLocalAssembly(settings))))];
  const made = loaded.filter((assembly) => assembly.cache !== 'hit').length;
  if (made > 0) console.log(`cloud assemblies for the suites: ${made} synthesized in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
