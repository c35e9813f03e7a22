/**
 * `node --import file:///.../record-modules.mjs?file=<path> ...`: appends the
 * URL of every module the process and each of its worker threads loads to
 * <path>, one per line after the thread's id, so a test can say which code
 * ran where (test/e2e/assembly.test.ts). The path rides in the URL because
 * worker threads inherit the flags but may get an environment of their own.
 */
import { register } from 'node:module';
import { threadId } from 'node:worker_threads';

const file = new URL(import.meta.url).searchParams.get('file');
if (file) register('./record-modules-hooks.mjs', import.meta.url, { data: { file, threadId } });
