/**
 * A job's ledger row for tests that need one without a ledger: a GeoJSON job
 * just RECEIVED on the default route, whose job id and etag have the shapes
 * the event schemas check. A test names only what its case is about.
 */
import type { LedgerRow } from '../../functions/core/model.ts';

/** That row with `overrides` on top; a new object (nested ones too) every call. */
export function ledgerRow(overrides: Partial<LedgerRow> = {}): LedgerRow {
  return {
    jobId: 'area-0123456789abcdef',
    input: { bucket: 'drop', key: 'inbox/area.geojson', etag: '9b2cf535f27731c974343645a3985328', size: 512 },
    kind: 'geojson',
    routeName: 'default',
    status: 'RECEIVED',
    statusHistory: [{ status: 'RECEIVED', at: '2025-01-01T00:00:00.000Z' }],
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:10:00.000Z',
    entity: 'JOB',
    ...overrides,
  };
}
