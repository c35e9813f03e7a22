/**
 * Lambda bundle sizes and cold-import times, per handler.
 *
 * Each handler is bundled with esbuild with the options the construct uses
 * (lib/bundling.ts: ESM, node24, minified, the require banner, the lean
 * credential provider, AWS SDK bundled, no source map), then imported in
 * fresh Node processes: the time from the import call to the handler being
 * ready is the cold-import time (what a Lambda cold start pays before the
 * first line of the handler runs), the median of five processes.
 *
 * `--external-sdk` (or `externalAwsSdk: true`) measures the construct's
 * `externalAwsSdk` variant as well: `@aws-sdk/*` left to the runtime; its cold
 * import loads the SDK from the project's node_modules (CommonJS, file by file,
 * as the Lambda runtime loads its own copy).
 *
 * Run it:  npx tsx bench/bundles.ts [--external-sdk] [--json] [--keep]
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { HANDLER_NAMES } from '../functions/handlers/catalog.ts';
import { lambdaEsbuildOptions } from '../lib/bundling.ts';

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
const KIB = 1024;
/** Fresh processes per cold-import figure (the median is reported). */
const IMPORT_RUNS = 5;

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
  /** Median of IMPORT_RUNS fresh processes importing the bundle. */
  coldImportMs?: number;
  /** With `externalAwsSdk`: the bundle without `@aws-sdk/*`. */
  externalSdk?: { bytes: number; coldImportMs?: number };
}

export interface MeasureOptions {
  importTimes?: boolean;
  keep?: boolean;
  names?: readonly string[];
  /** Also bundle each handler with `externalAwsSdk` (lib/bundling.ts). */
  externalAwsSdk?: boolean;
}

export async function measureBundles(options: MeasureOptions = {}): Promise<BundleFigure[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mapflow-bundles-'));
  const figures: BundleFigure[] = [];
  try {
    // The external-SDK bundles import @aws-sdk/* at run time: from the project's node_modules.
    if (options.externalAwsSdk) await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    for (const name of options.names ?? HANDLER_NAMES) {
      const entry = path.join(PROJECT_ROOT, 'functions', 'handlers', `${name}.ts`);
      const outfile = path.join(dir, name, 'index.mjs');
      const result = await build({ ...lambdaEsbuildOptions(), entryPoints: [entry], metafile: true, outfile, logLevel: 'silent' });
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
      if (options.externalAwsSdk) {
        const external = path.join(dir, `${name}-external-sdk`, 'index.mjs');
        await build({ ...lambdaEsbuildOptions({ externalAwsSdk: true }), entryPoints: [entry], outfile: external, logLevel: 'silent' });
        figure.externalSdk = { bytes: (await stat(external)).size };
        if (options.importTimes ?? true) figure.externalSdk.coldImportMs = await coldImport(external);
      }
      figures.push(figure);
    }
    return figures;
  } finally {
    if (!options.keep) await rm(dir, { recursive: true, force: true });
  }
}

/** The table of figures: handler, KiB, calls Mapflow?, cold import (and the external-SDK variant when measured). */
export function bundleTable(figures: readonly BundleFigure[]): string[] {
  const external = figures.some((f) => f.externalSdk);
  const ms = (v?: number) => (v === undefined ? '-' : v.toFixed(0));
  const lines = [
    `${'handler'.padEnd(20)} ${'KiB'.padStart(6)}  ${'Mapflow'.padEnd(7)}  ${'cold import ms'.padStart(14)}` +
      (external ? `  ${'external SDK: KiB'.padStart(17)}  ${'cold import ms'.padStart(14)}` : ''),
  ];
  for (const f of figures) {
    lines.push(
      `${f.name.padEnd(20)} ${(f.bytes / KIB).toFixed(0).padStart(6)}  ${(f.callsMapflow ? 'yes' : 'no').padEnd(7)}  ${ms(f.coldImportMs).padStart(14)}` +
        (external ? `  ${(f.externalSdk ? (f.externalSdk.bytes / KIB).toFixed(0) : '-').padStart(17)}  ${ms(f.externalSdk?.coldImportMs).padStart(14)}` : ''),
    );
  }
  return lines;
}

function packageOf(input: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  return match ? (match[1] as string) : 'bridge code';
}

/** Median of IMPORT_RUNS fresh processes importing the bundle (ms from the import call to the handler). */
async function coldImport(file: string): Promise<number> {
  const probe = path.join(path.dirname(file), 'probe.mjs');
  await mkdir(path.dirname(probe), { recursive: true });
  await writeFile(
    probe,
    `const t = performance.now(); const m = await import(${JSON.stringify(pathToFileURL(file).href)});\n` +
      `if (typeof m.handler !== 'function') process.exit(3);\nprocess.stdout.write(String(performance.now() - t));\n`,
  );
  const runs: number[] = [];
  for (let i = 0; i < IMPORT_RUNS; i++) runs.push(await runNode(probe));
  runs.sort((a, b) => a - b);
  return runs[Math.floor(runs.length / 2)] as number;
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
  const figures = await measureBundles({ keep: process.argv.includes('--keep'), externalAwsSdk: process.argv.includes('--external-sdk') });
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  else {
    const nonMapflow = Math.max(...figures.filter((f) => !f.callsMapflow).map((f) => f.bytes));
    const largest = Math.max(...figures.map((f) => f.bytes));
    process.stdout.write(
      [
        ...bundleTable(figures),
        '',
        `largest bundle without Mapflow: ${(nonMapflow / KIB).toFixed(0)} KiB (goal <= ${NON_MAPFLOW_LIMIT_BYTES / KIB} KiB: ${nonMapflow <= NON_MAPFLOW_LIMIT_BYTES ? 'met' : 'NOT met'})`,
        `largest bundle: ${(largest / KIB).toFixed(0)} KiB (goal <= ${BUNDLE_LIMIT_BYTES / KIB} KiB: ${largest <= BUNDLE_LIMIT_BYTES ? 'met' : 'NOT met'})`,
        '',
      ].join('\n'),
    );
  }
}
