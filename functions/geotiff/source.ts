/**
 * Ranged byte access to an image, wherever it lives (a local file, an S3
 * object), and the adapter that lets geotiff.js read through it.
 *
 * Only the ranges geotiff.js asks for are read: for a cloud-optimised GeoTIFF
 * the header is a few kilobytes at the start of the file, whatever its size.
 */
import { open, stat } from 'node:fs/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { GeoTIFF } from 'geotiff';

/** Random access to the bytes of one object. */
export interface RangeSource {
  /** Total size in bytes. */
  readonly size: number;
  /** Reads `length` bytes from `offset`; the caller never asks beyond `size`. */
  read(offset: number, length: number): Promise<ArrayBuffer>;
}

/** A local file (opened for each read, so nothing is left open). */
export async function fileRangeSource(path: string): Promise<RangeSource> {
  const { size } = await stat(path);
  return {
    size,
    async read(offset, length) {
      const handle = await open(path, 'r');
      try {
        const bytes = new Uint8Array(length);
        const { bytesRead } = await handle.read(bytes, 0, length, offset);
        return bytes.buffer.slice(0, bytesRead);
      } finally {
        await handle.close();
      }
    },
  };
}

/**
 * An S3 object read with ranged GetObject requests. Pin `versionId` when the
 * bucket is versioned so a concurrent overwrite cannot mix two files.
 */
export function s3RangeSource(s3: S3Client, object: { bucket: string; key: string; versionId?: string; size: number }): RangeSource {
  return {
    size: object.size,
    async read(offset, length) {
      const response = await s3.send(
        new GetObjectCommand({
          Bucket: object.bucket,
          Key: object.key,
          ...(object.versionId && { VersionId: object.versionId }),
          Range: `bytes=${offset}-${offset + length - 1}`,
        }),
      );
      if (!response.Body) return new ArrayBuffer(0);
      const bytes = await response.Body.transformToByteArray();
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}

/** The object returned fewer bytes than it announced: it changed or was cut while being read. */
export class ShortReadError extends Error {
  constructor(offset: number, expected: number, got: number) {
    super(`read of ${expected} bytes at offset ${offset} returned ${got}`);
    this.name = 'ShortReadError';
  }
}

/** geotiff.js' source interface (its BaseSource class is not exported, its shape is). */
type GeoTiffSource = Parameters<typeof GeoTIFF.fromSource>[0];
type Slice = { offset: number; length: number };

/**
 * Serves geotiff.js' slice requests from a RangeSource, in blocks of
 * `blockSize` bytes that are cached (geotiff.js asks for overlapping slices
 * while walking a header; a block is read once). Adjacent missing blocks are
 * fetched in one request. Counts the bytes read and notes any request that
 * reached past the end of the file, which tells a truncated file apart from a
 * corrupt one.
 */
export class RangeSourceAdapter {
  bytesRead = 0;
  requests = 0;
  /** A slice started at or after the end of the file (a pointer into missing data). */
  readBeyondEnd = false;
  /** The first error of the underlying source (storage, network): not the file's fault. */
  readFailure: unknown;
  private readonly blocks = new Map<number, Promise<Uint8Array>>();

  constructor(
    private readonly source: RangeSource,
    private readonly blockSize = 16 * 1024,
  ) {}

  get fileSize(): number {
    return this.source.size;
  }

  /** Matches BaseSource.fetch: one ArrayBuffer per slice, zero-filled beyond the end of the file. */
  async fetch(slices: Slice[]): Promise<ArrayBuffer[]> {
    return Promise.all(slices.map((slice) => this.readSlice(slice)));
  }

  async close(): Promise<void> {
    this.blocks.clear();
  }

  /** As a geotiff.js source (the structural type of its unexported BaseSource). */
  asGeoTiffSource(): GeoTiffSource {
    return this as unknown as GeoTiffSource;
  }

  private async readSlice({ offset, length }: Slice): Promise<ArrayBuffer> {
    const out = new Uint8Array(length);
    const end = Math.min(offset + length, this.source.size);
    if (offset >= this.source.size) {
      this.readBeyondEnd = true;
      return out.buffer;
    }
    const first = Math.floor(offset / this.blockSize);
    const last = Math.floor((end - 1) / this.blockSize);
    this.requestMissing(first, last);
    for (let b = first; b <= last; b++) {
      const block = await this.blocks.get(b)!;
      const blockStart = b * this.blockSize;
      const from = Math.max(offset, blockStart);
      const to = Math.min(end, blockStart + block.length);
      out.set(block.subarray(from - blockStart, to - blockStart), from - offset);
    }
    return out.buffer;
  }

  /** Starts one read per run of adjacent blocks not yet requested (concurrent slices share them). */
  private requestMissing(first: number, last: number): void {
    let b = first;
    while (b <= last) {
      if (this.blocks.has(b)) {
        b++;
        continue;
      }
      let to = b;
      while (to + 1 <= last && !this.blocks.has(to + 1)) to++;
      const run = this.readRun(b, to);
      for (let i = b; i <= to; i++) {
        const blockStart = (i - b) * this.blockSize;
        const block = run.then((data) => data.subarray(blockStart, Math.min(blockStart + this.blockSize, data.byteLength)));
        block.catch(() => undefined); // the failure is raised where the block is awaited, not as an unhandled rejection
        this.blocks.set(i, block);
      }
      b = to + 1;
    }
  }

  private async readRun(from: number, to: number): Promise<Uint8Array> {
    const start = from * this.blockSize;
    const length = Math.min((to + 1) * this.blockSize, this.source.size) - start;
    this.requests++;
    let data: Uint8Array;
    try {
      data = new Uint8Array(await this.source.read(start, length));
    } catch (error) {
      this.readFailure ??= error;
      throw error;
    }
    this.bytesRead += data.byteLength;
    if (data.byteLength < length) throw new ShortReadError(start, length, data.byteLength);
    return data;
  }
}
