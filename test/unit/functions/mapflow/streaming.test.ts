/**
 * Uploads and downloads against a real HTTP server on 127.0.0.1: the file is
 * streamed, never held in memory, and the multipart body is well formed.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { MapflowClient, UploadSizeMismatch } from '../../../../functions/mapflow/index.ts';
import { EMAIL, TOKEN, rejectionOf } from './helpers.ts';

const MiB = 1024 * 1024;

interface ReceivedUpload {
  contentLength: number;
  received: number;
  contentType: string;
  partHeader: string;
  fileBytes: number;
  fileSha256: string;
  closing: string;
}

/**
 * Reads a multipart body as it streams: the part header, then the file bytes
 * (hashed, not kept), holding back the closing boundary.
 */
async function readMultipart(req: IncomingMessage): Promise<ReceivedUpload> {
  const contentType = String(req.headers['content-type']);
  const boundary = /boundary=(.+)$/.exec(contentType)?.[1] ?? '';
  const closingLength = `\r\n--${boundary}--\r\n`.length;
  const hash = createHash('sha256');
  let header = Buffer.alloc(0);
  let headerDone = false;
  let held = Buffer.alloc(0);
  let received = 0;
  let fileBytes = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    received += buf.length;
    let rest = buf;
    if (!headerDone) {
      header = Buffer.concat([header, buf]);
      const end = header.indexOf('\r\n\r\n');
      if (end < 0) continue;
      headerDone = true;
      rest = header.subarray(end + 4);
      header = header.subarray(0, end + 4);
    }
    const joined = Buffer.concat([held, rest]);
    const release = Math.max(0, joined.length - closingLength);
    hash.update(joined.subarray(0, release));
    fileBytes += release;
    held = Buffer.from(joined.subarray(release));
  }
  return {
    contentLength: Number(req.headers['content-length']),
    received,
    contentType,
    partHeader: header.toString('utf8'),
    fileBytes,
    fileSha256: hash.digest('hex'),
    closing: held.toString('utf8'),
  };
}

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function startServer(handler: (req: IncomingMessage, res: import('node:http').ServerResponse) => Promise<void>): Promise<string> {
  // A client that aborts mid-body makes the handler's reads throw: that is expected here.
  server = createServer((req, res) => void handler(req, res).catch(() => res.destroy()));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/rest`;
}

/** `count` fresh 1 MiB chunks (each allocated anew, so buffering them would show in memory). */
function generatedFile(count: number, hash = createHash('sha256')): { stream: Readable; hash: typeof hash } {
  async function* chunks() {
    for (let i = 0; i < count; i++) {
      const chunk = Buffer.allocUnsafe(MiB).fill(i % 251);
      chunk.writeUInt32BE(i, 0);
      hash.update(chunk);
      yield chunk;
    }
  }
  return { stream: Readable.from(chunks(), { objectMode: false }), hash };
}

describe('streamed upload', () => {
  it('uploads 512 MiB as one multipart part without holding it in memory', async () => {
    // Prepare
    let upload: ReceivedUpload | undefined;
    let path = '';
    const baseUrl = await startServer(async (req, res) => {
      path = req.url ?? '';
      upload = await readMultipart(req);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'img-1', mosaic_id: 'm-1', filename: 'big.tif', file_size: upload.fileBytes, uploaded_at: 'now' }));
    });
    const client = new MapflowClient({ baseUrl, token: TOKEN, email: EMAIL, timeoutMs: 10_000 });
    const size = 512 * MiB;
    const file = generatedFile(512);
    const before = process.memoryUsage();
    let peakRss = before.rss;
    let peakHeap = before.heapUsed;
    let peakBuffers = before.arrayBuffers;
    const sampler = setInterval(() => {
      const now = process.memoryUsage();
      peakRss = Math.max(peakRss, now.rss);
      peakHeap = Math.max(peakHeap, now.heapUsed);
      peakBuffers = Math.max(peakBuffers, now.arrayBuffers);
    }, 10);

    // Act
    let image;
    try {
      image = await client.uploadImage('m-1', { stream: file.stream, size, filename: 'big "1".tif' });
    } finally {
      clearInterval(sampler);
    }

    // Assess
    expect(image).toMatchObject({ id: 'img-1', mosaicId: 'm-1', image: { fileSize: size } });
    expect(path).toBe('/rest/rasters/mosaic/m-1/image');
    expect(upload!.fileBytes).toBe(size);
    expect(upload!.fileSha256).toBe(file.hash.digest('hex'));
    expect(upload!.received).toBe(upload!.contentLength);
    expect(upload!.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(upload!.partHeader).toMatch(/^--.+\r\nContent-Disposition: form-data; name="file"; filename="big %221%22.tif"\r\nContent-Type: image\/tiff\r\n\r\n$/);
    expect(upload!.closing).toMatch(/^\r\n--.+--\r\n$/);
    // Generous bounds (the client and the server share this process, and the
    // garbage collector lets freed chunks pile up a little), far below the
    // 512 MiB that buffering the file would cost.
    expect(peakRss - before.rss).toBeLessThan(160 * MiB);
    expect(peakHeap - before.heapUsed).toBeLessThan(64 * MiB);
    expect(peakBuffers - before.arrayBuffers).toBeLessThan(160 * MiB);
  }, 60_000);

  it('refuses a source shorter than its declared size with UploadSizeMismatch (not an unknown outcome)', async () => {
    // Prepare
    const baseUrl = await startServer(async (req, res) => {
      for await (const _ of req) void _;
      res.end('{}');
    });
    const client = new MapflowClient({ baseUrl, token: TOKEN, authScheme: 'bearer' });

    // Act
    const error = await rejectionOf(
      client.uploadImage('m-1', { stream: Readable.from([Buffer.alloc(10)]), size: 20, filename: 'a.tif' }),
    );

    // Assess
    expect(error).toBeInstanceOf(UploadSizeMismatch);
    expect(error.message).toMatch(/ended after 10 of its declared 20 bytes/);
  });

  it('reports an upload whose connection drops after the body was sent as MapflowOutcomeUnknown', async () => {
    // Prepare: the server reads everything (it may have stored the image), then drops the connection.
    let requests = 0;
    const baseUrl = await startServer(async (req) => {
      requests++;
      for await (const _ of req) void _;
      req.socket.destroy();
    });
    const client = new MapflowClient({ baseUrl, token: TOKEN, authScheme: 'bearer', retry: { maxAttempts: 3, baseDelayMs: 1 } });

    // Act
    const error = await rejectionOf(
      client.createMosaicWithImage({ name: 'm', tags: ['a', 'b'] }, { stream: Readable.from([Buffer.alloc(1000, 1)]), size: 1000, filename: 'a.tif' }),
    );

    // Assess
    expect(error.name).toBe('MapflowOutcomeUnknown');
    expect(error.path).toBe('/rasters/mosaic/image?name=m&tags=a&tags=b');
    expect(requests).toBe(1);
  });
});

describe('upload timeout', () => {
  it('restarts the timeout with every chunk, so a slow but moving upload completes', async () => {
    // Prepare: 8 chunks 40 ms apart (about 320 ms in all) against a 150 ms idle limit.
    const baseUrl = await startServer(async (req, res) => {
      const upload = await readMultipart(req);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'img', file_size: upload.fileBytes }));
    });
    const client = new MapflowClient({ baseUrl, token: TOKEN, authScheme: 'bearer', uploadTimeoutMs: 150 });
    async function* slow() {
      for (let i = 0; i < 8; i++) {
        await new Promise((resolve) => setTimeout(resolve, 40));
        yield Buffer.alloc(1024, i);
      }
    }

    // Act
    const image = await client.uploadImage('m', { stream: Readable.from(slow(), { objectMode: false }), size: 8 * 1024, filename: 'slow.tif' });

    // Assess
    expect(image.image?.fileSize).toBe(8 * 1024);
  });

  it('gives up on an answer that does not come after the file was sent, as an unknown outcome', async () => {
    // Prepare: the server reads the file and never answers.
    const baseUrl = await startServer(async (req) => {
      for await (const _ of req) void _;
    });
    const client = new MapflowClient({ baseUrl, token: TOKEN, authScheme: 'bearer', uploadTimeoutMs: 100, timeoutMs: 5_000 });

    // Act
    const error = await rejectionOf(client.uploadImage('m', { stream: Readable.from([Buffer.alloc(100)]), size: 100, filename: 'a.tif' }));

    // Assess
    expect(error.name).toBe('MapflowOutcomeUnknown');
    expect(error.message).toMatch(/timed out after 100 ms/);
  });
});

describe('streamed download', () => {
  it('returns the result as a stream that arrives chunk by chunk', async () => {
    // Prepare: 64 MiB of result; the server holds its second half back until the caller's sink
    // has bytes, so a client that read the whole response before handing it over would never return.
    const size = 64 * MiB;
    let firstBytes!: () => void;
    const sinkHasBytes = new Promise<void>((resolve) => (firstBytes = resolve));
    let bytesWhenSecondHalfStarted = -1;
    const baseUrl = await startServer(async (req, res) => {
      expect(req.url).toBe('/rest/processings/p-1/result');
      res.setHeader('content-type', 'application/octet-stream');
      await pipeline(generatedFile(size / MiB / 2).stream, res, { end: false });
      await sinkHasBytes;
      bytesWhenSecondHalfStarted = bytes;
      await pipeline(generatedFile(size / MiB / 2).stream, res);
    });
    const client = new MapflowClient({ baseUrl, token: TOKEN, authScheme: 'bearer' });
    let bytes = 0;
    let chunks = 0;
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        chunks++;
        firstBytes();
        done();
      },
    });

    // Act
    const stream = await client.downloadResults('p-1');
    await pipeline(stream, sink);

    // Assess: all of it, in many chunks, the first ones before the server had sent half
    expect(stream).toBeInstanceOf(Readable);
    expect(bytes).toBe(size);
    expect(chunks).toBeGreaterThan(64);
    expect(bytesWhenSecondHalfStarted).toBeGreaterThan(0);
    expect(bytesWhenSecondHalfStarted).toBeLessThanOrEqual(size / 2);
  }, 60_000);
});
