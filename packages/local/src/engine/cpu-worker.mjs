// Worker-thread entry for CPU-heavy checks in local mode (see workers.ts):
// loads the TypeScript modules through tsx once, then runs one task per
// message, posting each result back. A worker is reused for the next task;
// one that overran its time or memory is terminated by the main thread.
import { parentPort } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();

async function run(task, args, port) {
  if (task === 'parseAoi') {
    const { parseAoi } = await import('mapflow-bridge/functions/aoi/index.ts');
    const result = parseAoi(args.file, args.options);
    // The mapflow member is sent back by structured clone, which a hostile one (thousands of levels deep)
    // would overflow: its bounds are checked here, as applyOverrides checks them in the main thread.
    if (result.overrides !== null && typeof result.overrides === 'object' && !Array.isArray(result.overrides)) {
      const { checkOverrideBounds } = await import('mapflow-bridge/functions/routing/overrides.ts');
      checkOverrideBounds(result.overrides);
    }
    return result;
  }
  if (task === 'inspectGeoTiff') {
    const { inspectGeoTiffInProcess } = await import('mapflow-bridge/functions/geotiff/inspect.ts');
    // Ranged reads are served by the main thread, which holds the real source (S3, a file).
    let next = 0;
    const pending = new Map();
    port.on('message', ({ id, data, error }) => {
      const waiter = pending.get(id);
      pending.delete(id);
      if (error) waiter.reject(Object.assign(new Error(error.message), { name: error.name }));
      else waiter.resolve(data);
    });
    const source = {
      size: args.size,
      read: (offset, length) =>
        new Promise((resolve, reject) => {
          const id = next++;
          pending.set(id, { resolve, reject });
          port.postMessage({ id, offset, length });
        }),
    };
    return inspectGeoTiffInProcess(source, args.options);
  }
  throw new Error(`unknown task ${task}`);
}

parentPort.on('message', async ({ id, task, args, port }) => {
  try {
    const result = await run(task, args, port);
    parentPort.postMessage({ id, ok: true, result });
  } catch (error) {
    parentPort.postMessage({
      id,
      ok: false,
      error: { name: error?.name ?? 'Error', message: error?.message ?? String(error), code: error?.code, details: error?.details },
    });
  } finally {
    port?.close();
  }
});
