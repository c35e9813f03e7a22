/**
 * The event schemas: the files are what the TypeBox source generates, they
 * are valid draft-04 with the EventBridge envelope, and the details the bridge
 * builds validate (and wrong ones do not).
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { eventDetailFromRow } from '../../../../functions/events/publisher.ts';
import { EVENT_DETAIL_SCHEMAS, eventBridgeSchemaDocument, type JobEventDetailType } from '../../../../functions/events/types.ts';
import { EVENT_DETAIL_TYPES, type LedgerRow } from '../../../../functions/core/model.ts';
import { ledgerRow } from '../../../support/ledger-row.ts';
import { eventSchemaFiles } from '../../../../scripts/generate-event-schemas.ts';
import { envelope, eventProblems, eventValidators, schemaFileOf } from '../../../support/validate-events.ts';

const base = ledgerRow();

describe('event schema files', () => {
  it('are exactly what scripts/generate-event-schemas.ts makes from functions/events/types.ts', async () => {
    // Prepare
    const files = eventSchemaFiles();
    expect(files).toHaveLength(Object.keys(EVENT_DETAIL_SCHEMAS).length);
    // Act + Assess
    for (const { file, content } of files) {
      expect(await readFile(new URL(`../../../../schemas/events/${file}`, import.meta.url), 'utf8'), `schemas/events/${file} is out of date: npx tsx scripts/generate-event-schemas.ts`).toBe(content);
    }
  });

  it('has one schema per detail-type the bridge publishes, in the EventBridge envelope', async () => {
    // Prepare
    const published = Object.values(EVENT_DETAIL_TYPES) as JobEventDetailType[];
    // Act
    const documents = await Promise.all(published.map(async (detailType) => JSON.parse(await readFile(schemaFileOf(detailType), 'utf8')) as Record<string, unknown>));
    // Assess
    expect([...published].sort()).toEqual((Object.keys(EVENT_DETAIL_SCHEMAS) as string[]).sort());
    for (const [i, document] of documents.entries()) {
      expect(document.$schema).toBe('http://json-schema.org/draft-04/schema#');
      expect(document['x-amazon-events-detail-type']).toBe(published[i]);
      expect(document['x-amazon-events-source']).toBe('mapflow.bridge');
      expect(JSON.stringify(document)).not.toContain('"const"'); // draft-06 keyword
    }
    expect(eventBridgeSchemaDocument('Job Succeeded', 'acme.geo')['x-amazon-events-source']).toBe('acme.geo');
  });
});

describe('event details against the schemas', () => {
  const validators = eventValidators();
  const check = (detailType: JobEventDetailType, row: LedgerRow) =>
    eventProblems(validators, detailType, envelope(detailType, eventDetailFromRow(row)));

  it('accepts the details eventDetailFromRow builds for each kind of transition', () => {
    // Prepare
    const cases: [JobEventDetailType, LedgerRow][] = [
      ['Job Received', base],
      ['Job Queued', { ...base, status: 'QUEUED', estimatedCost: 12.5 }],
      ['Image Uploading', { ...base, kind: 'geotiff', status: 'UPLOADING', mosaicId: 'm-1', input: { ...base.input, key: 'inbox/a.tif', versionId: 'v1' } }],
      ['Image Uploaded', { ...base, kind: 'geotiff', status: 'UPLOADED', mosaicId: 'm-1', imageId: 'i-1' }],
      ['Processing Submitted', { ...base, status: 'SUBMITTED', projectId: 'p', processingId: 'x-1' }],
      ['Processing Started', { ...base, status: 'IN_PROGRESS', percentCompleted: 40, parts: [{ index: 0, name: 'a', processingId: 'x-1' }] }],
      ['Processing Restarted', { ...base, status: 'IN_PROGRESS', messages: ['restarted'] }],
      ['Job Succeeded', {
        ...base, status: 'SUCCEEDED', actualCost: 4, percentCompleted: 100, resultPrefix: 'results/area.geojson/',
        imagery: { productId: 'img-1', providerName: 'Maxar', rule: 'newest', acquisitionDate: '2025-07-01', cloudCover: 3, offNadirAngle: 12, pixelResolution: 0.5, intersectionPercent: 100, candidates: 4 },
      }],
      ['Job Failed', { ...base, status: 'FAILED', reportKey: 'failed/area.geojson/report.json', error: { code: 'PROCESSING_FAILED', message: 'm', mapflowMessages: [{ code: 'dataloader.TileNotReadable', parameters: { z: '18' } }] } }],
      ['Job Rejected', { ...base, status: 'REJECTED', error: { code: 'NO_IMAGERY', message: 'nothing found' } }],
      ['Job Cancelled', { ...base, status: 'CANCELLED' }],
    ];
    // Act + Assess
    for (const [detailType, row] of cases) expect(check(detailType, row), detailType).toEqual([]);
  });

  it('refuses a wrong status, a failure without an error, an unknown field, a wrong source', () => {
    // Act
    const wrongStatus = check('Job Succeeded', { ...base, status: 'FAILED' });
    const noError = check('Job Failed', { ...base, status: 'FAILED' });
    const extra = eventProblems(validators, 'Job Received', envelope('Job Received', { ...eventDetailFromRow(base), token: 'secret' }));
    const badTime = eventProblems(validators, 'Job Received', envelope('Job Received', { ...eventDetailFromRow(base), at: 'yesterday' }));
    const source = eventProblems(validators, 'Job Received', envelope('Job Received', eventDetailFromRow(base), 'someone.else'));
    const unknown = eventProblems(validators, 'Job Exploded', envelope('Job Exploded', eventDetailFromRow(base)));
    // Assess
    expect(wrongStatus.join()).toMatch(/\/detail\/status/);
    expect(noError.join()).toMatch(/error/);
    expect(extra.join()).toMatch(/additional/);
    expect(badTime.join()).toMatch(/\/detail\/at/);
    expect(source.join()).toMatch(/\/source/);
    expect(unknown).toEqual(['no schema for detail-type "Job Exploded"']);
  });
});
