/**
 * B5: the GeoJSON size limit is one constant, and the docs and the
 * FILE_TOO_LARGE message both say that limit and what to do.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAX_GEOJSON_BYTES, geoJsonTooLarge, parseAoi } from '../../functions/aoi/index.ts';
import { formatBytes } from '../../functions/storage/describe.ts';

const read = (file: string) => readFileSync(fileURLToPath(new URL(`../../${file}`, import.meta.url)), 'utf8');
const limit = formatBytes(MAX_GEOJSON_BYTES);

describe('the GeoJSON size limit', () => {
  it.each(['docs/inputs.md', 'docs/workflow.md'])('%s states the limit the code enforces, and no other', (file) => {
    // Act
    const text = read(file);
    const stated = [...text.matchAll(/GeoJSON[^.|]*?(\d+) Mi?B|at most (\d+) Mi?B/g)].map((m) => Number(m[1] ?? m[2]));

    // Assess
    expect(text).toContain(limit);
    expect(stated.length).toBeGreaterThan(0);
    expect(new Set(stated)).toEqual(new Set([MAX_GEOJSON_BYTES / 1024 / 1024]));
  });

  it('rejects a 25 MiB GeoJSON with that limit and what to do', () => {
    // Prepare: one small polygon padded with a 25 MiB property
    const pad = 'x'.repeat(25 * 1024 * 1024);
    const text = JSON.stringify({ type: 'Feature', properties: { pad }, geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.445, 46.94], [7.445, 46.945], [7.44, 46.94]]] } });

    // Act
    let error: Error | undefined;
    try {
      parseAoi(text);
    } catch (caught) {
      error = caught as Error;
    }

    // Assess
    expect(error).toMatchObject({ name: 'InputRejected', code: 'FILE_TOO_LARGE' });
    expect(error!.message).toContain(`at most ${limit} is accepted`);
    expect(error!.message).toMatch(/Split it into several files/);
    expect(error!.message).toMatch(/simplify the polygons/);
  });

  it('says what to do when a streamed read stops at the limit without knowing the size', () => {
    // Act
    const error = geoJsonTooLarge(MAX_GEOJSON_BYTES);

    // Assess
    expect(error.code).toBe('FILE_TOO_LARGE');
    expect(error.message).toMatch(new RegExp(`^FILE_TOO_LARGE: the GeoJSON is over ${limit}; at most ${limit} is accepted\\. Split it into several files`));
  });
});
