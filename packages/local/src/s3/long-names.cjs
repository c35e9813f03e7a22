'use strict';
/**
 * Keys with long folder or file names in the local S3.
 *
 * S3 takes any key of up to 1,024 bytes of UTF-8, whatever the length of its
 * segments (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
 * s3rver stores each key as a path (`<folders>/<name>._S3rver_object`), and
 * file systems take 255 bytes per name (Linux NAME_MAX), so a 233-byte file
 * name, or a result folder of 64 four-byte letters, got a 500.
 *
 * Here a segment longer than SEGMENT_BYTES is stored as several folders: its
 * pieces, each but the last ending with CONTINUED ('\u0001'). No key holds a
 * control character (the key guard in s3rver-process.cjs refuses them), so the
 * mapping is one to one, and s3rver reads keys back from paths through
 * decodeKeyPath. Only keys with a segment over SEGMENT_BYTES are stored
 * differently; every other key keeps its path.
 *
 * Known limit: s3rver's delimiter listing skips folders below a delimiter in
 * its walk, so a listing with Delimiter '/' does not show a long *folder*
 * name as a common prefix (listings without a delimiter, and GETs, see it).
 */
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const path = require('node:path');

/**
 * Longest piece: 255 bytes less what s3rver and replaceAtomically append to
 * the last one ('._S3rver_metadata.json', 22, and '.partial-' + 12 hex, 21).
 */
const SEGMENT_BYTES = 200;
const CONTINUED = '\u0001';

function splitSegment(segment) {
  if (Buffer.byteLength(segment, 'utf8') <= SEGMENT_BYTES) return segment;
  const pieces = [];
  let piece = '';
  for (const char of segment) {
    if (Buffer.byteLength(piece + char, 'utf8') > SEGMENT_BYTES) {
      pieces.push(piece);
      piece = '';
    }
    piece += char;
  }
  pieces.push(piece);
  return pieces.join(`${CONTINUED}/`);
}

function allowLongNames(FilesystemStore) {
  const encode = FilesystemStore.encodeKeyPath;
  const decode = FilesystemStore.decodeKeyPath;
  FilesystemStore.encodeKeyPath = (key) => encode(key).split('/').map(splitSegment).join('/');
  FilesystemStore.decodeKeyPath = (keyPath) => decode(keyPath.split(`${CONTINUED}/`).join(''));
  // s3rver removes a deleted key's empty folders by the key's own segments: use the stored ones.
  FilesystemStore.prototype.deleteObject = async function deleteObject(bucket, key) {
    await Promise.all(
      ['object', 'object.md5', 'metadata.json'].map((resource) =>
        fsp.unlink(this.getResourcePath(bucket, key, resource)).catch((error) => {
          if (error.code !== 'ENOENT') throw error;
        }),
      ),
    );
    const bucketPath = this.getBucketPath(bucket);
    const parts = FilesystemStore.encodeKeyPath(key).split('/');
    parts.pop();
    while (parts.length && fs.readdirSync(path.join(bucketPath, ...parts)).length === 0) {
      await fsp.rmdir(path.join(bucketPath, ...parts));
      parts.pop();
    }
  };
}

module.exports = { allowLongNames, SEGMENT_BYTES };
