/**
 * Writes functions/geotiff/crs-areas.json: the area of use of every EPSG code
 * the bridge can place (functions/geotiff/crs.ts), from the EPSG dataset as
 * the epsg-index package ships it. A table of a few KB instead of the
 * package's 40 MB in the inspect function's bundle;
 * test/unit/functions/geotiff/crs-areas.test.ts checks it against the package.
 * It is written as JSON, not TypeScript: it is data this script makes, one
 * row a code, and as code its rows read as the same lines written again (the
 * `duplicates` tool counts source files, not data files); crs-areas.ts gives
 * it its type.
 *
 *   npx tsx scripts/make-crs-areas.ts
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { SUPPORTED_EPSG_CODES } from '../functions/geotiff/crs.ts';

const require = createRequire(import.meta.url);

/** [west, south, east, north] in degrees (west > east: across the antimeridian), from epsg-index's [north, west, south, east]. */
export function areaFromPackage(code: number): [number, number, number, number] | undefined {
  let entry: { bbox?: number[] };
  try {
    entry = require(`epsg-index/s/${code}.json`) as { bbox?: number[] };
  } catch {
    return undefined;
  }
  const [north, west, south, east] = entry.bbox ?? [];
  if ([north, west, south, east].some((v) => typeof v !== 'number')) return undefined;
  return [west!, south!, east!, north!];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const lines: string[] = [];
  for (const code of SUPPORTED_EPSG_CODES) {
    const area = areaFromPackage(code);
    if (area) lines.push(`  "${code}": [${area.join(', ')}]`);
  }
  const target = fileURLToPath(new URL('../functions/geotiff/crs-areas.json', import.meta.url));
  writeFileSync(target, `{\n${lines.join(',\n')}\n}\n`);
  console.log(`wrote ${lines.length} areas to ${target}`);
}
