/**
 * Writes schemas/events/<DetailType>.json: the JSON Schema (draft-04) of each
 * job event, envelope included, generated from functions/events/types.ts.
 * test/unit/functions/events/schemas.test.ts fails when these files are out of date.
 *
 *   npx tsx scripts/generate-event-schemas.ts [--check]
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EVENT_DETAIL_SCHEMAS, eventBridgeSchemaDocument, type JobEventDetailType } from '../functions/events/types.ts';

export const SCHEMAS_DIR = fileURLToPath(new URL('../schemas/events/', import.meta.url));

/** File name and content of every schema file. */
export function eventSchemaFiles(): { file: string; content: string }[] {
  return (Object.keys(EVENT_DETAIL_SCHEMAS) as JobEventDetailType[]).map((detailType) => ({
    file: `${String(EVENT_DETAIL_SCHEMAS[detailType].title)}.json`,
    content: `${JSON.stringify(eventBridgeSchemaDocument(detailType), null, 2)}\n`,
  }));
}

async function main(check: boolean): Promise<number> {
  await mkdir(SCHEMAS_DIR, { recursive: true });
  let stale = 0;
  for (const { file, content } of eventSchemaFiles()) {
    const target = path.join(SCHEMAS_DIR, file);
    const current = await readFile(target, 'utf8').catch(() => '');
    if (current === content) continue;
    stale += 1;
    if (check) console.error(`out of date: schemas/events/${file}`);
    else await writeFile(target, content);
  }
  if (check && stale > 0) console.error('run: npx tsx scripts/generate-event-schemas.ts');
  return check && stale > 0 ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  process.exitCode = await main(process.argv.includes('--check'));
}
