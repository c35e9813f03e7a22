'use strict';
/**
 * Versioned buckets on s3rver 3.7.1's file store (issue 37 point 7), as
 * docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html describes
 * them. Loaded by s3rver-process.cjs. s3rver has no versions: here a bucket
 * whose versioning is Enabled (PutBucketVersioning, or the bridge for the
 * template's versioned bucket) gets them.
 *
 *   - Every write (PutObject, CompleteMultipartUpload, CopyObject) stores a
 *     new version: a new version id, answered in `x-amz-version-id` and
 *     carried by the notification record (`s3.object.versionId`).
 *   - GET/HEAD with `versionId` return that version, bytes and metadata, even
 *     after the key was overwritten or deleted; an unknown id is 404
 *     NoSuchVersion, a malformed one 400 InvalidArgument. Without versionId:
 *     the current version, with its id in `x-amz-version-id`.
 *   - DELETE without versionId adds a delete marker (answered with
 *     `x-amz-delete-marker: true` and the marker's id; its event is
 *     ObjectRemoved:DeleteMarkerCreated): the key is gone, its versions stay.
 *   - The object written before versioning was enabled is the `null` version.
 *   - CopyObject from `...?versionId=` copies that version.
 *   - Tags are per version (Get/Put/DeleteObjectTagging, with or without
 *     versionId: the version asked for, else the current one); a new version
 *     starts without tags.
 * Not supported (501 NotImplemented): ListObjectVersions, DELETE with a
 * versionId (removing one version), GET of a delete marker's id (404
 * NoSuchVersion: markers are not stored). Suspended stops new versions (a
 * write becomes the null version), as on S3.
 *
 * Storage. Each version is a hard link to the object file it was written as,
 * plus its MD5 and metadata, in the bucket's own folder
 * `<bucket>/._S3rver_versions/<sha256 of the key>/<versionId>._S3rver_*`
 * (listings skip `._S3rver_` folders at the bucket's top). Writes replace an
 * object's file by a rename (s3rver-process.cjs, replaceAtomically), never in
 * place, so a link keeps its version's bytes: the current version costs no
 * extra space, a superseded one what it did. Nothing expires them: the
 * versions stay until the state folder goes (the stack's lifecycle rule that
 * expires noncurrent versions after days is not applied locally). The id of
 * a key's current version is in `<key>._S3rver_version` next to its object.
 */
const { AsyncLocalStorage } = require('node:async_hooks');
const crypto = require('node:crypto');
const fsp = require('node:fs/promises');
const path = require('node:path');
const S3Error = require('s3rver/lib/models/error');

/** The request being served: its bucket, the version it wrote, a delete marker it made, a copy source version. */
const requests = new AsyncLocalStorage();

const MARKER = '._S3rver_';
const VERSIONS_DIR = `${MARKER}versions`;
/** The ids this store makes (32 base64url characters); `null` names the null version. */
const VERSION_ID = /^[A-Za-z0-9_-]{32}$/;
const XMLNS = 'http://s3.amazonaws.com/doc/2006-03-01/';

const newVersionId = () => crypto.randomBytes(24).toString('base64url');

/** Writes `text` to `file` by a rename: a reader sees the old text or the new one. */
async function writeAtomically(file, text) {
  const aside = `${file}.partial-${crypto.randomBytes(6).toString('hex')}`;
  await fsp.writeFile(aside, text);
  await fsp.rename(aside, file);
}

async function readOrUndefined(file) {
  try {
    return await fsp.readFile(file, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

async function exists(file) {
  try {
    await fsp.stat(file);
    return true;
  } catch (error) {
    if (error.code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * Adds versions to a FilesystemStore whose putObject ends in commitObject
 * (s3rver-process.cjs). Call after storeKeysAsAws.
 */
function storeVersions(store) {
  /** Bucket -> its versioning status ('Enabled', 'Suspended' or undefined), read once from its file. */
  const statuses = new Map();
  /** Commits of a key, one at a time: its current object and its current version id change together. */
  const commits = new Map();
  const serially = (bucket, key, work) => {
    const id = `${bucket}/${key}`;
    const run = (commits.get(id) ?? Promise.resolve()).then(work);
    const settled = run.catch(() => undefined);
    commits.set(id, settled);
    settled.then(() => {
      if (commits.get(id) === settled) commits.delete(id);
    });
    return run;
  };

  store.versioningOf = async function versioningOf(bucket) {
    if (!statuses.has(bucket)) {
      const text = await readOrUndefined(this.getResourcePath(bucket, undefined, 'versioning'));
      statuses.set(bucket, text === 'Enabled' || text === 'Suspended' ? text : undefined);
    }
    return statuses.get(bucket);
  };

  store.setVersioning = async function setVersioning(bucket, status) {
    // As on S3: once enabled, a bucket is versioned or suspended, never unversioned again.
    await writeAtomically(this.getResourcePath(bucket, undefined, 'versioning'), status);
    statuses.set(bucket, status);
  };

  store.versionPath = function versionPath(bucket, key, versionId, resource) {
    const keyHash = crypto.createHash('sha256').update(key, 'utf8').digest('hex');
    return path.join(this.getBucketPath(bucket), VERSIONS_DIR, keyHash, `${versionId}${MARKER}${resource}`);
  };

  /** The id of the key's current version; undefined for the null version (or no object). */
  store.currentVersion = async function currentVersion(bucket, key) {
    return (await readOrUndefined(this.getResourcePath(bucket, key, 'version'))) || undefined;
  };

  store.hasVersion = function hasVersion(bucket, key, versionId) {
    return exists(this.versionPath(bucket, key, versionId, 'object'));
  };

  /** The store as seen by a request for one version: the key's files are that version's. */
  store.ofVersion = function ofVersion(bucket, key, versionId) {
    return Object.create(this, {
      getResourcePath: {
        value: (b, k, resource) => (b === bucket && k === key ? this.versionPath(bucket, key, versionId, resource) : this.getResourcePath(b, k, resource)),
      },
    });
  };

  /**
   * Keeps the key's current object as version `versionId`: links to its files (no bytes copied);
   * its tags too when asked (the null version's: a new version starts without tags, as on S3).
   */
  store.keepVersion = async function keepVersion(bucket, key, versionId, withTags = false) {
    const target = this.versionPath(bucket, key, versionId, 'object');
    await fsp.mkdir(path.dirname(target), { recursive: true });
    for (const resource of ['object', 'object.md5', 'metadata.json', ...(withTags ? ['tagging.xml'] : [])]) {
      const link = this.versionPath(bucket, key, versionId, resource);
      await fsp.rm(link, { force: true });
      await fsp.link(this.getResourcePath(bucket, key, resource), link).catch((error) => {
        if (error.code !== 'ENOENT') throw error; // an object written by an old s3rver may lack its MD5 or metadata
      });
    }
  };

  /** The null version, when the key's current object is one: kept before it is replaced or deleted. */
  const keepNullVersion = async (self, bucket, key) => {
    if ((await self.currentVersion(bucket, key)) !== undefined) return;
    if (await exists(self.getResourcePath(bucket, key, 'object'))) await self.keepVersion(bucket, key, 'null', true);
  };

  const commitObject = store.commitObject;
  store.commitObject = async function commitVersioned(bucket, key, aside, metadata, md5) {
    const status = await this.versioningOf(bucket);
    if (status === undefined) return commitObject.call(this, bucket, key, aside, metadata, md5);
    return serially(bucket, key, async () => {
      await keepNullVersion(this, bucket, key);
      const pointer = this.getResourcePath(bucket, key, 'version');
      if (status === 'Suspended') {
        // The write is the null version (S3 replaces a null version it had).
        await commitObject.call(this, bucket, key, aside, metadata, md5);
        await fsp.rm(pointer, { force: true });
        return;
      }
      const versionId = newVersionId();
      await commitObject.call(this, bucket, key, aside, metadata, md5);
      await this.keepVersion(bucket, key, versionId);
      await writeAtomically(pointer, versionId);
      const request = requests.getStore();
      if (request) request.versionId = versionId;
    });
  };

  const deleteObject = store.deleteObject;
  store.deleteObject = async function deleteVersioned(bucket, key) {
    const status = await this.versioningOf(bucket);
    if (status === undefined) return deleteObject.call(this, bucket, key);
    return serially(bucket, key, async () => {
      await keepNullVersion(this, bucket, key);
      await fsp.rm(this.getResourcePath(bucket, key, 'version'), { force: true });
      await deleteObject.call(this, bucket, key);
    });
  };

  // A copy written aside and committed (s3rver's own copies onto the target's file in place,
  // which would rewrite a version's bytes through its link); from the source's version when asked.
  store.copyObject = async function copyObject(srcBucket, srcKey, destBucket, destKey, replacementMetadata) {
    const sourceVersion = requests.getStore()?.copySourceVersion;
    const source = sourceVersion ? this.ofVersion(srcBucket, srcKey, sourceVersion) : this;
    const sourcePath = source.getResourcePath(srcBucket, srcKey, 'object');
    const sourceMetadata = await source.getMetadata(srcBucket, srcKey);
    const md5 = JSON.parse(sourceMetadata.etag);
    const target = this.getResourcePath(destBucket, destKey, 'object');
    await fsp.mkdir(path.dirname(target), { recursive: true });
    const aside = `${target}.partial-${crypto.randomBytes(6).toString('hex')}`;
    try {
      await fsp.copyFile(sourcePath, aside);
    } catch (error) {
      await fsp.rm(aside, { force: true });
      throw error;
    }
    await this.commitObject(destBucket, destKey, aside, replacementMetadata ?? sourceMetadata, md5);
    return this.getMetadata(destBucket, destKey);
  };
}

/** Reads a request's body (a small XML document). */
function readBody(ctx) {
  return new Promise((resolve, reject) => {
    let text = '';
    ctx.req.setEncoding('utf8');
    ctx.req.on('data', (chunk) => (text += chunk));
    ctx.req.on('end', () => resolve(text));
    ctx.req.on('error', reject);
  });
}

function noSuchVersion(key, versionId) {
  return new S3Error('NoSuchVersion', 'The specified version does not exist.', { Key: key, VersionId: versionId });
}

/**
 * The middleware (after the gate and the key guard): versioning of buckets,
 * versions of objects in versioned buckets.
 */
function versions() {
  return async function versions(ctx, next) {
    // Path-style, the key as one encoded segment (the key guard made it so).
    const match = /^\/([^/]+)(?:\/([^/]*))?$/.exec(ctx.path);
    if (!match) return next();
    const bucket = decodeURIComponent(match[1]);
    const key = match[2] ? decodeURIComponent(match[2]) : undefined;
    const store = ctx.store;
    const query = ctx.query;

    if (key === undefined) {
      if ('versioning' in query && (ctx.method === 'GET' || ctx.method === 'PUT')) {
        if (!(await store.getBucket(bucket))) throw new S3Error('NoSuchBucket', 'The specified bucket does not exist', { BucketName: bucket });
        if (ctx.method === 'PUT') {
          const status = /<Status>\s*(Enabled|Suspended)\s*<\/Status>/.exec(await readBody(ctx))?.[1];
          if (!status) throw new S3Error('MalformedXML', 'The XML you provided was not well-formed or did not validate against our published schema.');
          await store.setVersioning(bucket, status);
          ctx.status = 200;
          ctx.body = '';
          return;
        }
        const status = await store.versioningOf(bucket);
        ctx.type = 'application/xml';
        ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<VersioningConfiguration xmlns="${XMLNS}">${status ? `<Status>${status}</Status>` : ''}</VersioningConfiguration>`;
        return;
      }
      if ('versions' in query && ctx.method === 'GET') {
        throw new S3Error('NotImplemented', 'ListObjectVersions is not implemented by the local S3.');
      }
      return next();
    }

    const versioning = await store.versioningOf(bucket).catch(() => undefined);
    const versionId = typeof query.versionId === 'string' ? query.versionId : undefined;
    const request = { bucket };
    if (versionId !== undefined && versionId !== 'null' && !VERSION_ID.test(versionId)) {
      throw new S3Error('InvalidArgument', 'Invalid version id specified', { ArgumentName: 'versionId', ArgumentValue: versionId });
    }

    // Reads, and the tags of a version (tags are per version on S3): the version's own files.
    const tagging = 'tagging' in query && (ctx.method === 'PUT' || ctx.method === 'DELETE');
    if (ctx.method === 'GET' || ctx.method === 'HEAD' || tagging) {
      if (versioning === undefined) {
        // An unversioned bucket has only the null version.
        if (versionId !== undefined && versionId !== 'null') throw noSuchVersion(key, versionId);
        return next();
      }
      // The version asked for, else the current one: served from its own files, so its bytes
      // and its id agree even while the key is being overwritten.
      const current = versionId === undefined ? await store.currentVersion(bucket, key) : undefined;
      const wanted = versionId ?? current;
      if (wanted === undefined) return next(); // the null version, current (or no object: NoSuchKey)
      if (wanted === 'null' && (await store.currentVersion(bucket, key)) === undefined && (await store.existsObject(bucket, key))) return next();
      if (!(await store.hasVersion(bucket, key, wanted))) {
        if (versionId === undefined) return next(); // a version removed by hand: the key's own files
        throw noSuchVersion(key, versionId);
      }
      ctx.store = store.ofVersion(bucket, key, wanted);
      if (wanted !== 'null') ctx.set('x-amz-version-id', wanted);
      return next();
    }

    if (ctx.method === 'DELETE' && versionId !== undefined && !('uploadId' in query) && !('tagging' in query)) {
      throw new S3Error('NotImplemented', 'DeleteObject with a versionId is not implemented by the local S3.');
    }

    if (ctx.method === 'PUT' && ctx.get('x-amz-copy-source')) {
      const header = ctx.get('x-amz-copy-source');
      const at = header.indexOf('?');
      if (at !== -1) {
        const sourceVersion = new URLSearchParams(header.slice(at + 1)).get('versionId');
        // s3rver reads the header as bucket/key: the version goes to the store through the request.
        ctx.req.headers['x-amz-copy-source'] = header.slice(0, at);
        if (sourceVersion !== null && sourceVersion !== 'null') {
          const [srcBucket, ...srcKey] = decodeURI(header.slice(0, at)).replace(/^\//, '').split('/');
          const sourceKey = srcKey.join('/');
          if (!VERSION_ID.test(sourceVersion)) throw new S3Error('InvalidArgument', 'Invalid version id specified', { ArgumentName: 'versionId', ArgumentValue: sourceVersion });
          if (!(await store.hasVersion(srcBucket, sourceKey, sourceVersion))) throw noSuchVersion(sourceKey, sourceVersion);
          request.copySourceVersion = sourceVersion;
          // The version may outlive its key: s3rver checks that the key exists.
          ctx.store = Object.create(store, {
            existsObject: { value: (b, k) => (b === srcBucket && k === sourceKey ? Promise.resolve(true) : store.existsObject(b, k)) },
          });
          ctx.set('x-amz-copy-source-version-id', sourceVersion);
        }
      }
    }

    if (ctx.method === 'DELETE' && versioning === 'Enabled' && versionId === undefined && !('uploadId' in query) && !('tagging' in query)) {
      request.deleteMarker = newVersionId();
    }

    await requests.run(request, next);
    if (ctx.status < 300 && request.versionId) ctx.set('x-amz-version-id', request.versionId);
    if (request.deleteMarker && ctx.status < 300) {
      ctx.set('x-amz-delete-marker', 'true');
      ctx.set('x-amz-version-id', request.deleteMarker);
    }
  };
}

/** The notification of a write or delete on a versioned bucket carries its version (called as s3rver emits it). */
function withVersion(event) {
  const request = requests.getStore();
  const record = event && event.Records && event.Records[0];
  if (!request || !record || !record.s3 || !record.s3.object) return event;
  if (request.versionId && record.eventName.startsWith('ObjectCreated:')) record.s3.object.versionId = request.versionId;
  if (request.deleteMarker && record.eventName.startsWith('ObjectRemoved:')) {
    record.eventName = 'ObjectRemoved:DeleteMarkerCreated';
    record.s3.object.versionId = request.deleteMarker;
  }
  return event;
}

module.exports = { storeVersions, versions, withVersion };
