/**
 * Budgets of the input checks (issues 11 and 23): for the largest input each
 * check accepts, and for the worst hostile inputs it refuses, the peak memory
 * and the time of the check, each in a fresh process, peak RSS as the kernel
 * counts it (VmHWM in /proc/self/status, reset once the input is built;
 * process.resourceUsage().maxRSS where there is no /proc). Compared with the function's memory and timeout: the
 * figure must stay within half of each (a 2x margin). Lambda at 1024 MB gets
 * about 0.58 of a vCPU, so local times are scaled by 1/0.58 before the check.
 *
 *   npx tsx packages/bench/hostile.ts              # every scenario, a table, exit 1 if a budget is missed
 *   npx tsx packages/bench/hostile.ts <scenario>   # one scenario in this process, prints its JSON
 *   npx tsx packages/bench/hostile.ts --only=round2  # the scenarios whose name starts so (issue 23's corpus)
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import { MAX_GEOJSON_BYTES, MAX_POLYGONS, MAX_POSITIONS, parseAoi } from 'mapflow-bridge/functions/aoi/index.ts';
import { inspectGeoTiff, MAX_BLOCK_DECODED_BYTES, type RangeSource } from 'mapflow-bridge/functions/geotiff/index.ts';
import { applyOverrides, DEFAULT_ROUTES, OVERRIDE_LIMITS } from 'mapflow-bridge/functions/routing/index.ts';
import { HOSTILE, manyVertexPolygon, squaresGrid } from './fixtures/hostile.ts';
import { hostileTiff } from './fixtures/tiff.ts';
import { HOSTILE_ROUND2 } from './fixtures/hostile-round2.ts';

/** The function each check runs in on AWS (lib/private/defaults.ts). */
const FUNCTIONS = {
  'plan-processing': { memoryMb: 1024, timeoutS: 120 },
  'inspect-geotiff': { memoryMb: 1024, timeoutS: 120 },
} as const;
/** Share of a vCPU a 1024 MB Lambda gets (1,769 MB = one vCPU). */
const LAMBDA_CPU_SHARE = 1024 / 1769;

interface Scenario {
  name: string;
  fn: keyof typeof FUNCTIONS;
  /** What it is, for the table. */
  what: string;
  /** Builds the input (not measured). */
  prepare: () => Promise<unknown> | unknown;
  /** The check (measured); a rejection with `expect` counts as the expected outcome. */
  run: (input: unknown) => Promise<unknown> | unknown;
  expect?: string;
}

const memorySource = (bytes: Uint8Array): RangeSource => ({ size: bytes.length, read: async (offset, length) => bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer });
const hostile = (file: string) => HOSTILE.find((e) => e.file === file)!;

export const SCENARIOS: Scenario[] = [
  {
    name: 'geojson-max-polygons',
    fn: 'plan-processing',
    what: `largest accepted: ${MAX_POLYGONS} adjacent squares, dissolved`,
    prepare: () => new TextEncoder().encode(squaresGrid(MAX_POLYGONS)),
    run: (file) => parseAoi(file as Uint8Array, { aoiAreaLimitSqM: 1e12 }),
  },
  {
    name: 'geojson-max-polygons-overlapping',
    fn: 'plan-processing',
    what: `largest accepted: ${MAX_POLYGONS} overlapping squares in one chain`,
    prepare: () => new TextEncoder().encode(overlappingSquares(MAX_POLYGONS)),
    run: (file) => parseAoi(file as Uint8Array, { aoiAreaLimitSqM: 1e12 }),
  },
  {
    name: 'geojson-max-positions',
    fn: 'plan-processing',
    what: `largest accepted: one polygon of ${MAX_POSITIONS - 1} vertices`,
    prepare: () => new TextEncoder().encode(manyVertexPolygon(MAX_POSITIONS - 1)),
    run: (file) => parseAoi(file as Uint8Array, { aoiAreaLimitSqM: 1e12 }),
  },
  {
    name: 'geojson-max-bytes',
    fn: 'plan-processing',
    what: `largest accepted: ${MAX_POLYGONS} squares + properties, ${(MAX_GEOJSON_BYTES / 1024 ** 2).toFixed(0)} MiB`,
    prepare: () => {
      const grid = squaresGrid(MAX_POLYGONS);
      const pad = 'x'.repeat(MAX_GEOJSON_BYTES - grid.length - 200);
      return new TextEncoder().encode(`{"type":"Feature","properties":{"note":"${pad}"},"geometry":${grid}}`);
    },
    run: (file) => parseAoi(file as Uint8Array, { aoiAreaLimitSqM: 1e12 }),
  },
  {
    name: 'overrides-max',
    fn: 'plan-processing',
    what: 'largest accepted mapflow member (64 blocks, 32 meta keys, 8 KiB inferenceParams)',
    prepare: () => ({
      blocks: Array.from({ length: OVERRIDE_LIMITS.blocks }, (_, i) => ({ name: `block ${i}`, enabled: true })),
      meta: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`key${i}`, 'v'.repeat(100)])),
      inferenceParams: { pad: 'x'.repeat(OVERRIDE_LIMITS.inferenceParamsBytes - 64) },
    }),
    run: (member) => applyOverrides(DEFAULT_ROUTES.routes[0]!, member),
  },
  {
    name: 'geojson-90000-squares',
    fn: 'plan-processing',
    what: 'refused: 90,000 squares (was 83 s, 2.15 GB)',
    prepare: () => new TextEncoder().encode(squaresGrid(90_000)),
    run: (file) => parseAoi(file as Uint8Array),
    expect: 'TOO_MANY_POLYGONS',
  },
  {
    name: 'geojson-240000-triangles',
    fn: 'plan-processing',
    what: 'refused: 240,000 triangles (was a RangeError)',
    prepare: () => new TextEncoder().encode(hostile('triangles-240000.geojson').make() as string),
    run: (file) => parseAoi(file as Uint8Array),
    expect: 'TOO_MANY_POLYGONS',
  },
  {
    name: 'geojson-1m-vertices',
    fn: 'plan-processing',
    what: 'refused: 1,000,000 vertices (was 14.6 s, 550 MB)',
    prepare: () => new TextEncoder().encode(manyVertexPolygon(1_000_000)),
    run: (file) => parseAoi(file as Uint8Array),
    expect: 'TOO_MANY_POSITIONS',
  },
  {
    name: 'geotiff-max-block',
    fn: 'inspect-geotiff',
    what: `largest accepted: one Deflate strip of ${MAX_BLOCK_DECODED_BYTES / 1024 ** 2} MiB decoded, probed`,
    prepare: () => {
      // 4096 x 5461 RGB = 64 MiB in one strip, real (compressible) content
      const width = 4096;
      const height = Math.floor(MAX_BLOCK_DECODED_BYTES / (width * 3));
      const pixels = new Uint8Array(width * height * 3).map((_, i) => (i * 7) & 0xff);
      return hostileTiff({ width, height, compression: 8, blocks: [deflateSync(pixels, { level: 1 })] });
    },
    run: (bytes) => inspectGeoTiff(memorySource(bytes as Uint8Array), { probePixels: true }),
  },
  {
    name: 'geotiff-1gib-bomb',
    fn: 'inspect-geotiff',
    what: 'refused: 1 MB Deflate strip inflating to 1 GiB (was 21 s, 2.1 GB)',
    prepare: async () => (await hostile('deflate-bomb-1gib.tif').make()) as Uint8Array,
    run: (bytes) => inspectGeoTiff(memorySource(bytes as Uint8Array), { probePixels: true }),
    expect: 'TIFF_DECODED_TOO_LARGE',
  },
  {
    name: 'geotiff-65536-tiles',
    fn: 'inspect-geotiff',
    what: 'refused: 65536 x 65536 tiles (was 47 s, 2.1 GB)',
    prepare: async () => (await hostile('tile-65536.tif').make()) as Uint8Array,
    run: (bytes) => inspectGeoTiff(memorySource(bytes as Uint8Array), { probePixels: true }),
    expect: 'TIFF_BLOCK_TOO_LARGE',
  },
  // Issue 23: the second-round corpus, each file through the check its function runs.
  ...HOSTILE_ROUND2.map(
    (entry): Scenario => ({
      name: `round2-${entry.file}`,
      fn: entry.kind === 'geojson' ? 'plan-processing' : 'inspect-geotiff',
      what: `refused (issue 23.${entry.point}): ${entry.file}`,
      prepare: async () => {
        const content = await entry.make();
        return typeof content === 'string' ? new TextEncoder().encode(content) : content;
      },
      run: (bytes) =>
        entry.kind === 'geojson'
          ? applyOverrides(DEFAULT_ROUTES.routes[0]!, parseAoi(bytes as Uint8Array, { aoiAreaLimitSqM: 1e12 }).overrides)
          : inspectGeoTiff(memorySource(bytes as Uint8Array), { probePixels: true }),
      expect: entry.expectedCode,
    }),
  ),
];

/** n squares in a grid, each 1.5 cells wide, so every square overlaps its neighbours (all in one touching group). */
function overlappingSquares(n: number): string {
  const side = Math.ceil(Math.sqrt(n));
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    const x = 7 + (i % side) * 0.0001;
    const y = 46 + Math.floor(i / side) * 0.0001;
    const d = 0.00015;
    parts.push(`[[[${x},${y}],[${x + d},${y}],[${x + d},${y + d}],[${x},${y + d}],[${x},${y}]]]`);
  }
  return `{"type":"MultiPolygon","coordinates":[${parts.join(',')}]}`;
}

export interface HostileMeasure {
  name: string;
  ms: number;
  peakRssMiB: number;
  outcome: string;
}

/** Runs one scenario in this process (call it in a fresh one). */
export async function measureScenario(name: string): Promise<HostileMeasure> {
  const scenario = SCENARIOS.find((s) => s.name === name);
  if (!scenario) throw new Error(`unknown scenario ${name}`);
  const input = await scenario.prepare();
  (globalThis as { gc?: () => void }).gc?.(); // the preparation's garbage, before the peak starts again
  resetPeakRss();
  const started = performance.now();
  let outcome = 'accepted';
  try {
    await scenario.run(input);
  } catch (error) {
    outcome = (error as { code?: string }).code ?? `${(error as Error).name}: ${(error as Error).message}`;
  }
  const ms = performance.now() - started;
  return { name, ms, peakRssMiB: peakRssMiB(), outcome };
}

/**
 * Starts the peak RSS again from the current RSS (Linux: writing 5 to
 * /proc/self/clear_refs resets VmHWM), so the figure is the check's, not the
 * input's generation: building 12 million strip offsets in JavaScript arrays
 * alone peaked at 680 MiB. Elsewhere the peak includes the preparation.
 */
function resetPeakRss(): void {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // no /proc: the peak includes the preparation
  }
}

function peakRssMiB(): number {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kb) return Number(kb) / 1024;
  } catch {
    // no /proc
  }
  return process.resourceUsage().maxRSS / 1024;
}

/** Every scenario in its own process; prints the table; returns 1 when a budget is missed or an outcome is wrong. */
export async function runHostileBench(log: (line: string) => void = console.log, prefix = ''): Promise<number> {
  log('\ninput checks (issues 11 and 23): largest accepted inputs and hostile ones, each in a fresh process; peak RSS from the kernel (VmHWM)');
  log(`${'scenario'.padEnd(76)}${'time ms'.padStart(9)}${'Lambda ms'.padStart(11)}${'peak MiB'.padStart(10)}  outcome`);
  let failures = 0;
  for (const scenario of SCENARIOS.filter((s) => s.name.startsWith(prefix))) {
    const measure = await inChild(scenario.name);
    const budget = FUNCTIONS[scenario.fn];
    const lambdaMs = measure.ms / LAMBDA_CPU_SHARE;
    const withinTime = lambdaMs * 2 <= budget.timeoutS * 1000;
    const withinMemory = measure.peakRssMiB * 2 <= budget.memoryMb;
    const rightOutcome = measure.outcome === (scenario.expect ?? 'accepted');
    if (!withinTime || !withinMemory || !rightOutcome) failures++;
    const flags = [!withinTime && 'OVER TIME', !withinMemory && 'OVER MEMORY', !rightOutcome && `expected ${scenario.expect ?? 'accepted'}`].filter(Boolean).join(', ');
    log(
      `${`${scenario.what} [${scenario.fn}]`.padEnd(76)}${measure.ms.toFixed(0).padStart(9)}${lambdaMs.toFixed(0).padStart(11)}${measure.peakRssMiB.toFixed(0).padStart(10)}  ${measure.outcome}${flags ? `  ${flags}` : ''}`,
    );
  }
  log(`budget: 2x margin on ${FUNCTIONS['plan-processing'].memoryMb} MB / ${FUNCTIONS['plan-processing'].timeoutS} s; Lambda ms = local ms / ${LAMBDA_CPU_SHARE.toFixed(2)} (vCPU share at 1024 MB)`);
  return failures === 0 ? 0 : 1;
}

function inChild(name: string): Promise<HostileMeasure> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), name], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`hostile scenario ${name} exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1)!) as HostileMeasure);
    });
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const name = process.argv[2];
  if (name?.startsWith('--only=')) {
    process.exitCode = await runHostileBench(console.log, name.slice('--only='.length));
  } else if (name) {
    console.log(JSON.stringify(await measureScenario(name)));
  } else {
    process.exitCode = await runHostileBench();
  }
}
