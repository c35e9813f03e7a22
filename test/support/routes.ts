/**
 * The routes the suites' bridges run with, in a module that loads nothing:
 * the global setup (assembly-setup.ts) synthesizes their assemblies in
 * vitest's own process, where loading the suites' helpers to read these two
 * constants took 4-6 s per project before the first test file could start.
 */
/** Routes of the end-to-end suites (test/e2e/helpers.ts): upload-only at the root, Buildings under buildings/, Aerial under aerial/. */
export const TEST_ROUTES = JSON.stringify({
  routes: [
    { name: 'default', prefix: '' },
    { name: 'buildings', prefix: 'buildings/', model: '🏠 Buildings', processImages: true },
    { name: 'aerial', prefix: 'aerial/', model: '🏠⭐️ Buildings (Aerial)', processImages: true },
  ],
});

/** Routes of the reliability suites (test/reliability/support.ts): upload-only root, Buildings on images under buildings/, a named project under project/, a second mosaic under second/. */
export const RELIABILITY_ROUTES = JSON.stringify({
  routes: [
    { name: 'default', prefix: '' },
    { name: 'buildings', prefix: 'buildings/', model: '🏠 Buildings', processImages: true },
    { name: 'project', prefix: 'project/', project: { name: 'reliability' } },
    { name: 'second', prefix: 'second/', mosaicName: 'reliability-second' },
  ],
});
