/**
 * Bundles one Lambda handler with esbuild's JavaScript API and the options of
 * lib/private/bundling.ts, for BridgeFunction's local bundling (and nothing else).
 *
 * CDK asks for bundles synchronously (ILocalBundling.tryBundle) and esbuild
 * runs plugins only in its asynchronous API, so the construct runs this file
 * as a child process, as NodejsFunction runs the esbuild binary:
 *
 *   node lib/private/bundle-handler.ts <entry.ts> <output dir> [--external-aws-sdk] [--source-maps]
 *
 * The output is `<output dir>/index.mjs`, the file packages/bench/bundles.ts measures.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { lambdaEsbuildOptions, type LambdaBundleOptions } from './bundling.ts';

export interface HandlerBundleOptions extends LambdaBundleOptions {
  /** Write `index.mjs.map` beside the bundle (without the sources). @default false */
  readonly sourceMaps?: boolean;
}

/** Bundles `entry` into `outDir/index.mjs` in a child process; throws with esbuild's messages when it fails. */
export function bundleHandlerSync(entry: string, outDir: string, options: HandlerBundleOptions = {}): void {
  const self = fileURLToPath(import.meta.url);
  // The Node that runs the synth: Node 24 in this project runs TypeScript files as they are; an older one through tsx.
  const loader = self.endsWith('.ts') && !(process.features as { typescript?: string | false }).typescript ? ['--import', 'tsx'] : [];
  const args = [...loader, self, path.resolve(entry), path.resolve(outDir)];
  if (options.externalAwsSdk) args.push('--external-aws-sdk');
  if (options.sourceMaps) args.push('--source-maps');
  const result = spawnSync(process.execPath, args, { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
  if (result.error) throw new Error(`Bundling ${path.basename(entry)} could not start: ${result.error.message}`, { cause: result.error });
  if (result.status !== 0) {
    throw new Error(`Bundling ${path.basename(entry)} failed (exit ${result.status ?? result.signal}):\n${`${result.stderr}${result.stdout}`.trim()}`);
  }
}

/** The child process's work: one esbuild build with the plugins. */
export async function bundleHandler(entry: string, outDir: string, options: HandlerBundleOptions = {}): Promise<string> {
  const { build } = await import('esbuild');
  const outfile = path.join(outDir, 'index.mjs');
  await build({
    ...lambdaEsbuildOptions(options),
    entryPoints: [entry],
    outfile,
    sourcemap: options.sourceMaps === true,
    sourcesContent: false,
    logLevel: 'error',
  });
  return outfile;
}

/** The command line (no top-level await: CommonJS apps require() the package's ES modules). */
async function main(argv: readonly string[]): Promise<number> {
  const [entry, outDir] = argv.filter((arg) => !arg.startsWith('--'));
  if (!entry || !outDir) {
    process.stderr.write('usage: node lib/private/bundle-handler.ts <entry.ts> <output dir> [--external-aws-sdk] [--source-maps]\n');
    return 2;
  }
  try {
    await bundleHandler(entry, outDir, { externalAwsSdk: argv.includes('--external-aws-sdk'), sourceMaps: argv.includes('--source-maps') });
    return 0;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  void main(process.argv.slice(2)).then((code) => (process.exitCode = code));
}
