/**
 * Writes functions/geotiff/crs-definitions.json: the proj4 definition and the
 * area of use of every projected and geographic CRS of the EPSG dataset, as
 * the epsg-index package (ISC) ships it, so the bridge reads every EPSG code
 * GDAL reads from a GeoTIFF. Its ~7,000 rows are 0.95 MB of text; brotli
 * brings them to about 80 KB (base64 in the JSON), which the inspect
 * function's bundle carries instead of the package's 40 MB; crs.ts
 * decompresses it once, on first use.
 *
 * Why this and not geotiff-geokeys-to-proj4: that library (BSD-3-Clause)
 * ships its own EPSG tables, about 1 MB of code by its README, which alone
 * would fill the 1 MiB bundle budget (test/perf/bundles.test.ts), and its
 * README asks for a maintainer to keep those tables updated. epsg-index is
 * already the bridge's source of areas of use (scripts/make-crs-areas.ts);
 * the few user-defined projections GDAL reads from GeoKeys (code 32767) are
 * mapped by functions/geotiff/geokeys.ts.
 *
 * Definitions whose datum shift is a grid file (`+nadgrids=BETA2007.gsb`:
 * 311 of them) lose the grid, which proj4js cannot load: their footprint is
 * placed on the ellipsoid without the shift (at most a few hundred metres;
 * areas are unaffected).
 *
 *   npx tsx scripts/make-crs-definitions.ts
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants } from 'node:zlib';

const require = createRequire(import.meta.url);

interface Entry {
  kind?: string;
  proj4?: string;
  bbox?: number[];
  deprecated?: boolean;
}

/** One row per CRS: `code<TAB>proj4<TAB>west,south,east,north`, in code order. */
export function definitionRows(): string[] {
  const all = require('epsg-index/all.json') as Record<string, Entry>;
  const rows: string[] = [];
  for (const [code, entry] of Object.entries(all)) {
    if ((entry.kind !== 'CRS-PROJCRS' && entry.kind !== 'CRS-GEOGCRS') || !entry.proj4) continue;
    const definition = entry.proj4
      .replace(/ \+type=crs$/, '')
      .replace(/ \+nadgrids=(?!@null)\S+/, '');
    const [north, west, south, east] = entry.bbox ?? [];
    const area = [west, south, east, north].every((v) => typeof v === 'number') ? [west, south, east, north].join(',') : '';
    rows.push(`${code}\t${definition}\t${area}`);
  }
  return rows.sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const rows = definitionRows();
  const packed = brotliCompressSync(rows.join('\n'), { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  const target = fileURLToPath(new URL('../functions/geotiff/crs-definitions.json', import.meta.url));
  writeFileSync(target, `${JSON.stringify({ source: 'epsg-index (EPSG dataset), scripts/make-crs-definitions.ts', rows: rows.length, brotliBase64: packed.toString('base64') }, null, 1)}\n`);
  console.log(`wrote ${rows.length} definitions (${packed.length} bytes compressed) to ${target}`);
}
