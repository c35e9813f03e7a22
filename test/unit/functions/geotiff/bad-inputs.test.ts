/**
 * Runs every file of the bad-input corpus (test/fixtures/bad-inputs) through
 * the checks a dropped file meets, and asserts the code in the manifest: each
 * bad file is rejected with an InputRejected of that code and nothing else
 * (no crash, no other error); the two control files, and the files left to
 * Mapflow's validator (`decidedBy: 'mapflow'`), pass.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { checkImageForModel, fileRangeSource, inspectGeoTiff, requirementsForModel } from '../../../../functions/geotiff/index.ts';
import { applyOverrides, DEFAULT_GEOJSON_MODEL, DEFAULT_ROUTES, inputKind } from '../../../../functions/routing/index.ts';
import type { CorpusEntry } from '../../../fixtures/bad-inputs/make-corpus.ts';

const corpus = new URL('../../../fixtures/bad-inputs/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('manifest.json', corpus), 'utf8')) as CorpusEntry[];

/** An account limit as the simulator and small real accounts have (m²); the area entries exceed any realistic one. */
const AOI_AREA_LIMIT_SQM = 1_000e6;

async function check(entry: CorpusEntry): Promise<void> {
  const path = fileURLToPath(new URL(entry.file, corpus));
  if (entry.kind === 'geojson') {
    const aoi = parseAoi(readFileSync(path, 'utf8'), { aoiAreaLimitSqM: AOI_AREA_LIMIT_SQM });
    applyOverrides(DEFAULT_ROUTES.routes[0]!, aoi.overrides);
  } else {
    const info = await inspectGeoTiff(await fileRangeSource(path), { probePixels: true });
    checkImageForModel(info, requirementsForModel(entry.model ?? DEFAULT_GEOJSON_MODEL));
  }
}

describe('bad-input corpus', () => {
  it('has at least 30 bad files, each named with the kind dispatch gives it', () => {
    // Assess
    expect(manifest.filter((e) => e.expectedCode !== null).length).toBeGreaterThanOrEqual(30);
    for (const entry of manifest) expect(inputKind(`inbox/${entry.file}`)).toBe(entry.kind);
  });

  it.each(manifest.map((e) => [e.file, e.expectedCode ?? 'accepted', e]))('%s -> %s', async (_file, _code, entry) => {
    // Prepare
    const { expectedCode } = entry as CorpusEntry;

    // Act
    const outcome = await check(entry as CorpusEntry).then(
      () => undefined,
      (error: unknown) => error,
    );

    // Assess: a file left to Mapflow's validator passes the checks made before the upload
    if (expectedCode === null || (entry as CorpusEntry).decidedBy === 'mapflow') {
      expect(outcome).toBeUndefined();
      return;
    }
    expect(outcome).toBeInstanceOf(InputRejected);
    const rejection = outcome as InputRejected;
    expect(rejection.code).toBe(expectedCode);
    expect(rejection.message).toMatch(new RegExp(`^${expectedCode}: .{20,}`));
  });
});
