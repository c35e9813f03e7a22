/**
 * Bundles the Lambda handlers with esbuild's JavaScript API and the options of
 * lib/private/bundling.ts, for BridgeFunction's local bundling (and nothing else).
 *
 * CDK asks for bundles synchronously (ILocalBundling.tryBundle) and esbuild
 * runs plugins only in its asynchronous API, so the construct runs this file
 * as a child process, as NodejsFunction runs the esbuild binary. The first
 * function of a synth bundles every handler of its folder in one child and one
 * esbuild run (the modules they share, the AWS SDK above all, are read once);
 * the others take their bundle from that batch. One child per function took
 * about 9 s of a synth's wall time on a 2-core machine, the batch about 2 s.
 *
 *   node lib/private/bundle-handler.ts <handlers dir> <output root> [--external-aws-sdk] [--source-maps]
 *
 * The output is `<output root>/<handler>/index.mjs`, byte for byte what a
 * build of that handler alone gives.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { lambdaEsbuildOptions, type LambdaBundleOptions } from './bundling.ts';

export interface HandlerBundleOptions extends LambdaBundleOptions {
  /** Write `index.mjs.map` beside the bundle (without the sources). @default false */
  readonly sourceMaps?: boolean;
}

/** Batches made in this process: key (handlers dir, output root, options) → the folder holding every handler's bundle. */
const batches = new Map<string, string>();

/**
 * Bundles `entry` into `outDir/index.mjs` (and its map when asked); throws with esbuild's messages when it fails.
 * The bundle comes from the batch of every handler in `entry`'s folder, made on the first call.
 */
export function bundleHandlerSync(entry: string, outDir: string, options: HandlerBundleOptions = {}): void {
  const handlersDir = path.dirname(path.resolve(entry));
  // Beside CDK's own bundling folder, so that a source map's relative paths hold once CDK stages the asset.
  const outputRoot = path.dirname(path.resolve(outDir));
  const key = JSON.stringify([handlersDir, outputRoot, options.externalAwsSdk === true, options.sourceMaps === true]);
  let batch = batches.get(key);
  if (!batch) {
    batch = bundleBatchSync(handlersDir, outputRoot, options);
    batches.set(key, batch);
  }
  const name = path.basename(entry, path.extname(entry));
  const bundle = path.join(batch, name, 'index.mjs');
  if (!existsSync(bundle)) throw new Error(`Bundling ${path.basename(entry)}: the batch of ${handlersDir} holds no bundle of it`);
  mkdirSync(outDir, { recursive: true });
  copyFileSync(bundle, path.join(outDir, 'index.mjs'));
  if (options.sourceMaps) copyFileSync(`${bundle}.map`, path.join(outDir, 'index.mjs.map'));
}

/** Every handler of `handlersDir` bundled by one child process into a temporary folder of `outputRoot`, removed at exit. */
function bundleBatchSync(handlersDir: string, outputRoot: string, options: HandlerBundleOptions): string {
  mkdirSync(outputRoot, { recursive: true });
  const batch = mkdtempSync(path.join(outputRoot, 'bundling-temp-mapflow-bridge-'));
  process.once('exit', () => rmSync(batch, { recursive: true, force: true }));
  const self = fileURLToPath(import.meta.url);
  // The Node that runs the synth: Node 24 in this project runs TypeScript files as they are; an older one through tsx.
  const loader = self.endsWith('.ts') && !(process.features as { typescript?: string | false }).typescript ? ['--import', 'tsx'] : [];
  const args = [...loader, self, handlersDir, batch];
  if (options.externalAwsSdk) args.push('--external-aws-sdk');
  if (options.sourceMaps) args.push('--source-maps');
  const result = spawnSync(process.execPath, args, { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
  if (result.error) throw new Error(`Bundling the handlers of ${handlersDir} could not start: ${result.error.message}`, { cause: result.error });
  if (result.status !== 0) {
    throw new Error(`Bundling the handlers of ${handlersDir} failed (exit ${result.status ?? result.signal}):\n${`${result.stderr}${result.stdout}`.trim()}`);
  }
  return batch;
}

/** The handler files of a folder: every `.ts` file but declarations. */
export function handlerEntries(handlersDir: string): string[] {
  return readdirSync(handlersDir)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .sort()
    .map((file) => path.join(handlersDir, file));
}

/** The child process's work: one esbuild build of every handler with the plugins, `<outRoot>/<name>/index.mjs` each. */
export async function bundleHandlers(entries: readonly string[], outRoot: string, options: HandlerBundleOptions = {}): Promise<void> {
  const { build } = await import('esbuild');
  await build({
    ...lambdaEsbuildOptions(options),
    // Splitting stays off (esbuild's default), so each folder is a self-contained bundle.
    entryPoints: entries.map((entry) => ({ in: entry, out: path.join(path.basename(entry, path.extname(entry)), 'index') })),
    outdir: outRoot,
    outExtension: { '.js': '.mjs' },
    sourcemap: options.sourceMaps === true,
    sourcesContent: false,
    logLevel: 'error',
  });
}

/** The command line (no top-level await: CommonJS apps require() the package's ES modules). */
async function main(argv: readonly string[]): Promise<number> {
  const [handlersDir, outRoot] = argv.filter((arg) => !arg.startsWith('--'));
  if (!handlersDir || !outRoot) {
    process.stderr.write('usage: node lib/private/bundle-handler.ts <handlers dir> <output root> [--external-aws-sdk] [--source-maps]\n');
    return 2;
  }
  try {
    await bundleHandlers(handlerEntries(handlersDir), outRoot, { externalAwsSdk: argv.includes('--external-aws-sdk'), sourceMaps: argv.includes('--source-maps') });
    return 0;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  void main(process.argv.slice(2)).then((code) => (process.exitCode = code));
}
