/**
 * Issue 38, point 1 (GeoTIFFs), end to end through `mapflow-bridge local run --json`
 * against the simulator, which reads uploads as the live service's GDAL does:
 * images in EPSG:3006 (SWEREF99 TM) and in a user-defined Transverse Mercator
 * are uploaded and processed, while geotransforms that disagree and an image
 * with no pixel data are REJECTED before anything is uploaded.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadLocalAssembly } from '../../packages/local/src/assembly/cache.ts';
import { localAssemblySettings } from '../../packages/local/src/bridge.ts';
import type { RunJobSummary } from '../../packages/cli/src/run.ts';
import { tiff, type TiffGeo } from '../../packages/bench/fixtures/tiff.ts';
import { ROOT } from './helpers.ts';
import { runLocalMeasured } from '../support/rss.ts';
import { testTmp } from '../support/temp.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';

const CLI = path.join(ROOT, 'packages/cli/bin/mapflow-bridge.mjs');
const rgb = (geo: TiffGeo) => tiff({ width: 64, height: 64, compression: 8, blocks: [deflateSync(new Uint8Array(64 * 64 * 3).fill(90))], geo });

/** Gauss-Kruger zone 3 on DHDN spelt out in GeoKeys (ProjectedCSTypeGeoKey 32767). */
const userDefinedTm: TiffGeo = {
  origin: [3_500_000, 5_400_000],
  pixel: 0.5,
  geoKeys: [[1024, 1], [1025, 1], [2048, 4314], [3072, 32767], [3074, 32767], [3075, 1], [3076, 9001], [3081, [0]], [3080, [9]], [3092, [1]], [3082, [3_500_000]], [3083, [0]]],
};

describe('the third-round GeoTIFFs through local run', () => {
  it('processes EPSG:3006 and a user-defined TM, and refuses conflicting geotransforms and an image without pixel data', { timeout: 600_000 }, async () => {
    // Prepare
    const base = await mkdtemp(path.join(testTmp(), 'mfb-hostile3-'));
    const corpus = path.join(base, 'corpus');
    const work = path.join(base, 'work');
    await mkdir(corpus);
    await mkdir(work);
    const files: Record<string, Uint8Array> = {
      'sweref99-tm.tif': rgb({ epsg: 3006, origin: [674_000, 6_580_000], pixel: 0.5 }),
      'user-defined-tm.tif': rgb(userDefinedTm),
      'transforms-disagree.tif': rgb({ epsg: 32632, origin: [380_000, 5_200_000], pixel: 30, transformation: [0.5, 0, 0, 380_000, 0, -0.5, 0, 5_200_000, 0, 0, 0, 0, 0, 0, 0, 1] }),
      'all-sparse.tif': tiff({ width: 64, height: 64, tile: [16, 16], blocks: [], declaredBlocks: 16, declaredOffsets: Array(16).fill(0), declaredByteCounts: Array(16).fill(0) }),
    };
    for (const [name, bytes] of Object.entries(files)) await writeFile(path.join(corpus, name), bytes);
    await loadLocalAssembly(localAssemblySettings({}));

    // Act
    const { stdout, stderr, peakBytes, tree } = await runLocalMeasured(
      [CLI, 'local', 'run', '--json', '--processing-seconds', '1', '--timeout', '500', ...(await sharedLedgerArgs('hostile3')), '--out', path.join(work, 'out'), ...Object.keys(files).map((f) => path.join(corpus, f))],
      { cwd: work, base, timeoutMs: 560_000 },
    );
    const jobs = (JSON.parse(stdout) as { jobs: RunJobSummary[] }).jobs;

    // Assess
    const outcomes = Object.fromEntries(jobs.map((job) => [path.basename(job.file), `${job.status} ${job.error?.code ?? ''}`.trim()]));
    expect(outcomes, stderr.slice(-4000)).toEqual({
      'sweref99-tm.tif': 'SUCCEEDED',
      'user-defined-tm.tif': 'SUCCEEDED',
      'transforms-disagree.tif': 'REJECTED GEOTRANSFORM_CONFLICT',
      'all-sparse.tif': 'REJECTED NO_PIXEL_DATA',
    });
    // The bounds by design (issue 38): the bridge's own process under 512 MiB, no function process past its MemorySize (1 GiB at most).
    expect(peakBytes).toBeLessThan(512 * 1024 ** 2);
    for (const bytes of tree.environmentBytes) expect(bytes).toBeLessThan(1024 ** 3);
  });
});
