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
 * Protocol (Node IPC, see local/s3/server.ts):
 *   parent -> child: the options as JSON in argv[2]; later { type: 'close' }
 *   child -> parent: { type: 'ready', port }, { type: 'event', event } for each
 *                    S3 notification, { type: 'error', message } on a failure to start.
 * The child exits when asked to close or when the parent goes away (IPC
 * disconnect), so a killed parent never leaves an orphaned server.
 */
const S3rver = require('s3rver');

const options = JSON.parse(process.argv[2]);

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
  server.on('event', (event) => {
    if (process.connected) process.send({ type: 'event', event });
  });
  const address = await server.run();

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
  });
  process.on('disconnect', () => void close());
  process.send({ type: 'ready', port: address.port });
}

main().catch((error) => {
  if (process.connected) process.send({ type: 'error', message: String(error && error.stack ? error.stack : error) });
  process.exit(1);
});
