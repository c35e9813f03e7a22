/**
 * s3rver's process keeps V8's code cache of its modules (s3rver, Koa, the
 * store's patches) in the folder the bridge gives it, as the functions'
 * environments do: every local bridge starts one s3rver, and each start after
 * the first then loads them without compiling them again.
 */
import { mkdtemp, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startLocalS3 } from '../../src/s3/server.ts';
import { testTmp } from '../../../../test/support/temp.ts';

async function cacheFiles(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile()).map((entry) => entry.name);
}

describe('local S3 start', () => {
  it("writes the code cache of s3rver's modules into the folder it is given, once it is ready", async () => {
    // Prepare
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-cache-'));
    const cache = path.join(dir, 'v8');

    // Act
    const s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: ['cache-bucket'], compileCacheDir: cache });
    let written: string[];
    try {
      written = await cacheFiles(cache);
    } finally {
      await s3rver.close();
    }

    // Assess: written while the server runs (a killed s3rver leaves it too), not only at its exit
    expect(written.length).toBeGreaterThan(0);
  });

  it('writes no cache without a folder', async () => {
    // Prepare
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-s3-nocache-'));

    // Act
    const s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: ['cache-bucket'] });
    await s3rver.close();

    // Assess: only the bucket's folder
    expect(await readdir(dir)).toEqual(['s3']);
  });
});
