/** Module hooks of record-modules.mjs: every loaded URL, with the loading thread's id. */
import { appendFileSync } from 'node:fs';

let file;
let thread = 0;

export async function initialize(data) {
  file = data.file;
  thread = data.threadId;
}

export async function load(url, context, nextLoad) {
  appendFileSync(file, `${thread} ${url}\n`);
  return nextLoad(url, context);
}
