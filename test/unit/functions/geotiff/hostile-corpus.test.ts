/**
 * The hostile corpus (test/fixtures/hostile) in process, through the checks
 * the Lambdas run: each file rejected with its manifest code, nothing else
 * thrown. The same corpus runs end to end in test/e2e/hostile.test.ts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { inspectGeoTiff } from '../../../../functions/geotiff/index.ts';
import { applyOverrides, DEFAULT_ROUTES } from '../../../../functions/routing/index.ts';
import { HOSTILE, HOSTILE_ENTRIES } from '../../../../packages/bench/fixtures/hostile.ts';

const manifest = JSON.parse(readFileSync(new URL('../../../fixtures/hostile/manifest.json', import.meta.url), 'utf8')) as unknown;

describe('hostile corpus, in process', () => {
  it('has at least 40 files, and the committed manifest is the generator\'s', () => {
    // Assess
    expect(HOSTILE.length).toBeGreaterThanOrEqual(40);
    expect(manifest).toEqual(HOSTILE_ENTRIES);
  });

  it.each(HOSTILE.map((entry) => [entry.file, entry.expectedCode, entry] as const))('%s -> %s', async (_file, expectedCode, entry) => {
    // Prepare
    const content = await entry.make();
    const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content;

    // Act
    const outcome = await (async () => {
      if (entry.kind === 'geojson') {
        applyOverrides(DEFAULT_ROUTES.routes[0]!, parseAoi(bytes, { aoiAreaLimitSqM: 1_000e6 }).overrides);
      } else {
        await inspectGeoTiff({ size: bytes.length, read: async (offset, length) => bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) as ArrayBuffer }, { probePixels: true });
      }
    })().then(
      () => undefined,
      (error: unknown) => error,
    );

    // Assess
    expect(outcome).toBeInstanceOf(InputRejected);
    expect((outcome as InputRejected).code).toBe(expectedCode);
  }, 120_000);
});
