'use strict';
/**
 * Child process that runs s3rver (the local S3).
 *
 * Why a child process: s3rver encrypts ListObjectsV2 continuation tokens with
 * DES, which Node 17+ only offers with OpenSSL's legacy provider. Starting
 * s3rver in its own Node process with `--openssl-legacy-provider` keeps that
 * flag away from the bridge's own process (and from vitest workers), whatever
 * NODE_OPTIONS the user has.
 *
 * Protocol (Node IPC, see packages/local/src/s3/server.ts):
 *   parent -> child: the options as JSON in argv[2]; later { type: 'flush', id },
 *                    { type: 'versioning', id, bucket, status } and { type: 'close' }
 *   child -> parent: { type: 'ready', port }, { type: 'event', event } for each
 *                    S3 notification, { type: 'flushed', id } once every event
 *                    emitted before the flush has been sent, { type: 'versioned', id, error? }
 *                    once a bucket's versioning is set, { type: 'error', message }
 *                    on a failure to start.
 * The child exits when asked to close or when the parent goes away (IPC
 * disconnect), so a killed parent never leaves an orphaned server.
 *
 * The gate runs first (see gate): every request is described to the parent
 *   child -> parent: { type: 'authorize', id, request: { method, url, headers } }
 *   parent -> child: { type: 'verdict', id, verdict }   (packages/local/src/auth/gate.ts)
 * which checks the Host, refuses browsers, verifies the SigV4 signature
 * against the credentials the bridge issued and evaluates the signer's IAM
 * policies. A refusal is answered as it comes (S3's XML error); nothing
 * reaches s3rver. When a GET/HEAD by a role finds no key, the child asks again
 * ({ ..., missingKey: true }): 404 NoSuchKey with s3:ListBucket on the key,
 * else 403 AccessDenied, as AWS does.
 *
 * A guard runs next (see keyGuard): it refuses, with 400, a bucket name S3
 * does not allow and a key over S3's 1,024 bytes (KeyTooLongError). Every
 * other key is a key, as on AWS: `.`, `..` and empty segments included. The
 * file store maps each to a path inside its bucket folder of its own
 * (s3rver-keys.cjs), and answers listings as AWS does.
 *
 * Writes are atomic, as on S3 (see replaceAtomically): s3rver truncates an
 * object's file in place and answers before the bytes are on disk, so a
 * reader of an object being overwritten saw an empty or partial object.
 *
 * Versioned buckets keep every version (s3rver-versions.cjs, after the key
 * guard): x-amz-version-id, GET/HEAD by versionId, delete markers.
 *
 * A full disk is not S3's failure (see untilWritten): the parent holds the
 * verdict of a write while the state folder's disk is full, and a write that
 * still meets ENOSPC (the disk filled since) asks it
 *   child -> parent: { type: 'disk-full', id }
 *   parent -> child: { type: 'disk-free', id, free }
 * and is made again once space is back (free), or fails as before (not free:
 * no disk watch, or the disk stayed full too long). An object or part streams
 * to disk as it comes, its bytes also kept in memory up to RETRYABLE_BYTES,
 * so it can be written again; a larger one fails.
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const nodeModule = require('node:module');
const path = require('node:path');

const options = JSON.parse(process.argv[2]);

// V8's code cache on disk, before s3rver and Koa load: a start after the
// first reads their compiled code instead of compiling it again (the
// functions' environments do the same, lambda-runtime.mjs).
if (options.compileCacheDir && typeof nodeModule.enableCompileCache === 'function') nodeModule.enableCompileCache(options.compileCacheDir);

const S3rver = require('s3rver');
const S3Error = require('s3rver/lib/models/error');
const FilesystemStore = require('s3rver/lib/stores/filesystem');
const { DUMMY_ACCOUNT } = require('s3rver/lib/models/account');
const bucketController = require('s3rver/lib/controllers/bucket');
const { keyTooLong, listBucket, storeKeysAsAws } = require('./s3rver-keys.cjs');
const { storeVersions, versions, withVersion } = require('./s3rver-versions.cjs');

replaceAtomically(FilesystemStore.prototype);
partsSafely(FilesystemStore.prototype);
// Every key S3 takes, names over 255 bytes and `.`/`..`/empty segments included, and listings as S3 answers them (s3rver-keys.cjs).
storeKeysAsAws(FilesystemStore.prototype);
// Versioned buckets: versions kept aside, GET by versionId, x-amz-version-id (s3rver-versions.cjs).
storeVersions(FilesystemStore.prototype);
// s3rver's router looks the controller up on each request (routes.js).
bucketController.getBucket = listBucket;

// Ctrl-C reaches the whole process group: let the parent decide when to stop,
// so uploads in flight can finish.
process.on('SIGINT', () => {});

async function main() {
  const server = new S3rver({
    address: options.address,
    port: options.port,
    directory: options.directory,
    silent: true,
    // Path-style only: the bridge's clients use forcePathStyle.
    vhostBuckets: false,
    configureBuckets: options.buckets.map((name) => ({ name, configs: [] })),
  });
  // First in the chain: Koa composes `middleware` when the server starts listening.
  server.middleware.unshift(gate(), keyGuard(), versions());
  // s3rver's built-in key would otherwise open its own door (s3rver checks no V4 signature).
  DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
  // s3rver emits an object's event inside the request, before the answer goes
  // out; every message to the parent leaves through this one ordered queue, so
  // a 'flushed' reply follows every event of a request answered before the
  // parent's 'flush' (see flushNotifications in server.ts).
  let outbox = Promise.resolve();
  const delayMs = options.notificationDelayMs ?? 0;
  const sendInOrder = (message, delay) => {
    // Each message is held `delay` from now (not after the one before it): order kept, no pile-up.
    const due = Date.now() + delay;
    outbox = outbox
      .then(() => (due > Date.now() ? new Promise((resolve) => setTimeout(resolve, due - Date.now())) : undefined))
      .then(() => {
        if (process.connected) process.send(message);
      });
  };
  // Emitted inside the request: withVersion reads the version it wrote.
  server.on('event', (event) => sendInOrder({ type: 'event', event: withVersion(event) }, delayMs));
  const address = await server.run();
  // On disk now, not at exit: an s3rver killed from outside leaves its cache too.
  if (typeof nodeModule.flushCompileCache === 'function') nodeModule.flushCompileCache();
  // The buckets the template makes versioned (server.ts, versionedBuckets).
  for (const bucket of options.versionedBuckets ?? []) await server.store.setVersioning(bucket, 'Enabled');

  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    try {
      await server.close();
    } finally {
      process.exit(0);
    }
  };
  process.on('message', (message) => {
    if (message && message.type === 'close') void close();
    else if (message && message.type === 'flush') sendInOrder({ type: 'flushed', id: message.id }, 0);
    else if (message && message.type === 'verdict') verdicts.get(message.id)?.(message.verdict);
    else if (message && message.type === 'disk-free') diskWaits.get(message.id)?.(message.free === true);
    else if (message && message.type === 'versioning') {
      server.store.setVersioning(message.bucket, message.status).then(
        () => sendInOrder({ type: 'versioned', id: message.id }, 0),
        (error) => sendInOrder({ type: 'versioned', id: message.id, error: String(error && error.message) }, 0),
      );
    }
  });
  process.on('disconnect', () => void close());
  // Belt and braces for a parent killed with -9: the IPC disconnect can be
  // missed while the event loop is busy; a changed parent pid cannot.
  const parentPid = process.ppid;
  setInterval(() => {
    if (process.ppid !== parentPid) void close();
  }, 1000).unref();
  process.send({ type: 'ready', port: address.port });
}

/** S3's bucket naming rules (path-style, so no dots-only or '..' names can reach the file system). */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

function decode(text, decoder) {
  try {
    return decoder(text);
  } catch {
    throw new S3Error('InvalidURI', "Couldn't parse the specified URI.");
  }
}

function checkTarget(bucket, key) {
  if (!BUCKET_NAME.test(bucket) || bucket.includes('..')) {
    throw new S3Error('InvalidBucketName', 'The specified bucket is not valid.', { BucketName: bucket });
  }
  const tooLong = key === undefined ? undefined : keyTooLong(key);
  if (tooLong) throw tooLong;
}

/**
 * S3 replaces an object atomically: a GET sees the old object or the new one,
 * whole, never a mix, and a PUT is answered once the object is stored. s3rver
 * 0.x instead opens the object's file with truncation and resolves the PUT
 * when the bytes went through its hash, before the file is written. Here each
 * file (object, MD5, metadata) is written aside and renamed into place; a
 * reader that already opened the old file keeps reading it. The object is
 * renamed before its MD5 and metadata, so an overwrite with other bytes can
 * show the new size with the old ETag for the time of two renames (the
 * bridge's own overwrites keep the bytes the same).
 */
function replaceAtomically(store) {
  store.putObject = async function putObject(object) {
    const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
    const asideOf = () => `${objectPath}.partial-${crypto.randomBytes(6).toString('hex')}`;
    // Bytes in memory: written aside and committed, again after a full disk (untilWritten).
    const writeWhole = (bytes) =>
      untilWritten(async () => {
        await fsp.mkdir(path.dirname(objectPath), { recursive: true });
        const aside = asideOf();
        const md5 = crypto.createHash('md5').update(bytes).digest('hex');
        try {
          await fsp.writeFile(aside, bytes);
        } catch (error) {
          await fsp.rm(aside, { force: true });
          throw error;
        }
        await this.commitObject(object.bucket, object.key, aside, object.metadata, md5);
        return { size: bytes.length, md5 };
      });
    if (Buffer.isBuffer(object.content)) return writeWhole(object.content);
    await untilWritten(() => fsp.mkdir(path.dirname(objectPath), { recursive: true }));
    const aside = asideOf();
    let written;
    try {
      written = await writeKeeping(object.content, aside, RETRYABLE_BYTES);
    } catch (error) {
      await fsp.rm(aside, { force: true });
      throw error;
    }
    if (written.failed) {
      await fsp.rm(aside, { force: true });
      if (!(await spaceAgainAfter(written.failed))) throw written.failed;
      return writeWhole(written.whole);
    }
    try {
      await this.commitObject(object.bucket, object.key, aside, object.metadata, written.md5);
    } catch (error) {
      if (written.whole === undefined || !(await spaceAgainAfter(error))) throw error;
      return writeWhole(written.whole);
    }
    return { size: written.size, md5: written.md5 };
  };
  /** The object written aside becomes the key's object, then its MD5 and metadata (s3rver-versions.cjs wraps this). */
  store.commitObject = async function commitObject(bucket, key, aside, metadata, md5) {
    try {
      await fsp.rename(aside, this.getResourcePath(bucket, key, 'object'));
    } catch (error) {
      await fsp.rm(aside, { force: true });
      throw error;
    }
    await this.putMetadata(bucket, key, metadata, md5);
  };
  const putMetadata = store.putMetadata;
  store.putMetadata = async function putMetadataAtomically(bucket, key, metadata, md5) {
    // s3rver's own version picks the fields; it writes through this object's paths.
    const files = {};
    const suffix = `.partial-${crypto.randomBytes(6).toString('hex')}`;
    const collector = Object.create(this, {
      getResourcePath: { value: (b, k, resource) => (files[resource] = this.getResourcePath(b, k, resource)) + suffix },
    });
    await putMetadata.call(collector, bucket, key, metadata, md5);
    for (const target of Object.values(files)) await fsp.rename(`${target}${suffix}`, target);
  };
}

/** Objects and parts up to this size are read whole before they are written: one cut by a full disk is written again. */
const RETRYABLE_BYTES = 16 * 1024 * 1024;

/**
 * Streams `source` to `file` as it comes (a reader sees the file grow), and
 * keeps its bytes in memory while they are at most `limit`. Resolves
 * { size, md5, whole? } once the file is written; when writing the file fails
 * and the bytes were kept, reads the source to its end and resolves
 * { failed, whole } (the caller may write them again); else rejects.
 */
function writeKeeping(source, file, limit) {
  return new Promise((resolve, reject) => {
    const md5 = crypto.createHash('md5');
    let size = 0;
    let kept = [];
    let failed;
    let ended = false;
    let done = false;
    const settle = (outcome) => {
      if (done) return;
      done = true;
      if (outcome instanceof Error) return reject(outcome);
      const whole = kept ? Buffer.concat(kept) : undefined;
      resolve(failed ? { failed, whole } : { size, md5: md5.digest('hex'), ...(whole ? { whole } : {}) });
    };
    const out = fs.createWriteStream(file);
    out.on('finish', () => settle());
    out.on('error', (error) => {
      failed ??= error;
      if (!kept) {
        source.destroy();
        return settle(error);
      }
      // The rest of the bytes are still read (and kept) to be written again.
      source.resume();
      if (ended) settle();
    });
    source.on('data', (chunk) => {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      md5.update(bytes);
      size += bytes.length;
      if (kept) {
        kept.push(bytes);
        if (size > limit) kept = undefined;
      }
      if (failed) {
        if (!kept) {
          source.destroy();
          settle(failed);
        }
        return;
      }
      if (!out.write(bytes)) {
        source.pause();
        out.once('drain', () => source.resume());
      }
    });
    source.once('end', () => {
      ended = true;
      if (failed) settle();
      else out.end();
    });
    source.once('error', (error) => {
      out.destroy();
      settle(error);
    });
  });
}

/** Waits for the parent's word on the full disk: true once space is back, false when the write is to fail. */
const diskWaits = new Map();
let nextDiskWait = 0;

function diskFreeAgain() {
  if (!process.connected) return Promise.resolve(false);
  return new Promise((resolve) => {
    const id = nextDiskWait++;
    diskWaits.set(id, (free) => {
      diskWaits.delete(id);
      resolve(free);
    });
    process.send({ type: 'disk-full', id });
  });
}

/** Runs `write`; when it meets a full disk, runs it again once the parent says space is back (it must start over from the start). */
async function untilWritten(write) {
  for (;;) {
    try {
      return await write();
    } catch (error) {
      if (!(await spaceAgainAfter(error))) throw error;
    }
  }
}

/** Whether a write that failed with `error` may be made again: it met a full disk, and space is back. */
async function spaceAgainAfter(error) {
  return Boolean(error) && error.code === 'ENOSPC' && diskFreeAgain();
}

/**
 * s3rver's putPart pipes the part to its file without listening for the
 * file's errors: a full disk (ENOSPC) there was an uncaught exception that
 * killed s3rver's process. Here a part is written as an object is (untilWritten).
 */
function partsSafely(store) {
  store.putPart = async function putPart(bucket, uploadId, partNumber, content) {
    const partPath = path.join(this.getResourcePath(bucket, undefined, 'uploads'), uploadId, partNumber.toString());
    const writeWhole = (bytes) =>
      untilWritten(async () => {
        await fsp.mkdir(path.dirname(partPath), { recursive: true });
        const md5 = crypto.createHash('md5').update(bytes).digest('hex');
        await fsp.writeFile(partPath, bytes);
        await fsp.writeFile(`${partPath}.md5`, md5);
        return { size: bytes.length, md5 };
      });
    await untilWritten(() => fsp.mkdir(path.dirname(partPath), { recursive: true }));
    const written = await writeKeeping(content, partPath, RETRYABLE_BYTES);
    if (written.failed) {
      if (!(await spaceAgainAfter(written.failed))) throw written.failed;
      return writeWhole(written.whole);
    }
    try {
      await fsp.writeFile(`${partPath}.md5`, written.md5);
    } catch (error) {
      if (written.whole === undefined || !(await spaceAgainAfter(error))) throw error;
      return writeWhole(written.whole);
    }
    return { size: written.size, md5: written.md5 };
  };
}

/** Verdicts awaited from the parent, by request id. */
const verdicts = new Map();
let nextVerdict = 0;

function askParent(request, missingKey = false) {
  return new Promise((resolve) => {
    const id = nextVerdict++;
    verdicts.set(id, (verdict) => {
      verdicts.delete(id);
      resolve(verdict);
    });
    process.send({ type: 'authorize', id, request, missingKey });
  });
}

function gate() {
  return async function gate(ctx, next) {
    // The raw request target and headers: what the client signed.
    const request = { method: ctx.method, url: ctx.req.url, headers: ctx.req.headers };
    const verdict = await askParent(request);
    // The client went away while the parent held a write for a full disk: it is not made behind its back.
    if (ctx.req.socket.destroyed) {
      ctx.status = 503;
      return;
    }
    if (!verdict.allowed) {
      ctx.status = verdict.status;
      ctx.set(verdict.headers);
      ctx.body = ctx.method === 'HEAD' ? null : verdict.body;
      // The body of a refused upload is not read: close the connection rather than drain it.
      ctx.set('connection', 'close');
      return;
    }
    // s3rver's own authentication looks the key up (it does not check V4 signatures): let it find it.
    DUMMY_ACCOUNT.createKeyPair(verdict.principal.accessKeyId, 'checked-by-the-gate');
    // For a GET/HEAD by a role: what a missing key answers, asked only when it is missing.
    ctx.state.missingKey = verdict.askIfMissing ? () => askParent(request, true) : undefined;
    return next();
  };
}

function keyGuard() {
  return async function guard(ctx, next) {
    // The raw path: '/', '/<bucket>', '/<bucket>/' or '/<bucket>/<key>' (path-style only).
    const match = /^\/([^/]*)(?:\/([\s\S]*))?$/.exec(ctx.path);
    if (!match || match[1] === '') return next();
    const bucket = decode(match[1], decodeURIComponent);
    const key = match[2] ? decode(match[2], decodeURIComponent) : undefined;
    checkTarget(bucket, key);
    // The key as one encoded path segment: s3rver's router (`/:bucket/:key*`) matches no empty
    // segment ('a//b', a leading '/'), and decodes the one segment back to the key.
    if (key !== undefined) ctx.path = `/${match[1]}/${encodeURIComponent(key)}`;
    const copySource = ctx.get('x-amz-copy-source');
    if (copySource) {
      // s3rver reads the header with decodeURI; check what it reads, and what it would decode to.
      for (const decoded of [decode(copySource, decodeURI), decode(copySource, decodeURIComponent)]) {
        const [srcBucket, ...srcKey] = decoded.replace(/^\//, '').split('?')[0].split('/');
        checkTarget(srcBucket, srcKey.join('/'));
      }
    }
    try {
      await next();
    } catch (error) {
      // AWS evaluates s3:ListBucket with s3:prefix = the key to choose between 404 and 403 (the gate did).
      if (error && error.code === 'NoSuchKey' && ctx.state.missingKey) {
        const answer = await ctx.state.missingKey();
        if (answer.code === 'AccessDenied') throw new S3Error('AccessDenied', answer.message);
      }
      throw error;
    }
  };
}

main().catch((error) => {
  if (process.connected) process.send({ type: 'error', message: String(error && error.stack ? error.stack : error) });
  process.exit(1);
});
