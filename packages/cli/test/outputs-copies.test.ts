/**
 * Two copies of one job's outputs at once (issue 39, point 11: the live copy
 * of `start` and the copy of a resumed job) each write their own partial file,
 * so neither finds the other's renamed away (ENOENT) and both end complete.
 */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { ledgerRow } from '../../../test/support/ledger-row.ts';
import { testTmp } from '../../../test/support/temp.ts';
import { copyJobOutputs } from '../src/outputs.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** An S3 client of one object whose body comes in slowly (chunks on timers), so two downloads overlap. */
function slowS3(key: string, chunks: string[]): S3Client {
  return {
    send: async (command: { constructor: { name: string } }) => {
      if (command.constructor.name === 'ListObjectsV2Command') return { Contents: [{ Key: key, Size: chunks.join('').length }], IsTruncated: false };
      return {
        Body: Readable.from(
          (async function* () {
            for (const chunk of chunks) {
              await new Promise((resolve) => setImmediate(resolve));
              yield Buffer.from(chunk);
            }
          })(),
        ),
      };
    },
  } as unknown as S3Client;
}

describe('two copies of one job\'s outputs at once', () => {
  it('both end complete, each through a partial file of its own', async () => {
    // Prepare
    const outDir = await mkdtemp(path.join(testTmp(), 'mfb-outputs-'));
    dirs.push(outDir);
    const key = 'results/area.geojson/result.geojson';
    const row = ledgerRow({ resultPrefix: 'results/area.geojson/', status: 'SUCCEEDED' });
    const chunks = Array.from({ length: 50 }, (_, i) => `{"chunk":${i}}\n`);

    // Act
    const [first, second] = await Promise.all([
      copyJobOutputs(slowS3(key, chunks), 'bucket', row, outDir),
      copyJobOutputs(slowS3(key, chunks), 'bucket', row, outDir),
    ]);

    // Assess
    expect(first.results).toEqual(second.results);
    expect(await readFile(first.results[0]!, 'utf8')).toBe(chunks.join(''));
    const folder = path.dirname(first.results[0]!);
    expect((await readdir(folder)).filter((name) => name.includes('.partial-'))).toEqual([]);
  });
});
