/** Issue 38: names and messages in the CLI's tables and job lines cannot drive the terminal. */
import { describe, expect, it } from 'vitest';
import type { LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { formatError, inputName, table } from '../src/format.ts';

const HOSTILE = 'esc-\x1b[2J\x1b]0;pwned\x07\nforged\u2028.geojson';
const RAW = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

describe('CLI formatting of hostile names', () => {
  it('escapes control characters in a job name, an error message and a table cell', () => {
    // Prepare
    const row = { input: { key: `inbox/${HOSTILE}` } } as Pick<LedgerRow, 'input'>;
    // Act
    const name = inputName(row);
    const error = formatError({ code: 'INVALID_KEY', message: `the key "${HOSTILE}" has a control character` });
    const shown = table([['FILE', 'STATUS'], [HOSTILE, 'REJECTED']]);
    // Assess
    for (const text of [name, error, shown.replace(/\n/g, '')]) expect(text).not.toMatch(RAW);
    expect(name).toBe('esc-\\x1b[2J\\x1b]0;pwned\\x07\\x0aforged\\u2028.geojson');
    expect(shown.split('\n')).toHaveLength(2);
  });
});
