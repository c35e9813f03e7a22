/**
 * S3 keys: decoding them from notifications, deriving job ids from them, and
 * the layout of what the bridge writes back:
 *
 *   inbox/<path>/<file>                      what users drop (never changed)
 *   results/<path>/<file>/<part>/result.geojson and job.json beside it
 *   failed/<path>/<file>/report.json         why a job was rejected or failed
 *   work/<jobId>/<name>                      intermediate objects of a job
 *
 * `<path>/<file>` is the input's path below the inbox, kept whole (extension
 * included) so that `a.tif` and `a.geojson` never share a result folder.
 *
 * Keys with '.', '..' or empty path segments, or control characters, are not
 * jobs' keys (keyProblem): dispatch starts them only to be REJECTED
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

/** C0 and C1 control characters and DEL. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Why a key cannot be a job's key, or undefined: a '.' or '..' segment, an
 * empty segment ('//' or a leading '/'; a trailing '/' is a folder marker and
 * allowed here), or a control character. The local S3 applies the same rule
 * (packages/local/src/s3/s3rver-process.cjs).
 */
export function keyProblem(key: string): string | undefined {
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

/** The InputRejected for a key keyProblem refuses; undefined for a good key. */
export function invalidKeyRejection(key: string): InputRejected | undefined {
  const problem = keyProblem(key);
  if (!problem) return undefined;
  return new InputRejected(
    'INVALID_KEY',
    `the key ${JSON.stringify(key)} has ${problem}; file systems and S3 clients read such keys differently, so the bridge takes no file under it. Upload the file again under a key whose folders have names (no '.', '..' or empty folders) and without control characters.`,
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
  if (keyProblem(key)) {
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
