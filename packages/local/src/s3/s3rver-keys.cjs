'use strict';
/**
 * Keys and listings of the local S3 as AWS has them (issue 37 point 7), on
 * s3rver 3.7.1's file store. Loaded by s3rver-process.cjs.
 *
 * Keys. Any UTF-8 string of 1 to 1,024 bytes is a key on AWS
 * (docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html): `.` and
 * `..` segments, empty segments (`a//b`, a leading `/`) and segments of any
 * length included. s3rver joins a key's segments into a file path, so those
 * keys escaped the bucket folder, aliased other keys (`a/./b` is `a/b` on
 * disk) or failed (a segment of 255+ bytes). Here a segment that would do any
 * of that is stored under an escaped name: ESCAPED + its UTF-8 bytes in
 * base64url, split over CHUNK directories when that is too long for one file
 * name. A segment that is safe keeps its own name, so a state folder written
 * before keeps its objects.
 *
 * Listings. s3rver skipped every folder two or more levels below the prefix
 * when a delimiter was given (`aws s3 ls s3://b/results/` listed nothing),
 * counted only objects against MaxKeys and resumed a page after a common
 * prefix inside it. listBucket answers ListObjects (V1) and ListObjectsV2 as
 * AWS documents them (docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html):
 * keys in UTF-8 binary order; with a delimiter, the keys that contain it after
 * the prefix roll up into one CommonPrefixes entry each; objects and common
 * prefixes together count against MaxKeys (at most 1,000) and KeyCount; a
 * page ends after its last entry, object or common prefix, and the next one
 * starts after it (a common prefix is not listed again); encoding-type=url
 * encodes the keys and prefixes of the answer.
 */
const fsp = require('node:fs/promises');
const path = require('node:path');
const S3Error = require('s3rver/lib/models/error');
const S3Object = require('s3rver/lib/models/object');
const { DUMMY_ACCOUNT } = require('s3rver/lib/models/account');

/** s3rver's own marker in file names ('%s._S3rver_%s'): no safe segment contains it. */
const MARKER = '._S3rver_';
/** A whole escaped segment (its last piece when chunked). */
const ESCAPED = `${MARKER}k`;
/** A piece of an escaped segment that goes on in the next path component. */
const CHUNK = `${MARKER}c`;
/** The longest file name we make: 255 bytes less room for s3rver's suffixes and our `.partial-<hex>` writes. */
const MAX_NAME_BYTES = 200;
const OBJECT_SUFFIX = `${MARKER}object`;
/** S3's limit on a key (KeyTooLongError above it). */
const MAX_KEY_BYTES = 1024;
/** A page of a listing holds at most this many entries, whatever MaxKeys asks. */
const MAX_PAGE = 1000;

const utf8Bytes = (text) => Buffer.byteLength(text, 'utf8');

/** Whether a segment can be a path component as it is (`last`: it gets s3rver's suffix, so '', '.' and '..' are fine). */
function safeSegment(segment, last) {
  if (!last && (segment === '' || segment === '.' || segment === '..')) return false;
  if (segment.includes(MARKER) || segment.includes('\0') || segment.includes('\\')) return false;
  return utf8Bytes(segment) <= MAX_NAME_BYTES;
}

/** The path components of one key segment. */
function encodeSegment(segment, last) {
  if (safeSegment(segment, last)) return [segment];
  const encoded = Buffer.from(segment, 'utf8').toString('base64url');
  const size = MAX_NAME_BYTES - ESCAPED.length;
  const pieces = [];
  for (let i = 0; i < encoded.length; i += size) pieces.push(encoded.slice(i, i + size));
  if (pieces.length === 0) pieces.push('');
  return pieces.map((piece, i) => (i === pieces.length - 1 ? ESCAPED : CHUNK) + piece);
}

/** The key segments of path components (the inverse of encodeSegment over a whole key). */
function decodeComponents(components) {
  const segments = [];
  let pending = '';
  for (const component of components) {
    if (component.startsWith(CHUNK)) pending += component.slice(CHUNK.length);
    else if (component.startsWith(ESCAPED)) {
      segments.push(Buffer.from(pending + component.slice(ESCAPED.length), 'base64url').toString('utf8'));
      pending = '';
    } else segments.push(component);
  }
  return { segments, partial: pending !== '' };
}

/**
 * Replaces the file store's key-to-path mapping (getResourcePath), its
 * listing and its clean-up of empty folders after a delete.
 */
function storeKeysAsAws(store) {
  store.getResourcePath = function getResourcePath(bucket, key = '', resource) {
    // Bucket-level files (uploads, cors...) keep s3rver's own names.
    if (key === '') return path.join(this.rootDirectory, bucket, `${MARKER}${resource}`);
    const segments = key.split('/');
    const last = segments.pop();
    const dirs = segments.flatMap((segment) => encodeSegment(segment, false));
    const file = encodeSegment(last, true);
    const name = file.pop();
    return path.join(this.rootDirectory, bucket, ...dirs, ...file, `${name}${MARKER}${resource}`);
  };

  store.listObjects = async function listObjects(bucket, options) {
    const keys = await this.listKeys(bucket, options.prefix ?? '');
    const page = pageOf(keys, options);
    const metadata = await Promise.all(page.keys.map((key) => this.getMetadata(bucket, key).catch((error) => (error.code === 'ENOENT' ? undefined : Promise.reject(error)))));
    return {
      objects: page.keys.map((key, i) => metadata[i] && new S3Object(bucket, key, null, metadata[i])).filter(Boolean),
      commonPrefixes: page.commonPrefixes,
      entries: page.entries,
      isTruncated: page.isTruncated,
      last: page.last,
    };
  };

  /** Every key under `prefix`, in UTF-8 binary order. */
  store.listKeys = async function listKeys(bucket, prefix) {
    const root = this.getBucketPath(bucket);
    const keys = [];
    const visit = async (dir, components) => {
      let entries;
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true });
      } catch (error) {
        if (error.code === 'ENOENT') return;
        throw error;
      }
      for (const entry of entries) {
        if (entry.isDirectory()) {
          if (components.length === 0 && entry.name.startsWith(MARKER) && !entry.name.startsWith(ESCAPED) && !entry.name.startsWith(CHUNK)) continue; // ._S3rver_uploads
          const next = [...components, entry.name];
          const { segments, partial } = decodeComponents(next);
          // Only folders whose keys can start with the prefix (a chunked segment is not known yet).
          const folder = `${segments.join('/')}/`;
          if (partial || folder.startsWith(prefix) || prefix.startsWith(folder)) await visit(path.join(dir, entry.name), next);
        } else if (entry.name.endsWith(OBJECT_SUFFIX)) {
          const { segments } = decodeComponents([...components, entry.name.slice(0, -OBJECT_SUFFIX.length)]);
          const key = segments.join('/');
          if (key.startsWith(prefix)) keys.push(key);
        }
      }
    };
    await visit(root, []);
    return keys.sort(compareKeys);
  };

  store.deleteObject = async function deleteObject(bucket, key) {
    const objectPath = this.getResourcePath(bucket, key, 'object');
    await Promise.all(
      [objectPath, this.getResourcePath(bucket, key, 'object.md5'), this.getResourcePath(bucket, key, 'metadata.json')].map((file) =>
        fsp.unlink(file).catch((error) => {
          if (error.code !== 'ENOENT') throw error;
        }),
      ),
    );
    // Empty folders go, up to the bucket's (S3 has no folders; a listing must not find them).
    const bucketPath = this.getBucketPath(bucket);
    for (let dir = path.dirname(objectPath); dir.startsWith(bucketPath + path.sep); dir = path.dirname(dir)) {
      try {
        await fsp.rmdir(dir);
      } catch {
        return; // not empty (or gone)
      }
    }
  };
}

/** S3's order of keys: UTF-8 bytes, not UTF-16 code units. */
function compareKeys(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * One page of a listing: the keys after `startAfter`, objects and common
 * prefixes together up to `maxKeys`. A common prefix equal to `startAfter` is
 * not listed again, so a page that ended on one resumes after all its keys.
 */
function pageOf(keys, { prefix = '', delimiter = '', startAfter = '', maxKeys = MAX_PAGE }) {
  const page = { keys: [], commonPrefixes: [], entries: 0, isTruncated: false, last: undefined };
  let lastPrefix;
  for (const key of keys) {
    if (startAfter && compareKeys(key, startAfter) <= 0) continue;
    let entry = key;
    let isPrefix = false;
    if (delimiter) {
      const at = key.indexOf(delimiter, prefix.length);
      if (at !== -1) {
        entry = key.slice(0, at + delimiter.length);
        isPrefix = true;
        // A page that ended on a common prefix resumes after it (its NextMarker / token names it):
        // not listed again. One that ended inside it lists it, for the keys left in it.
        if (entry === lastPrefix || entry === startAfter) continue;
      }
    }
    if (page.entries >= maxKeys) {
      page.isTruncated = true;
      break;
    }
    page.entries++;
    page.last = entry;
    if (isPrefix) {
      page.commonPrefixes.push(entry);
      lastPrefix = entry;
    } else page.keys.push(key);
  }
  return page;
}

const TOKEN_VERSION = 'mfb1';

function continuationToken(bucket, after) {
  return Buffer.from(JSON.stringify([TOKEN_VERSION, bucket, after]), 'utf8').toString('base64');
}

function afterOfToken(bucket, token) {
  try {
    const [version, tokenBucket, after] = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
    if (version === TOKEN_VERSION && tokenBucket === bucket && typeof after === 'string') return after;
  } catch {
    // falls through to AWS's answer
  }
  throw new S3Error('InvalidArgument', 'The continuation token provided is incorrect', { ArgumentName: 'continuation-token' });
}

/** GET Bucket (ListObjects V1, and V2 with list-type=2): replaces s3rver's getBucket controller. */
async function listBucket(ctx) {
  const query = ctx.query;
  const bucket = ctx.params.bucket;
  const v2 = query['list-type'] === '2';
  let maxKeys = MAX_PAGE;
  if (query['max-keys'] !== undefined && query['max-keys'] !== '') {
    if (!/^-?\d+$/.test(query['max-keys'])) {
      throw new S3Error('InvalidArgument', 'Provided max-keys not an integer or within integer range', { ArgumentName: 'max-keys', ArgumentValue: query['max-keys'] });
    }
    const asked = Number(query['max-keys']);
    if (asked < 0 || asked > 2147483647) throw new S3Error('InvalidArgument', 'Argument maxKeys must be an integer between 0 and 2147483647', { ArgumentName: 'maxKeys', ArgumentValue: asked });
    maxKeys = Math.min(MAX_PAGE, asked);
  }
  const encodingType = query['encoding-type'];
  if (encodingType !== undefined && encodingType !== 'url') {
    throw new S3Error('InvalidArgument', 'Invalid Encoding Method specified in Request', { ArgumentName: 'encoding-type', ArgumentValue: encodingType });
  }
  const prefix = query.prefix ?? '';
  const delimiter = query.delimiter ?? '';
  let startAfter = '';
  if (v2) {
    if ('marker' in query) throw new S3Error('InvalidArgument', 'Marker unsupported with REST.GET.BUCKET in list-type=2', { ArgumentName: 'marker' });
    startAfter = query['continuation-token'] ? afterOfToken(bucket, query['continuation-token']) : query['start-after'] ?? '';
    // A token's position, or StartAfter, whichever is later.
    if (query['continuation-token'] && query['start-after'] && compareKeys(query['start-after'], startAfter) > 0) startAfter = query['start-after'];
  } else {
    if ('continuation-token' in query) throw new S3Error('InvalidArgument', 'continuation-token only supported in REST.GET.BUCKET with list-type=2', { ArgumentName: 'continuation-token' });
    if ('start-after' in query) throw new S3Error('InvalidArgument', 'startAfter only supported in REST.GET.BUCKET with list-type=2', { ArgumentName: 'start-after' });
    startAfter = query.marker ?? '';
  }
  const result =
    maxKeys === 0
      ? { objects: [], commonPrefixes: [], entries: 0, isTruncated: false, last: undefined }
      : await ctx.store.listObjects(bucket, { prefix, delimiter, startAfter, maxKeys });
  const enc = (value) => (encodingType === 'url' && typeof value === 'string' ? encodeURIComponent(value) : value);
  const fetchOwner = v2 ? query['fetch-owner'] === 'true' : true;
  ctx.body = {
    ListBucketResult: {
      '@': { xmlns: 'http://s3.amazonaws.com/doc/2006-03-01/' },
      Name: bucket,
      Prefix: enc(prefix),
      ...(v2
        ? {
            StartAfter: query['start-after'] ? enc(query['start-after']) : undefined,
            ContinuationToken: query['continuation-token'] || undefined,
            NextContinuationToken: result.isTruncated ? continuationToken(bucket, result.last) : undefined,
            KeyCount: result.entries,
          }
        : {
            Marker: enc(startAfter),
            // V1 gives NextMarker only with a delimiter; without one the last key is the marker.
            NextMarker: delimiter && result.isTruncated ? enc(result.last) : undefined,
          }),
      MaxKeys: query['max-keys'] || MAX_PAGE,
      Delimiter: delimiter ? enc(delimiter) : undefined,
      EncodingType: encodingType,
      IsTruncated: result.isTruncated,
      Contents: result.objects.map((object) => ({
        Key: enc(object.key),
        LastModified: object.lastModifiedDate.toISOString(),
        ETag: object.metadata.etag,
        Size: object.size,
        Owner: fetchOwner ? { ID: DUMMY_ACCOUNT.id, DisplayName: DUMMY_ACCOUNT.displayName } : undefined,
        StorageClass: 'STANDARD',
      })),
      CommonPrefixes: result.commonPrefixes.map((commonPrefix) => ({ Prefix: enc(commonPrefix) })),
    },
  };
}

/** Why S3 refuses a key (KeyTooLongError), or undefined: AWS's only rule on a key is its length. */
function keyTooLong(key) {
  return utf8Bytes(key) > MAX_KEY_BYTES ? new S3Error('KeyTooLongError', 'Your key is too long', { MaxSizeAllowed: MAX_KEY_BYTES, Size: utf8Bytes(key) }) : undefined;
}

module.exports = { storeKeysAsAws, listBucket, keyTooLong, pageOf, compareKeys };
