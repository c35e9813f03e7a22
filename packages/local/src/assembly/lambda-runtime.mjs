/**
 * One Lambda execution environment of the local bridge (see functions.ts): a
 * worker thread, or a child process for the functions that decode untrusted
 * bytes (its memory is bounded as a Lambda sandbox's is). Imports the
 * function's bundle from its asset folder, the file and export the
 * template's `Handler` names, once (the init phase), then runs one invocation
 * at a time as the Node.js runtime does. Plain JavaScript: it loads nothing of
 * the project, only the bundle.
 */
import * as nodeModule from 'node:module';
import { parentPort, Worker, workerData as threadData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';

// A worker thread talks over parentPort; a child process over its IPC channel (its settings in argv[2]).
const channel = parentPort
  ? { send: (message) => parentPort.postMessage(message), onMessage: (listener) => parentPort.on('message', listener) }
  : { send: (message) => process.send(message), onMessage: (listener) => process.on('message', listener) };
const workerData = parentPort ? threadData : JSON.parse(process.argv[2]);
const { modulePath, exportName, functionName, functionArn, memoryMb, logGroupName, compileCacheDir, selfWatch } = workerData;
// A child process ends with its parent (the IPC channel closing), never outlives the bridge.
if (!parentPort) process.on('disconnect', () => process.exit(0));
// Nor does it end with the terminal's signals: a Ctrl-C (or a closed terminal, a service manager's stop) reaches
// the whole process group, and the bridge, which gets it too, stops its executions first and then its environments.
// Ended here first, the invocation would fail mid-step (or be retried as a kill from outside: functions.ts), as no
// sandbox does on AWS. A kill -9 still ends it (and the bridge retries the invocation once).
if (!parentPort) for (const signal of ['SIGINT', 'SIGHUP', 'SIGTERM']) process.on(signal, () => undefined);

// A child process whose parent cannot read its memory (no /proc: macOS, Windows) holds itself to its
// MemorySize: a thread of its own (a decode blocks the main one) reads the process's resident memory
// and, above the limit, writes why to stderr (synchronously: the parent reads it as the reason) and
// kills the process, as the parent's watchdog would (functions.ts, memoryWatchOf).
if (!parentPort && selfWatch) {
  const watchdog = new Worker(
    `const { workerData: { limitBytes, intervalMs, marker } } = require('node:worker_threads');
    const { writeSync } = require('node:fs');
    setInterval(() => {
      const rss = process.memoryUsage.rss();
      if (rss <= limitBytes) return;
      try { writeSync(2, '\\n' + marker + ' ' + rss + '\\n'); } catch {}
      process.kill(process.pid, 'SIGKILL');
    }, intervalMs);`,
    { eval: true, workerData: selfWatch, stdout: false, stderr: false },
  );
  watchdog.unref();
}

// V8's code cache on disk: a cold start parses and compiles the bundle once per
// change of it, not once per environment (about 3x faster imports measured). It
// changes no behaviour, only the CPU a local cold start costs.
if (compileCacheDir && typeof nodeModule.enableCompileCache === 'function') nodeModule.enableCompileCache(compileCacheDir);

/**
 * A thrown value as the Node.js runtime answers it (formatError in
 * aws/aws-lambda-nodejs-runtime-interface-client, src/utils/error.ts): an
 * Error gives its name, message and stack split into lines (`trace`); any
 * other value `typeof` it, String() of it and an empty trace (`throw 'x'` is
 * { errorType: 'string', errorMessage: 'x' }, `throw undefined`
 * { errorType: 'undefined', errorMessage: 'undefined' }); a value whose
 * name, message or stack cannot be read, the runtime's 'handled' answer.
 */
function describe(error) {
  try {
    if (error instanceof Error) {
      return {
        errorType: error.name?.replaceAll('\x7F', '%7F'),
        errorMessage: error.message?.replaceAll('\x7F', '%7F'),
        trace: error.stack?.replaceAll('\x7F', '%7F').split('\n') || [],
      };
    }
    return { errorType: typeof error, errorMessage: String(error), trace: [] };
  } catch {
    return {
      errorType: 'handled',
      errorMessage: 'callback called with Error argument, but there was a problem while retrieving one or more of its message, name, and stack',
      trace: [],
    };
  }
}

let handler;
try {
  const module = await import(pathToFileURL(modulePath).href);
  handler = module[exportName];
  if (typeof handler !== 'function') throw Object.assign(new Error(`${modulePath} does not export '${exportName}' as a function`), { name: 'Runtime.HandlerNotFound' });
  channel.send({ type: 'ready' });
} catch (error) {
  const described = describe(error);
  channel.send({ type: 'init-error', error: { ...described, errorType: described.errorType === 'Runtime.HandlerNotFound' ? described.errorType : 'Runtime.ImportModuleError' } });
}

channel.onMessage(async ({ id, requestId, event, deadline }) => {
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: functionArn,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: requestId,
    logGroupName,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
  try {
    const result = await handler(event, context);
    // The Lambda service answers JSON: what does not serialise does not reach the caller.
    // A child process says its resident memory with each answer (the parent's retire rule, where it cannot read /proc).
    channel.send({ type: 'result', id, payload: JSON.stringify(result ?? null), ...(!parentPort && { rss: process.memoryUsage.rss() }) });
  } catch (error) {
    channel.send({ type: 'error', id, error: describe(error), ...(!parentPort && { rss: process.memoryUsage.rss() }) });
  }
});
