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

process.on('message', (message) => {
  run(message).then(
    (result) => process.send({ id: message.id, pid: process.pid, result }),
    (error) => {
      if (error && error.name === 'RasterRejected') {
        process.send({ id: message.id, pid: process.pid, rejected: { code: error.code, message: error.message, parameters: error.parameters } });
      } else {
        process.send({ id: message.id, pid: process.pid, error: error instanceof Error ? error.message : String(error) });
      }
    },
  );
});
