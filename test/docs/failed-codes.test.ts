/**
 * Every code a FAILED job can end with is explained, with what to do, in
 * docs/inputs.md's "Why a job FAILED" table (new-user trial: they were not
 * documented anywhere a user would look).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as mapflowErrors from '../../functions/mapflow/errors.ts';
import { QueueTimeout } from '../../functions/jobs/steps/acquire-slot.ts';
import { jobErrorFromMapflow, jobErrorFromTaskError } from '../../functions/jobs/outcome.ts';
import { ConfigurationError, LedgerContention } from '../../functions/core/errors.ts';
import { EXECUTION_ENDED_UNREGISTERED, EXECUTION_LOST } from '../../functions/handlers/reconcile.ts';

const inputs = readFileSync(fileURLToPath(new URL('../../docs/inputs.md', import.meta.url)), 'utf8');
const section = inputs.slice(inputs.indexOf('## Why a job FAILED'), inputs.indexOf('\n## ', inputs.indexOf('## Why a job FAILED') + 1));
/** Codes named in the table's first column. */
const documented = new Set(
  section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...line.split('|')[1]!.matchAll(/`([A-Z_.]+)`/g)].map((m) => m[1]!)),
);

/** The code a FAILED job gets when a step throws an error of this type (as Step Functions reports it). */
const codeOfThrown = (errorType: string) => jobErrorFromTaskError({ Error: errorType, Cause: JSON.stringify({ errorType, errorMessage: 'x' }) }).error.code;

describe('the "Why a job FAILED" table', () => {
  it('exists with a row per code, each saying what to do', () => {
    // Assess
    expect(section.startsWith('## Why a job FAILED')).toBe(true);
    expect(section).toMatch(/drop the file again under\s+a new name/);
    const rows = section.split('\n').filter((line) => line.startsWith('| `'));
    expect(rows.length).toBeGreaterThan(0);
    expect(documented.size).toBeGreaterThanOrEqual(rows.length);
    for (const row of rows) expect(row.split('|')[3]!.trim().length, row).toBeGreaterThan(10);
  });

  it('documents the code of every Mapflow client error a step can throw', () => {
    // Prepare: every exported MapflowError subclass, by the name Step Functions reports
    const names = (Object.values(mapflowErrors) as unknown[])
      .filter((value): value is typeof mapflowErrors.MapflowError => typeof value === 'function' && value.prototype instanceof mapflowErrors.MapflowError)
      .map((cls) => cls.name);

    // Act
    const codes = names.map(codeOfThrown);

    // Assess
    expect(codes).toContain('MAPFLOW_AUTH_ERROR');
    expect(codes.filter((code) => !documented.has(code))).toEqual([]);
  });

  it('documents the bridge\'s own FAILED codes', () => {
    // Prepare
    const codes = [
      codeOfThrown(new QueueTimeout('x').name),
      codeOfThrown(new ConfigurationError('x').name),
      codeOfThrown(new LedgerContention('x').name),
      codeOfThrown('States.Timeout'),
      // A failed Map Run of Process Parts (issue 37 point 2).
      codeOfThrown('States.ExceedToleratedFailureThreshold'),
      // A Lambda stopped at its Timeout, and one out of memory after a processing was created (Store Results).
      codeOfThrown('Sandbox.Timedout'),
      codeOfThrown('Runtime.OutOfMemory'),
      codeOfThrown('BridgeError'),
      jobErrorFromMapflow('FAILED', [], 'FAILED').code,
      jobErrorFromMapflow('CANCELLED', [], 'FAILED').code,
      jobErrorFromMapflow('REFUNDED', [], 'FAILED').code,
      jobErrorFromMapflow('IN_PROGRESS', [], 'TIMEOUT').code,
      EXECUTION_LOST,
      EXECUTION_ENDED_UNREGISTERED,
      'INTERNAL_ERROR',
      'NOT_FINISHED',
    ];

    // Assess
    expect(codes.filter((code) => !documented.has(code))).toEqual([]);
  });
});
