// The simulator's decoding process (decoder.ts): loads the TypeScript modules
// through tsx, then answers one message per task over its IPC channel. It
// ends with its parent (the channel closing), and holds nothing between tasks.
import { register } from 'tsx/esm/api';

register();
process.on('disconnect', () => process.exit(0));

async function run(message) {
  if (message.task === 'inspect') {
    const { inspectRaster } = await import('./raster-file.ts');
    return inspectRaster(message.path, message.limits);
  }
  if (message.task === 'preview') {
    const { renderPreview } = await import('./raster-file.ts');
    return new Uint8Array(await renderPreview(message.path, message.size));
  }
  if (message.task === 'geometry') {
    const { validityOf } = await import('./geometry.ts');
    return validityOf(message.geometry);
  }
  throw new Error(`unknown task ${message.task}`);
}

// One task at a time: the process's memory is one decode's, whatever arrives at once.
let queue = Promise.resolve();
process.on('message', (message) => {
  queue = queue.then(() => run(message)).then(
    (result) => process.send({ id: message.id, pid: process.pid, result }),
    (error) => {
      if (error && error.name === 'RasterRejected') {
        process.send({ id: message.id, pid: process.pid, rejected: { code: error.code, message: error.message, parameters: error.parameters } });
      } else {
        process.send({ id: message.id, pid: process.pid, error: error instanceof Error ? error.message : String(error) });
      }
    },
  ).catch((error) => {
    // An answer that could not be sent (a value the channel cannot carry) still answers, and the queue goes on.
    process.send({ id: message.id, pid: process.pid, error: `the answer could not be sent: ${error instanceof Error ? error.message : String(error)}` });
  });
});
