/**
 * Quicklooks: a `quicklook.svg` beside every `result.geojson` (the AOI and the
 * features, to scale, with a scale bar and the feature count) and beside every
 * failure report (the AOI and the reason).
 *
 * The result's quicklook is drawn from the result as it streams from Mapflow
 * into S3 (`tapResult`), so the result is never read twice nor held whole.
 * A quicklook is a convenience: failing to draw one never fails the job
 * (callers catch and log).
 */
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { readObjectText } from '../storage/s3.ts';
import { FeatureScanner } from '../geojson/features.ts';
import { Quicklook, type QuicklookLimits, type QuicklookText } from './svg.ts';

export { Quicklook, escapeXml, type QuicklookLimits, type QuicklookText } from './svg.ts';

export const QUICKLOOK_FILE = 'quicklook.svg';
export const QUICKLOOK_CONTENT_TYPE = 'image/svg+xml';
/** The most of an AOI (a part geometry or a GeoJSON input) read to draw it. */
export const MAX_AOI_BYTES = 20 * 1024 * 1024;
/**
 * The most of a failed job's GeoJSON input read to draw it: the input is
 * untrusted and its checks may have refused it for its size (issue 23: Fail
 * Job parsed the rejected 17 MB files again, 100-190 MB of heap each, the
 * largest share of the hostile corpus's peak). An input the checks accepted
 * is drawn from its part geometry, which the bridge wrote.
 */
export const MAX_FAILED_INPUT_AOI_BYTES = 1024 * 1024;

/** `results/a/b/0/result.geojson` -> `results/a/b/0/quicklook.svg` (same for report.json). */
export function quicklookKeyBeside(key: string): string {
  const slash = key.lastIndexOf('/');
  return `${key.slice(0, slash + 1)}${QUICKLOOK_FILE}`;
}

export interface ResultQuicklook {
  /** The result, unchanged, to be written wherever it goes. */
  readonly body: Readable;
  readonly quicklook: Quicklook;
  readonly scanner: FeatureScanner;
}

/** Passes `source` through unchanged while reading its features into a quicklook. */
export function tapResult(source: Readable, limits?: QuicklookLimits): ResultQuicklook {
  const quicklook = new Quicklook(limits);
  const scanner = new FeatureScanner({ onFeature: (feature) => quicklook.addFeature(feature) });
  const decoder = new StringDecoder('utf8');
  const body = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      try {
        scanner.push(decoder.write(chunk));
      } catch {
        // Drawing is best effort; the result itself must pass whatever happens.
      }
      callback(null, chunk);
    },
  });
  // The source's errors reach `body` (and so the upload); the rejection itself is theirs to report.
  pipeline(source, body).catch(() => undefined);
  return { body, quicklook, scanner };
}

/** Reads a GeoJSON object (bounded); undefined when it is missing, too large or not JSON. */
export async function readAoi(s3: S3Client, bucket: string, key: string, maxBytes = MAX_AOI_BYTES): Promise<unknown> {
  try {
    return JSON.parse(await readObjectText(s3, { bucket, key }, maxBytes)) as unknown;
  } catch {
    return undefined;
  }
}

export async function putQuicklook(s3: S3Client, bucket: string, key: string, svg: string): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: svg, ContentType: QUICKLOOK_CONTENT_TYPE }));
}

/** Draws and writes the quicklook of a stored result. */
export async function writeResultQuicklook(
  s3: S3Client,
  bucket: string,
  options: { tapped: ResultQuicklook; aoiKey?: string; resultKey: string; text: Omit<QuicklookText, 'featureCount' | 'unreadable'> },
): Promise<string> {
  const { tapped } = options;
  if (options.aoiKey) {
    const aoi = await readAoi(s3, bucket, options.aoiKey);
    if (aoi) tapped.quicklook.setAoi(aoi);
  }
  const svg = tapped.quicklook.render({ ...options.text, featureCount: tapped.scanner.count, unreadable: tapped.scanner.skipped });
  const key = quicklookKeyBeside(options.resultKey);
  await putQuicklook(s3, bucket, key, svg);
  return key;
}

/** Draws and writes the quicklook of a failed or rejected job: its AOI (when readable) and the reason. */
export async function writeFailureQuicklook(
  s3: S3Client,
  bucket: string,
  options: { reportKey: string; aoiKeys: (string | { key: string; maxBytes: number })[]; text: QuicklookText },
): Promise<string> {
  const quicklook = new Quicklook();
  for (const source of options.aoiKeys) {
    const aoi = typeof source === 'string' ? await readAoi(s3, bucket, source) : await readAoi(s3, bucket, source.key, source.maxBytes);
    if (aoi) {
      quicklook.setAoi(aoi);
      break;
    }
  }
  const key = quicklookKeyBeside(options.reportKey);
  await putQuicklook(s3, bucket, key, quicklook.render({ ...options.text, featureCount: 0 }));
  return key;
}
