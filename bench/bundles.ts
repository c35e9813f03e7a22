/**
 * Lambda bundle sizes and cold-import times, per handler.
 *
 * Each handler is bundled with esbuild exactly as lib/bridge-function.ts has
 * the CDK do it (ESM, node24, minified, module/main fields, the createRequire
 * banner, AWS SDK bundled, no source map), then imported once in a fresh Node
 * process: the time from process start of the import to the handler being
 * ready is the cold-import time (what a Lambda cold start pays before the
 * first line of the handler runs).
 *
 * Run it:  npx tsx bench/bundles.ts   (prints JSON; --keep keeps the bundles)
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { HANDLER_NAMES } from '../functions/handlers/catalog.ts';

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
const KIB = 1024;

/** Same banner as lib/defaults.ts ESM_REQUIRE_BANNER (kept literal: bench must not load aws-cdk-lib). */
const BANNER = "import { createRequire as __bridgeCreateRequire } from 'node:module'; const require = __bridgeCreateRequire(import.meta.url);";

/** Handlers that call Mapflow (the others must stay under the small budget). */
export const MAPFLOW_HANDLERS = new Set([
  'inspect-geotiff',
  'ensure-mosaic',
  'upload-image',
  'plan-processing',
  'create-processing',
  'poll-processing',
  'restart-processing',
  'store-results',
  'finish-job',
]);

/** Goals of issue 12: every bundle <= 1 MiB, handlers that do not call Mapflow <= 400 KiB. */
export const BUNDLE_LIMIT_BYTES = 1024 * KIB;
export const NON_MAPFLOW_LIMIT_BYTES = 400 * KIB;

export interface BundleFigure {
  name: string;
  callsMapflow: boolean;
  bytes: number;
  /** The biggest inputs (packages) of the bundle, bytes in the output. */
  top: { input: string; bytes: number }[];
  /** Every input file that put bytes into the bundle. */
  inputs: string[];
  coldImportMs?: number;
}

export async function measureBundles(options: { importTimes?: boolean; keep?: boolean; names?: readonly string[] } = {}): Promise<BundleFigure[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mapflow-bundles-'));
  const figures: BundleFigure[] = [];
  try {
    for (const name of options.names ?? HANDLER_NAMES) {
      const outfile = path.join(dir, name, 'index.mjs');
      const result = await build({
        entryPoints: [path.join(PROJECT_ROOT, 'functions', 'handlers', `${name}.ts`)],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node24',
        mainFields: ['module', 'main'],
        banner: { js: BANNER },
        minify: true,
        metafile: true,
        outfile,
        logLevel: 'silent',
      });
      const bytes = (await stat(outfile)).size;
      const byPackage = new Map<string, number>();
      const inputs: string[] = [];
      for (const [input, info] of Object.entries(Object.values(result.metafile.outputs)[0]?.inputs ?? {})) {
        byPackage.set(packageOf(input), (byPackage.get(packageOf(input)) ?? 0) + info.bytesInOutput);
        if (info.bytesInOutput > 0) inputs.push(input);
      }
      const top = [...byPackage.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([input, b]) => ({ input, bytes: b }));
      const figure: BundleFigure = { name, callsMapflow: MAPFLOW_HANDLERS.has(name), bytes, top, inputs };
      if (options.importTimes ?? true) figure.coldImportMs = await coldImport(outfile);
      figures.push(figure);
    }
    return figures;
  } finally {
    if (!options.keep) await rm(dir, { recursive: true, force: true });
  }
}

function packageOf(input: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  return match ? (match[1] as string) : 'bridge code';
}

/** Median of three fresh processes importing the bundle (ms from the import call to the handler). */
async function coldImport(file: string): Promise<number> {
  const probe = path.join(path.dirname(file), 'probe.mjs');
  await writeFile(
    probe,
    `const t = performance.now(); const m = await import(${JSON.stringify(pathToFileURL(file).href)});\n` +
      `if (typeof m.handler !== 'function') process.exit(3);\nprocess.stdout.write(String(performance.now() - t));\n`,
  );
  const runs: number[] = [];
  for (let i = 0; i < 3; i++) runs.push(await runNode(probe));
  runs.sort((a, b) => a - b);
  return runs[1] as number;
}

function runNode(file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    // The handlers read their configuration lazily; a table name keeps any eager read happy.
    const child = spawn(process.execPath, [file], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, LEDGER_TABLE: 'bench', AWS_REGION: 'us-east-1', NODE_OPTIONS: '' },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`import of ${file} exited with ${code}`))));
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const figures = await measureBundles({ keep: process.argv.includes('--keep') });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
