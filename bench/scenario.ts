/**
 * One benchmark scenario, run in its own process so that its peak memory is
 * its own: `node --import tsx bench/scenario.ts <name> <json args>`.
 * Prints one JSON line: { ms, peakRssBytes, startRssBytes, ...extra }.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { fromArrayBuffer } from 'geotiff';
import { request as httpRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { MapflowClient } from '../functions/mapflow/index.ts';
import { multipartFileBody } from '../functions/mapflow/multipart.ts';
import { fileRangeSource, inspectGeoTiff } from '../functions/geotiff/index.ts';

interface Args {
  file: string;
  url?: string;
  token?: string;
  email?: string;
  mosaicId?: string;
}

const scenarios: Record<string, (args: Args) => Promise<Record<string, unknown>>> = {
  /** The bridge's way: the file streamed into the multipart body. */
  async 'upload-streamed'(args) {
    const size = (await stat(args.file)).size;
    const image = await client(args).uploadImage(args.mosaicId!, { stream: createReadStream(args.file), size, filename: 'streamed.tif' });
    return { bytes: size, imageId: image.id };
  },
  /** Baseline: the naive way, the whole file read into memory first. */
  async 'upload-buffered'(args) {
    const whole = await readFile(args.file);
    const image = await client(args).uploadImage(args.mosaicId!, { stream: Readable.from([whole]), size: whole.length, filename: 'buffered.tif' });
    return { bytes: whole.length, imageId: image.id };
  },
  /** The bridge's way: header and one pixel window through ranged reads. */
  async 'inspect-ranged'(args) {
    const source = await fileRangeSource(args.file);
    const info = await inspectGeoTiff(source, { probePixels: true });
    return { bytesRead: info.bytesRead, fileBytes: source.size, width: info.width };
  },
  /**
   * Physical limit: the same multipart bytes piped with plain node:http to the
   * same receiver, no client logic (no retries, timeouts, progress, checks).
   */
  async 'upload-raw-pipe'(args) {
    const size = (await stat(args.file)).size;
    const body = multipartFileBody({ stream: createReadStream(args.file), size, filename: 'raw.tif' });
    const url = new URL(`${args.url!.replace(/\/$/, '')}/rasters/mosaic/${encodeURIComponent(args.mosaicId!)}/image`);
    const status = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(url, {
        method: 'POST',
        headers: {
          'content-type': body.contentType,
          'content-length': String(body.length),
          authorization: `Basic ${Buffer.from(`${args.email}:${args.token}`).toString('base64')}`,
        },
      });
      request.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', reject);
      Readable.from(body.open(() => undefined)).pipe(request);
    });
    if (status >= 300) throw new Error(`raw upload answered ${status}`);
    return { bytes: size };
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
// Sample RSS often. (getrusage's maxRSS is no use here: a spawned child inherits
// its parent's high-water mark on Linux.)
const startRssBytes = process.memoryUsage().rss;
let peakRssBytes = startRssBytes;
const sampler = setInterval(() => {
  peakRssBytes = Math.max(peakRssBytes, process.memoryUsage().rss);
}, 5);
const started = performance.now();
const cpuBefore = process.cpuUsage();
const extra = await scenario(JSON.parse(json ?? '{}') as Args);
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
clearInterval(sampler);
peakRssBytes = Math.max(peakRssBytes, process.memoryUsage().rss);
console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, peakRssBytes, startRssBytes, osPeakRssBytes: osPeakRss(), ...extra }));

/** The OS's high-water mark of this process's resident set (Linux VmHWM; reset at exec). */
function osPeakRss(): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
