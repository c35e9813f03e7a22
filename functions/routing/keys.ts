/**
 * S3 keys: decoding them from notifications, deriving job ids from them, and
 * the layout of what the bridge writes back:
 *
 *   inbox/<path>/<file>                      what users drop (never changed)
 *   results/<path>/<file>/<part>/result.geojson and job.json beside it
 *   failed/<path>/<file>/report.json         why a job was rejected or failed
 *   failed/<path>/<file>/<part>/partial-result.geojson   what a FAILED processing made (partialResultKey)
 *   work/<jobId>/<name>                      intermediate objects of a job
 *
 * `<path>/<file>` is the input's path below the inbox, kept whole (extension
 * included) so that `a.tif` and `a.geojson` never share a result folder.
 *
 * Keys with '.', '..' or empty path segments, control characters, U+2028/2029
 * or no UTF-8 form are not jobs' keys (keyProblem), nor keys whose job would
 * write a key over S3's 1,024 bytes (keyLengthProblem): dispatch starts them only to be REJECTED
 * (INVALID_KEY), their report goes to `failed/.invalid-keys/<hash of the key>/`,
 * and no result or work key is ever derived from them, so nothing the bridge
 * writes can leave its prefixes, whatever a file system or client makes of
 * dot segments. Hidden files and folders (a segment starting with '.') are
 * ignored by dispatch, so no job's path ever starts a segment with '.' and the
 * `.invalid-keys` folder cannot collide with a job's report.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { InputRejected } from '../core/errors.ts';
import { wellFormed } from '../core/text.ts';
import type { InputKind, JobKind } from '../core/model.ts';

/** The four top-level prefixes of the bucket layout (each ending in '/'). */
export interface KeyPrefixes {
  inbox: string;
  results: string;
  failed: string;
  work: string;
}

export const DEFAULT_PREFIXES: KeyPrefixes = Object.freeze({
  inbox: 'inbox/',
  results: 'results/',
  failed: 'failed/',
  work: 'work/',
});

/** The kind of job a key starts, from its extension (case-insensitive); undefined = not ours. */
export function inputKind(key: string): JobKind | undefined {
  const ext = posix.extname(key).toLowerCase();
  if (ext === '.geojson' || ext === '.json') return 'geojson';
  if (ext === '.tif' || ext === '.tiff') return 'geotiff';
  return undefined;
}

/** The kind a ledger row records: the job kind, or 'unsupported' for a file the bridge does not take (always REJECTED). */
export function recordedKind(key: string): InputKind {
  return inputKind(key) ?? 'unsupported';
}

/**
 * C0 and C1 control characters (NEL, U+0085, among them), DEL, and the line
 * and paragraph separators U+2028/U+2029: each breaks a log line, a terminal
 * or a JavaScript string literal, and tools read them differently.
 */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** A UTF-16 surrogate without its pair: a string that has no UTF-8 form (S3 keys are UTF-8). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * S3 refuses keys over 1,024 bytes of UTF-8 ("The name for a key is a
 * sequence of Unicode characters whose UTF-8 encoding is at most 1,024 bytes
 * long", https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
 */
export const MAX_S3_KEY_BYTES = 1024;

/**
 * What stands for each byte of a file name that is not UTF-8 (the local drop
 * folder and `local run`): SUB, the control character meant for "a character
 * that is invalid or in error", then the byte in hex. Being a control
 * character, a key holding it is REJECTED INVALID_KEY like any other.
 */
export const NOT_UTF8_BYTE_MARK = '\u001a';

/** `name` read from a file system (bytes): the key-safe string, with each byte that is not UTF-8 as SUB + 2 hex digits. */
export function fileNameFromBytes(bytes: Uint8Array): { name: string; utf8: boolean } {
  try {
    return { name: new TextDecoder('utf-8', { fatal: true }).decode(bytes), utf8: true };
  } catch {
    // Decode what is UTF-8 and mark the rest, byte by byte.
    let name = '';
    let i = 0;
    while (i < bytes.length) {
      const length = utf8SequenceLength(bytes, i);
      if (length > 0) {
        name += new TextDecoder('utf-8').decode(bytes.subarray(i, i + length));
        i += length;
      } else {
        name += `${NOT_UTF8_BYTE_MARK}${bytes[i]!.toString(16).toUpperCase().padStart(2, '0')}`;
        i += 1;
      }
    }
    return { name, utf8: false };
  }
}

/** Length of the well-formed UTF-8 sequence at `i` (RFC 3629, section 4), or 0. */
function utf8SequenceLength(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i]!;
  if (b0 < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => bytes[i + k] !== undefined && bytes[i + k]! >= lo && bytes[i + k]! <= hi;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((b0 >= 0xe1 && b0 <= 0xec) || b0 === 0xee || b0 === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (b0 === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (b0 === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xf1 && b0 <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/**
 * Why a key cannot be a job's key, or undefined: a '.' or '..' segment, an
 * empty segment ('//' or a leading '/'; a trailing '/' is a folder marker and
 * allowed here), a control character or U+2028/2029, or no UTF-8 form. The
 * local S3 refuses the segments and control characters itself
 * (packages/local/src/s3/s3rver-process.cjs) and stores the rest, as S3 does.
 */
export function keyProblem(key: string): string | undefined {
  if (LONE_SURROGATE.test(key)) return 'characters that have no UTF-8 form (a lone UTF-16 surrogate)';
  if (key.includes(NOT_UTF8_BYTE_MARK)) return 'bytes that are not UTF-8 in its file name (each shown as U+001A and the byte in hex)';
  const control = CONTROL_CHARACTER.exec(key);
  if (control) return `a control character (U+${control[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`;
  const segments = key.split('/');
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    if (segment === '.' || segment === '..') return `a '${segment}' path segment`;
    if (segment === '' && !(i === segments.length - 1 && i > 0)) return i === 0 ? "a leading '/'" : "an empty path segment ('//')";
  }
  return undefined;
}

/** True when a segment of the path below the inbox starts with '.' (hidden files and folders, editors' partial copies). */
export function isHiddenPath(key: string, inboxPrefix: string): boolean {
  return relativeInputPath(key, inboxPrefix)
    .split('/')
    .some((segment) => segment.startsWith('.'));
}

/**
 * Why a key's job could not write all its keys, or undefined: the longest key
 * it writes (a part's `result.geojson`, its job.json, its report) would pass
 * S3's 1,024 bytes, so the job would fail after spending. `partNames` are the
 * result folders (by default the single part's; a split job's are checked
 * once its features are read, still before anything is spent). Work keys are
 * `work/<job id of at most 80 characters>/...` and always fit.
 */
export function keyLengthProblem(prefixes: KeyPrefixes, key: string, partNames: string[] = [partNameFor(key)]): string | undefined {
  const rel = relativeInputPath(key, prefixes.inbox);
  const longestPart = partNames.reduce((longest, name) => (utf8Bytes(name) > utf8Bytes(longest) ? name : longest), '');
  const written = [
    `${prefixes.results}${rel}/${longestPart}/${LONGEST_RESULT_FILE}`,
    `${prefixes.results}${rel}/job.json`,
    `${prefixes.failed}${rel}/report.json`,
    `${prefixes.failed}${rel}/quicklook.svg`,
  ];
  const longest = written.reduce((a, b) => (utf8Bytes(b) > utf8Bytes(a) ? b : a));
  const bytes = utf8Bytes(longest);
  if (bytes <= MAX_S3_KEY_BYTES) return undefined;
  return `a name so long that a key the job writes, ${JSON.stringify(`${longest.slice(0, 40)}...${longest.slice(-40)}`)}, would be ${bytes} bytes of UTF-8, over S3's limit of ${MAX_S3_KEY_BYTES}`;
}

/** The longest file name written in a part's result folder (beside it: job.json, quicklook.svg, result.fgb). */
const LONGEST_RESULT_FILE = 'result.geojson';

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * The InputRejected for a key keyProblem refuses, or whose derived keys would
 * pass S3's limit (keyLengthProblem, with `prefixes`); undefined for a good key.
 */
export function invalidKeyRejection(key: string, prefixes: KeyPrefixes = DEFAULT_PREFIXES, partNames?: string[]): InputRejected | undefined {
  const problem = keyProblem(key);
  if (problem) {
    return new InputRejected(
      'INVALID_KEY',
      `the key ${JSON.stringify(wellFormed(key))} has ${problem}; file systems and S3 clients read such keys differently, so the bridge takes no file under it. Upload the file again under a key whose folders have names (no '.', '..' or empty folders), without control characters or line separators, in UTF-8.`,
    );
  }
  const tooLong = keyLengthProblem(prefixes, key, partNames);
  if (!tooLong) return undefined;
  return new InputRejected(
    'INVALID_KEY',
    `the key ${JSON.stringify(key)} has ${tooLong}; nothing was spent. Upload the file again under a shorter name or path${partNames && partNames.length > 1 ? ', or give its features shorter names' : ''}.`,
  );
}

function assertJobKey(key: string): void {
  const rejection = invalidKeyRejection(key);
  if (rejection) throw rejection;
}

/**
 * Decodes a key as S3 event notifications deliver it: form-URL-encoded, so
 * '+' is a space and '%XX' sequences are UTF-8 bytes (a literal '+' arrives as
 * '%2B'). A malformed sequence is left as it is rather than failing the event.
 */
export function decodeS3EventKey(raw: string): string {
  const spaced = raw.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    // Decode each UTF-8 character on its own so one bad escape does not spoil the rest.
    return spaced.replace(UTF8_ESCAPED_CHAR, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  }
}

/** One percent-encoded UTF-8 character: a lead byte and its continuation bytes. */
const UTF8_ESCAPED_CHAR = /%[0-7][0-9A-F]|%[C-D][0-9A-F]%[89AB][0-9A-F]|%E[0-9A-F](?:%[89AB][0-9A-F]){2}|%F[0-7](?:%[89AB][0-9A-F]){3}/gi;

/** ETag without the quotes S3 puts around it (and without a weak `W/` marker). */
export function normaliseEtag(etag: string): string {
  return etag.trim().replace(/^W\//, '').replace(/^"+|"+$/g, '');
}

/**
 * Deterministic job id of an input object: `<readable file stem>-<hash>`.
 * The hash covers bucket, key and ETag, so a re-delivered event (or the same
 * bytes uploaded again under the same key) gives the same id, while new
 * content under the same key gives a new one. The id is a valid Step
 * Functions execution name: at most 80 characters of [A-Za-z0-9-_].
 */
export function jobIdFor(input: { bucket: string; key: string; etag: string }): string {
  const hash = createHash('sha256')
    .update(`${input.bucket}\u0000${input.key}\u0000${normaliseEtag(input.etag)}`)
    .digest('hex')
    .slice(0, 32);
  const stem = asciiSlug(fileStem(input.key)).slice(0, 40).replace(/[-_]+$/, '');
  return `${stem || 'job'}-${hash}`;
}

/** The input's path below the inbox (the whole key when it is not under the inbox). */
export function relativeInputPath(key: string, inboxPrefix: string): string {
  const rel = key.startsWith(inboxPrefix) ? key.slice(inboxPrefix.length) : key;
  return rel.replace(/^\/+/, '');
}

/** Where a part's result and the job summary are written. Throws InputRejected INVALID_KEY for a key keyProblem refuses. */
export function resultKeys(prefixes: KeyPrefixes, key: string, partName: string): { resultKey: string; jobJsonKey: string } {
  assertJobKey(key);
  assertSegment(partName, 'part name');
  const folder = `${prefixes.results}${relativeInputPath(key, prefixes.inbox)}/${partName}/`;
  return { resultKey: `${folder}result.geojson`, jobJsonKey: `${folder}job.json` };
}

/**
 * Where the partial results of a part whose processing FAILED are written:
 * `failed/<path>/<part>/partial-result.geojson`, beside the job's report.
 * Throws InputRejected INVALID_KEY for a key keyProblem refuses.
 */
export function partialResultKey(prefixes: KeyPrefixes, key: string, partName: string): string {
  assertJobKey(key);
  assertSegment(partName, 'part name');
  return `${prefixes.failed}${relativeInputPath(key, prefixes.inbox)}/${partName}/partial-result.geojson`;
}

/** The folder holding all of a job's results (`results/<path>/<file>/`). Throws for a key keyProblem refuses. */
export function resultPrefix(prefixes: KeyPrefixes, key: string): string {
  assertJobKey(key);
  return `${prefixes.results}${relativeInputPath(key, prefixes.inbox)}/`;
}

/** Folder (under failed/) of the reports of keys keyProblem refuses; hidden, so no job's report can be there. */
export const INVALID_KEYS_FOLDER = '.invalid-keys';

/**
 * Where the report of a rejected or failed job is written:
 * `failed/<path>/report.json`, or for a key keyProblem refuses (whose path
 * cannot be trusted) `failed/.invalid-keys/<32 hex of SHA-256 of the key>/report.json`.
 */
export function reportKey(prefixes: KeyPrefixes, key: string): string {
  // A key too long for its report is placed like a bad one: its own path would not fit either.
  // quicklook.svg, written beside the report, is the longer of the two.
  if (keyProblem(key) || utf8Bytes(`${prefixes.failed}${relativeInputPath(key, prefixes.inbox)}/quicklook.svg`) > MAX_S3_KEY_BYTES) {
    const hash = createHash('sha256').update(key).digest('hex').slice(0, 32);
    return `${prefixes.failed}${INVALID_KEYS_FOLDER}/${hash}/report.json`;
  }
  return `${prefixes.failed}${relativeInputPath(key, prefixes.inbox)}/report.json`;
}

/** The work object holding the footprint of a GeoTIFF Inspect GeoTIFF refused (EPSG:4326), for its failure quicklook. */
export const FOOTPRINT_FILE = 'footprint.geometry.json';

/** An intermediate object of a job. */
export function workKey(prefixes: KeyPrefixes, jobId: string, name: string): string {
  assertSegment(jobId, 'job id');
  return `${prefixes.work}${jobId}/${name}`;
}

/** One folder name of a key the bridge writes: never empty, '.', '..', and without '/' or control characters. */
function assertSegment(segment: string, what: string): void {
  if (segment === '' || segment === '.' || segment === '..' || segment.includes('/') || CONTROL_CHARACTER.test(segment)) {
    throw new InputRejected('INVALID_KEY', `the ${what} ${JSON.stringify(segment)} cannot be a folder name in a key`);
  }
}

/** The file name without folders and without its extension ('inbox/a/b.c.tif' -> 'b.c'). */
export function fileStem(key: string): string {
  const base = posix.basename(key);
  const ext = posix.extname(base);
  return ext ? base.slice(0, -ext.length) : base;
}

/** Part name of a job with a single processing: the input's file stem. */
export function partNameFor(key: string): string {
  return sanitisePathSegment(fileStem(key)) || 'part';
}

/**
 * Part names of a job split into one processing per feature:
 * `<file stem>-<feature name>`, or the feature index when it has no usable
 * name or its name is taken by an earlier feature (names must stay unique:
 * each is a result folder).
 */
export function splitPartNames(key: string, features: { index: number; name?: string }[]): string[] {
  const stem = partNameFor(key);
  const used = new Set<string>();
  return features.map((feature) => {
    const label = feature.name === undefined ? '' : sanitisePathSegment(feature.name);
    let name = `${stem}-${label || feature.index}`;
    if (used.has(name)) name = `${stem}-${feature.index}${label ? `-${label}` : ''}`;
    while (used.has(name)) name = `${name}_`;
    used.add(name);
    return name;
  });
}

/**
 * Makes a string safe as one folder name in a key: letters (any script),
 * digits, '.', '-' and '_' are kept, every other run becomes '_'; at most 64
 * characters; never '.' or '..'.
 */
export function sanitisePathSegment(text: string): string {
  const cleaned = text
    .normalize('NFC')
    .replace(/[^\p{L}\p{N}._-]+/gu, '_')
    .replace(/^_+|_+$/g, '');
  const short = Array.from(cleaned).slice(0, 64).join('');
  return /^\.+$/.test(short) ? short.replace(/\./g, '_') : short;
}

/** ASCII-only slug (Step Functions names and log-friendly ids). */
function asciiSlug(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // drop accents: 'Zürich' -> 'Zurich'
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '');
}
