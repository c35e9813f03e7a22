/**
 * Validates job events against the published JSON Schemas (draft-04, as the
 * EventBridge registry holds them) with Ajv's draft-04 class: the schema files
 * in schemas/events, not the TypeBox objects, so what subscribers get is what
 * is checked.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import AjvDraft04 from 'ajv-draft-04';
import type { ValidateFunction } from 'ajv';
import { EVENT_DETAIL_SCHEMAS, type JobEventDetailType } from '../../functions/events/types.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';

const SCHEMAS_DIR = fileURLToPath(new URL('../../schemas/events/', import.meta.url));
// RFC 3339 date-time, as EventBridge writes `time` and the bridge writes `at`.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

// ajv-draft-04 is CommonJS with a default export; under tsx/vitest either shape can arrive.
type AjvClass = (typeof AjvDraft04)['default'];
const Ajv: AjvClass = (AjvDraft04 as unknown as { default?: AjvClass }).default ?? (AjvDraft04 as unknown as AjvClass);

export function schemaFileOf(detailType: JobEventDetailType): string {
  return path.join(SCHEMAS_DIR, `${String(EVENT_DETAIL_SCHEMAS[detailType].title)}.json`);
}

let compiled: Map<string, ValidateFunction> | undefined;

/**
 * Compiled validators of the whole event, by detail-type (compiling also checks each schema against the draft-04 meta-schema).
 * Compiled once per process: Ajv's code generation costs about a second of CPU, and every pipeline test checks its events file.
 */
export function eventValidators(): Map<string, ValidateFunction> {
  compiled ??= compileEventValidators();
  return compiled;
}

function compileEventValidators(): Map<string, ValidateFunction> {
  const ajv = new Ajv({ allErrors: true, strict: true, strictTuples: false });
  ajv.addKeyword('x-amazon-events-detail-type').addKeyword('x-amazon-events-source');
  ajv.addFormat('date-time', DATE_TIME);
  const validators = new Map<string, ValidateFunction>();
  for (const detailType of Object.keys(EVENT_DETAIL_SCHEMAS) as JobEventDetailType[]) {
    validators.set(detailType, ajv.compile(JSON.parse(readFileSync(schemaFileOf(detailType), 'utf8'))));
  }
  return validators;
}

/** The event as EventBridge delivers it (the local file keeps only detail-type, source, time and detail). */
export function envelope(detailType: string, detail: unknown, source = 'mapflow.bridge', time = new Date().toISOString()): Record<string, unknown> {
  return { version: '0', id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718', 'detail-type': detailType, source, account: '123456789012', time, region: 'eu-central-1', resources: [], detail };
}

/** Problems of one event, or [] when it is valid. */
export function eventProblems(validators: Map<string, ValidateFunction>, detailType: string, event: Record<string, unknown>): string[] {
  const validate = validators.get(detailType);
  if (!validate) return [`no schema for detail-type "${detailType}"`];
  if (validate(event)) return [];
  return (validate.errors ?? []).map((error) => `${detailType}: ${error.instancePath || '/'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);
}

/** Checks every event of a local events file; returns how many there were and what was wrong. */
export async function checkEventsFile(file: string): Promise<{ count: number; detailTypes: Set<string>; problems: string[] }> {
  const validators = eventValidators();
  const events = await readEvents(file);
  const problems: string[] = [];
  for (const event of events) {
    problems.push(...eventProblems(validators, event.detailType, envelope(event.detailType, event.detail, event.source, event.time)));
  }
  return { count: events.length, detailTypes: new Set(events.map((event) => event.detailType)), problems };
}
