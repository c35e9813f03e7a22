// Worker-thread entry for CPU-heavy checks in local mode (see workers.ts):
// loads the TypeScript module through tsx, runs one function, posts the result.
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { task, args, port } = workerData;
try {
  let result;
  if (task === 'parseAoi') {
    const { parseAoi } = await import('../../functions/aoi/index.ts');
    result = parseAoi(args.file, args.options);
    // The mapflow member is sent back by structured clone, which a hostile one (thousands of levels deep)
    // would overflow: its bounds are checked here, as applyOverrides checks them in the main thread.
    if (result.overrides !== null && typeof result.overrides === 'object' && !Array.isArray(result.overrides)) {
      const { checkOverrideBounds } = await import('../../functions/routing/overrides.ts');
      checkOverrideBounds(result.overrides);
    }
  } else if (task === 'inspectGeoTiff') {
    const { inspectGeoTiffInProcess } = await import('../../functions/geotiff/inspect.ts');
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
    result = await inspectGeoTiffInProcess(source, args.options);
  } else {
    throw new Error(`unknown task ${task}`);
  }
  parentPort.postMessage({ ok: true, result });
} catch (error) {
  parentPort.postMessage({
    ok: false,
    error: { name: error?.name ?? 'Error', message: error?.message ?? String(error), code: error?.code, details: error?.details },
  });
} finally {
  port?.close();
}
