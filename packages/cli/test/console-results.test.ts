/**
 * The console's job page says how many features a result holds, not how
 * many it had read when it stopped sending them to the browser (issue 40:
 * "5000 of 5061 result features shown" for a result.geojson of 7,395).
 */
import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { LedgerRow } from '../../../functions/core/model.ts';
import { MAX_MAP_FEATURES, startConsoleServer } from '../src/console/server.ts';

const FEATURES = 7_395;
const CHUNK_BYTES = 16 * 1024;

/** A FeatureCollection of `count` small squares, as S3 streams it: in chunks. */
function resultChunks(count: number): Buffer[] {
  const features = Array.from({ length: count }, (_, i) => {
    const x = 7.4 + (i % 100) * 0.001;
    const y = 46.9 + Math.floor(i / 100) * 0.001;
    return JSON.stringify({ type: 'Feature', properties: { i }, geometry: { type: 'Polygon', coordinates: [[[x, y], [x + 0.0005, y], [x + 0.0005, y + 0.0005], [x, y]]] } });
  });
  const whole = Buffer.from(`{"type":"FeatureCollection","features":[${features.join(',')}]}`);
  const chunks: Buffer[] = [];
  for (let at = 0; at < whole.length; at += CHUNK_BYTES) chunks.push(whole.subarray(at, at + CHUNK_BYTES));
  return chunks;
}

describe('the console result count', () => {
  it(`counts every feature of a result with more than ${MAX_MAP_FEATURES}, while sending ${MAX_MAP_FEATURES} to the map`, async () => {
    // Prepare: a succeeded job with one part whose result holds 7,395 features
    const row = {
      jobId: 'big-result',
      status: 'SUCCEEDED',
      kind: 'geojson',
      input: { bucket: 'b', key: 'inbox/big.geojson', etag: 'e', size: 1 },
      parts: [{ index: 0, name: 'big', status: 'OK', resultKey: 'results/big.geojson/big/result.geojson' }],
    } as unknown as LedgerRow;
    const ledger = { get: async () => row, listRecent: async () => [row], listByStatus: async () => [row] };
    const s3 = { send: async () => ({ Body: Readable.from(resultChunks(FEATURES)) }) } as unknown as S3Client;
    const server = await startConsoleServer({ ledger, s3, description: 'test' });
    try {
      // Act
      const results = (await (await fetch(`${server.url}api/jobs/big-result/results`)).json()) as { features: unknown[]; properties: Record<string, unknown> };

      // Assess
      expect(results.features).toHaveLength(MAX_MAP_FEATURES);
      expect(results.properties).toEqual({ featuresShown: MAX_MAP_FEATURES, featuresRead: FEATURES, featuresCounted: true });
    } finally {
      await server.close();
    }
  });
});
