/**
 * The Upload Image step streams the GeoTIFF from S3 into Mapflow as on AWS:
 * a 64 MiB object in the local S3 (s3rver, its own process) goes through the
 * real step into the simulator (its own process, packages/bench/receiver.ts); the
 * receiver stores every byte (same SHA-256), and the step's process never
 * holds more than a few MiB of it (live buffer memory after a full GC,
 * sampled during the upload). No timing asserts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Upload } from '@aws-sdk/lib-storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syntheticGeoTiffSize, syntheticGeoTiffStream } from '../../packages/bench/fixtures/synthetic-geotiff.ts';
import type { StepContext } from '../../functions/jobs/context.ts';
import { uploadImage } from '../../functions/jobs/steps/upload-image.ts';
import type { WorkflowState } from '../../functions/jobs/workflow.ts';
import { MapflowClient } from '../../functions/mapflow/index.ts';
import { localS3Client } from '../../packages/local/src/s3/client.ts';
import { startLocalS3, type LocalS3 } from '../../packages/local/src/s3/server.ts';
import { testTmp } from '../support/temp.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MiB = 1024 * 1024;
const TOKEN = 'upload-from-s3-token';
const EMAIL = 'upload@example.com';
const BUCKET = 'upload-from-s3';

// A full collection on demand: live memory, not garbage the collector has not reached yet.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let dir = '';
let s3rver: LocalS3 | undefined;
let receiver: ChildProcess | undefined;
let receiverUrl = '';

beforeAll(async () => {
  dir = await mkdtemp(path.join(testTmp(), 'upload-from-s3-'));
  s3rver = await startLocalS3({ directory: path.join(dir, 's3'), buckets: [BUCKET] });
  receiver = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'packages/bench/receiver.ts'), path.join(dir, 'sim'), TOKEN, EMAIL], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  receiverUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    receiver!.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    receiver!.once('exit', (code) => reject(new Error(`the receiver exited with ${code}`)));
  });
}, 120_000);

afterAll(async () => {
  if (receiver && receiver.exitCode === null) {
    const exited = new Promise((resolve) => receiver!.once('exit', resolve));
    receiver.stdin!.end();
    await exited;
  }
  await s3rver?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

/** Every 4 KiB of pixels carries its own offset, so a lost, repeated or reordered chunk changes the hash. */
function numbered(headerBytes: number, hash: ReturnType<typeof createHash>): Transform {
  let offset = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const out = Buffer.from(chunk);
      for (let at = (4096 - (offset % 4096)) % 4096; at + 4 <= out.length; at += 4096) {
        if (offset + at >= headerBytes) out.writeUInt32LE((offset + at) >>> 0, at);
      }
      offset += out.length;
      hash.update(out);
      done(null, out);
    },
  });
}

function sha256Of(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject);
  });
}

describe('Upload Image from S3', () => {
  it('streams a 64 MiB object from the local S3 to the receiver: every byte arrives, little of it is ever held', async () => {
    // Prepare: the object in the local S3, hashed on its way in.
    const side = Math.floor(Math.sqrt((64 * MiB) / 3));
    const spec = { width: side, height: side };
    const size = syntheticGeoTiffSize(spec);
    const headerBytes = size - side * side * 3;
    const sent = createHash('sha256');
    const body = syntheticGeoTiffStream(spec).pipe(numbered(headerBytes, sent));
    const s3 = localS3Client(s3rver!.endpoint, s3rver!.credentials);
    const key = 'inbox/rasters/numbered.tif';
    await new Upload({ client: s3, params: { Bucket: BUCKET, Key: key, Body: body } }).done();
    const expected = sent.digest('hex');
    const mapflow = new MapflowClient({ baseUrl: receiverUrl, token: TOKEN, email: EMAIL, timeoutMs: 120_000 });
    const mosaic = await mapflow.createMosaic({ name: 'from-s3' });
    const transitions: string[] = [];
    const ctx = {
      config: { pollPolicy: { initialSeconds: 1, maxSeconds: 3, factor: 1.5, maxJobSeconds: 3_600 } },
      s3,
      ledger: {
        transition: async (_jobId: string, status: string) => {
          transitions.push(status);
          return { changed: false, row: undefined };
        },
      },
      events: { publish: async () => undefined },
      mapflow: async () => mapflow,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
      now: () => new Date(),
      random: () => 0.5,
    } as unknown as StepContext;
    const input = { bucket: BUCKET, key, etag: 'test', size };
    const state = {
      jobId: 'upload-from-s3',
      input,
      job: { jobId: 'upload-from-s3', input, kind: 'geotiff', routeName: 'default', status: 'QUEUED', alreadyFinal: false, processImages: true, hasModel: true, createdAt: new Date().toISOString() },
      mosaic: { mosaicId: mosaic.id, name: 'from-s3', created: true, imageCount: 0 },
    } as unknown as WorkflowState;
    gc();
    const before = process.memoryUsage().arrayBuffers;
    let peakLive = before;
    let sampling = true;
    // Live buffer memory while the upload runs (each sample after a full GC); a
    // step that read the object whole would hold 64 MiB here.
    const sampler = (async () => {
      while (sampling) {
        gc();
        peakLive = Math.max(peakLive, process.memoryUsage().arrayBuffers);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();

    // Act
    let result;
    try {
      result = await uploadImage(state, ctx);
    } finally {
      sampling = false;
      await sampler;
    }

    // Assess
    expect(result).toMatchObject({ mosaicId: mosaic.id, filename: 'numbered.tif', fileSize: size, reused: false });
    expect(result.imageId).toMatch(/.+/);
    expect(transitions).toEqual(['UPLOADED']);
    const images = await mapflow.listMosaicImages(mosaic.id);
    expect(images.map((i) => [i.id, i.file_size ?? i.fileSize])).toEqual([[result.imageId, size]]);
    expect(await sha256Of(path.join(dir, 'sim', 'files', `${result.imageId}.tif`))).toBe(expected);
    // A step that buffers the object holds at least its 64 MiB here (58 MiB measured). A streaming
    // one holds a few chunks plus what the sockets hand over at once, which grows when the machine
    // is loaded (12 MiB in a full run on a busy machine, 2-4 MiB alone): the bound sits between.
    expect(peakLive - before).toBeLessThan(24 * MiB);
  }, 300_000);
});
