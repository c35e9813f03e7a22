/**
 * Prebuilds every Lambda handler into dist/assets/handlers/<name>/index.mjs
 * with the settings the construct bundles with from source (lib/private/bundling.ts:
 * ESM for Node.js 24, minified, AWS SDK bundled and tree-shaken by its
 * plugin, the require banner), so the published package synthesizes without
 * esbuild (BridgeFunction takes these bundles through lambda.Code.fromAsset
 * when they exist).
 *
 *   npx tsx scripts/build-handlers.ts        (part of `npm run build`)
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { HANDLER_NAMES } from '../functions/core/catalog.ts';
import { lambdaEsbuildOptions } from '../lib/private/bundling.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const HANDLERS_OUT = path.join(ROOT, 'dist', 'assets', 'handlers');

export async function buildHandlers(outDir = HANDLERS_OUT): Promise<string[]> {
  await rm(outDir, { recursive: true, force: true });
  const names = [...new Set(HANDLER_NAMES)];
  const entryPoints = names.map((name) => {
    const entry = path.join(ROOT, 'functions', 'handlers', `${name}.ts`);
    if (!existsSync(entry)) throw new Error(`handler ${name} has no file ${entry}`);
    return { in: entry, out: path.join(name, 'index') };
  });
  // One esbuild run for all handlers; splitting off, so each folder is a self-contained bundle.
  await build({
    entryPoints,
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    // The construct's options (lib/private/bundling.ts): the SDK bundled, the lean credential provider.
    ...lambdaEsbuildOptions(),
    sourcemap: false,
    logLevel: 'warning',
  });
  return names;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const started = Date.now();
  const names = await buildHandlers();
  console.log(`built ${names.length} handler bundles into ${path.relative(ROOT, HANDLERS_OUT)} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
