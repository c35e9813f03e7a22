/**
 * One benchmark scenario, run in its own process so that its peak memory is
 * its own: `node --import tsx packages/bench/scenario.ts <name> <json args>`.
 * Prints one JSON line: { ms, cpuMs, peakRssBytes, startRssBytes, osPeakRssBytes, ...extra }.
 */
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { fromArrayBuffer } from 'geotiff';
import { get as httpGet, request as httpRequest, type IncomingMessage } from 'node:http';
import { readFileSync } from 'node:fs';
import { MapflowClient } from 'mapflow-bridge/functions/mapflow/index.ts';
import { fileRangeSource, inspectGeoTiff } from 'mapflow-bridge/functions/geotiff/index.ts';
import { readObjectBytes } from 'mapflow-bridge/functions/storage/s3.ts';
import type { StepContext } from 'mapflow-bridge/functions/jobs/context.ts';
import type { WorkflowState } from 'mapflow-bridge/functions/jobs/workflow.ts';
import { localS3Client } from '@mapflow-bridge/local/s3/client';

interface Args {
  file: string;
  url?: string;
  token?: string;
  email?: string;
  mosaicId?: string;
  /** The synthetic GeoTIFF in the local S3 (s3rver in its own process), as on AWS. */
  s3?: { endpoint: string; credentials: { accessKeyId: string; secretAccessKey: string }; bucket: string; key: string; size: number };
}

const scenarios: Record<string, (args: Args) => Promise<Record<string, unknown>>> = {
  /** The bridge's way: header and one pixel window through ranged reads. */
  async 'inspect-ranged'(args) {
    const source = await fileRangeSource(args.file);
    const info = await inspectGeoTiff(source, { probePixels: true });
    return { bytesRead: info.bytesRead, fileBytes: source.size, width: info.width };
  },
  /**
   * The bridge's way, as on AWS: its real Upload Image step (GetObject from
   * the local S3, streamed through the client into the receiver). Only the
   * ledger and the events are stand-ins: a row update and an event per job.
   */
  async 'upload-s3-step'(args) {
    const { s3 } = args;
    if (!s3) throw new Error('upload-s3-step needs args.s3');
    const mapflow = client(args);
    const ctx = {
      config: { pollPolicy: { initialSeconds: 1, maxSeconds: 3, factor: 1.5, maxJobSeconds: 3_600 } },
      s3: localS3Client(s3.endpoint, s3.credentials),
      ledger: { transition: async () => ({ changed: false, row: undefined }) },
      events: { publish: async () => undefined },
      mapflow: async () => mapflow,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
      now: () => new Date(),
      random: Math.random,
    } as unknown as StepContext;
    const input = { bucket: s3.bucket, key: s3.key, etag: 'bench', size: s3.size };
    const state = {
      jobId: 'bench-upload',
      input,
      job: { jobId: 'bench-upload', input, kind: 'geotiff', routeName: 'default', status: 'QUEUED', alreadyFinal: false, processImages: true, hasModel: true, createdAt: new Date().toISOString() },
      mosaic: { mosaicId: args.mosaicId!, name: 'bench', created: false, imageCount: 0 },
    } as unknown as WorkflowState;
    const { uploadImage } = await import('mapflow-bridge/functions/jobs/steps/upload-image.ts'); // loaded before the clock starts (below)
    const result = await uploadImage(state, ctx);
    if (!result.imageId || result.reused) throw new Error(`the upload step ${result.reused ? 'reused an image instead of uploading' : 'found no image'}`);
    return { bytes: s3.size, imageId: result.imageId };
  },
  /**
   * Physical limit from S3: a plain node:http GET of the object piped with
   * node:http into the same receiver inside the same multipart framing; no
   * SDK, no client logic (no retries, timeouts, hashing, checks).
   */
  async 'upload-s3-raw-pipe'(args) {
    const { s3 } = args;
    if (!s3) throw new Error('upload-s3-raw-pipe needs args.s3');
    const boundary = '----bench-raw-pipe';
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="raw.tif"\r\nContent-Type: image/tiff\r\n\r\n`);
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const source = await new Promise<IncomingMessage>((resolve, reject) => {
      // s3rver serves unsigned requests (it checks a signature only when one is sent).
      httpGet(`${s3.endpoint}/${s3.bucket}/${s3.key.split('/').map(encodeURIComponent).join('/')}`, resolve).on('error', reject);
    });
    if (source.statusCode !== 200) throw new Error(`raw GET answered ${source.statusCode}`);
    const url = new URL(`${args.url!.replace(/\/$/, '')}/rasters/mosaic/${encodeURIComponent(args.mosaicId!)}/image`);
    const status = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(url, {
        method: 'POST',
        headers: {
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(head.length + s3.size + tail.length),
          authorization: `Basic ${Buffer.from(`${args.email}:${args.token}`).toString('base64')}`,
        },
      });
      request.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', reject);
      request.write(head);
      source.pipe(request, { end: false });
      source.on('end', () => request.end(tail));
      source.on('error', reject);
    });
    if (status >= 300) throw new Error(`raw upload answered ${status}`);
    return { bytes: s3.size };
  },
  /** Baseline from S3: the naive way, the whole object read into memory first (readObjectBytes), then uploaded. */
  async 'upload-s3-buffered'(args) {
    const { s3 } = args;
    if (!s3) throw new Error('upload-s3-buffered needs args.s3');
    const whole = await readObjectBytes(localS3Client(s3.endpoint, s3.credentials), { bucket: s3.bucket, key: s3.key }, Number.MAX_SAFE_INTEGER);
    const image = await client(args).uploadImage(args.mosaicId!, { stream: Readable.from([whole]), size: whole.length, filename: 'buffered.tif' });
    return { bytes: whole.length, imageId: image.id };
  },
  /** Baseline: download the whole object, then parse it (one copy: the file's own buffer, no slice). */
  async 'inspect-whole'(args) {
    const whole = await readFile(args.file);
    // A Buffer from readFile owns its whole ArrayBuffer when large; pass it as is (a slice would copy it again).
    const tiff = await fromArrayBuffer(
      whole.byteOffset === 0 && whole.byteLength === whole.buffer.byteLength ? (whole.buffer as ArrayBuffer) : whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.byteLength),
    );
    const image = await tiff.getImage();
    return { bytesRead: whole.length, fileBytes: whole.length, width: image.getWidth() };
  },
};

function client(args: Args): MapflowClient {
  return new MapflowClient({ baseUrl: args.url!, token: args.token!, email: args.email, timeoutMs: 600_000 });
}

const [name, json] = process.argv.slice(2);
const scenario = scenarios[name ?? ''];
if (!scenario) {
  console.error(`unknown scenario '${name}'; one of ${Object.keys(scenarios).join(', ')}`);
  process.exit(2);
}
// Modules a scenario loads on demand are loaded now, so the clock measures the work only.
if (name === 'upload-s3-step') await import('mapflow-bridge/functions/jobs/steps/upload-image.ts');
// Memory: the OS's high-water mark of this process (VmHWM, reset at exec) against
// the RSS before the scenario. No in-process sampler: its calls would count in
// the CPU time measured here. (getrusage's maxRSS is no use: a spawned child
// inherits its parent's high-water mark on Linux.)
const startRssBytes = process.memoryUsage.rss();
const started = performance.now();
const cpuBefore = process.cpuUsage();
const extra = await scenario(JSON.parse(json ?? '{}') as Args);
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
const osPeakRssBytes = osPeakRss();
const peakRssBytes = Math.max(osPeakRssBytes ?? 0, process.memoryUsage.rss());
console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, peakRssBytes, startRssBytes, osPeakRssBytes, ...extra }));

/** The OS's high-water mark of this process's resident set (Linux VmHWM; reset at exec). */
function osPeakRss(): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
