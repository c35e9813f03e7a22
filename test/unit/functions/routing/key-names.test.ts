/**
 * Issue 38, "Names": every key ends as a job or REJECTED INVALID_KEY, and a
 * key whose job would write a key over S3's 1,024 bytes is refused before
 * anything is spent (Register Job; Plan Processing for split part names).
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PREFIXES,
  fileNameFromBytes,
  invalidKeyRejection,
  keyLengthProblem,
  keyProblem,
  MAX_S3_KEY_BYTES,
  partNameFor,
  reportKey,
  resultKeys,
  splitPartNames,
} from '../../../../functions/routing/index.ts';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

describe('characters a key cannot hold', () => {
  it.each([
    ['U+2028 (line separator)', 'inbox/a\u2028b.geojson'],
    ['U+2029 (paragraph separator)', 'inbox/a\u2029b.geojson'],
    ['NEL (U+0085)', 'inbox/a\u0085b.geojson'],
    ['a lone high surrogate', 'inbox/a\ud800b.geojson'],
    ['a lone low surrogate', 'inbox/a\udc00b.geojson'],
  ])('%s is INVALID_KEY', (_what, key) => {
    // Prepare / Act
    const rejection = invalidKeyRejection(key);
    // Assess
    expect(rejection?.code).toBe('INVALID_KEY');
    expect(reportKey(DEFAULT_PREFIXES, key)).toMatch(/^failed\/\.invalid-keys\/[0-9a-f]{32}\/report\.json$/);
  });

  it('a surrogate pair (a four-byte letter) is a good key', () => {
    expect(keyProblem('inbox/\u{1D4D0}.geojson')).toBeUndefined();
  });

  it('the message of a key with a lone surrogate has none (U+FFFD instead)', () => {
    const message = invalidKeyRejection('inbox/x\ud800.geojson')!.message;
    expect(message).toContain('\ufffd');
    expect(message).not.toMatch(/[\ud800-\udfff](?![\udc00-\udfff])/);
  });
});

describe('file names that are not UTF-8', () => {
  it('mark each byte that is not UTF-8 with SUB and its hex, and the key is INVALID_KEY', () => {
    // Prepare: 'bad-' 0xFF 'é' (valid) 0xC3 (truncated) '.tif'
    const raw = Buffer.concat([Buffer.from('bad-'), Buffer.from([0xff]), Buffer.from('é'), Buffer.from([0xc3]), Buffer.from('.tif')]);
    // Act
    const { name, utf8 } = fileNameFromBytes(raw);
    // Assess
    expect(utf8).toBe(false);
    expect(name).toBe('bad-\u001aFFé\u001aC3.tif');
    expect(keyProblem(`inbox/${name}`)).toMatch(/not UTF-8/);
  });

  it('leave a UTF-8 name as it is', () => {
    expect(fileNameFromBytes(Buffer.from('Zürich 𝓐.geojson'))).toEqual({ name: 'Zürich 𝓐.geojson', utf8: true });
  });

  it('refuse overlong and surrogate encodings (RFC 3629)', () => {
    expect(fileNameFromBytes(Buffer.from([0xc0, 0xaf])).utf8).toBe(false);
    expect(fileNameFromBytes(Buffer.from([0xed, 0xa0, 0x80])).name).toBe('\u001aED\u001aA0\u001a80');
  });
});

describe("keys whose job would write past S3's 1,024 bytes", () => {
  // 998 bytes: the key fits S3, its results key (results/<rel>/<part>/result.geojson) does not.
  const longKey = `inbox/${'a'.repeat(998 - 'inbox/'.length - '.geojson'.length)}.geojson`;

  it('a 998-byte key is INVALID_KEY, at Register Job, before anything is spent', () => {
    // Prepare
    expect(bytes(longKey)).toBe(998);
    // Act
    const rejection = invalidKeyRejection(longKey, DEFAULT_PREFIXES);
    // Assess
    expect(rejection?.code).toBe('INVALID_KEY');
    expect(rejection?.message).toMatch(/over S3's limit of 1024/);
  });

  it('its report keeps its own path while that fits, with the quicklook beside it', () => {
    const key = reportKey(DEFAULT_PREFIXES, longKey);
    expect(key).toBe(`failed/${longKey.slice('inbox/'.length)}/report.json`);
    expect(bytes(key.replace(/report\.json$/, 'quicklook.svg'))).toBeLessThanOrEqual(MAX_S3_KEY_BYTES);
  });

  it("a key whose report would not fit has it under failed/.invalid-keys/<hash>/", () => {
    // Prepare: 1,020 bytes, which S3 takes as an input key.
    const key = `inbox/${'d'.repeat(1020 - 'inbox/'.length - '.tif'.length)}.tif`;
    // Act
    const report = reportKey(DEFAULT_PREFIXES, key);
    // Assess
    expect(invalidKeyRejection(key, DEFAULT_PREFIXES)?.code).toBe('INVALID_KEY');
    expect(report).toMatch(/^failed\/\.invalid-keys\/[0-9a-f]{32}\/report\.json$/);
  });

  it('the longest key that still fits is accepted, and every key it writes fits', () => {
    // Prepare: the longest results key is results/<rel>/<stem>/result.geojson.
    let stemLength = 1;
    const keyOf = (n: number) => `inbox/${'b'.repeat(n)}.geojson`;
    while (keyLengthProblem(DEFAULT_PREFIXES, keyOf(stemLength + 1)) === undefined) stemLength++;
    const key = keyOf(stemLength);
    // Act
    const { resultKey, jobJsonKey } = resultKeys(DEFAULT_PREFIXES, key, partNameFor(key));
    // Assess: the stem is cut to 64 characters in the part name, so the limit is reached by the path alone.
    expect(invalidKeyRejection(key, DEFAULT_PREFIXES)).toBeUndefined();
    expect(bytes(resultKey)).toBeLessThanOrEqual(MAX_S3_KEY_BYTES);
    expect(bytes(jobJsonKey)).toBeLessThanOrEqual(MAX_S3_KEY_BYTES);
    expect(bytes(resultKey)).toBeGreaterThan(MAX_S3_KEY_BYTES - 4);
    expect(invalidKeyRejection(keyOf(stemLength + 1), DEFAULT_PREFIXES)?.code).toBe('INVALID_KEY');
  });

  it('split part names from long feature names are checked too', () => {
    // Prepare: a key that fits with its own part name, and 64 four-byte letters as feature names.
    const key = `inbox/${'c'.repeat(700)}.geojson`;
    const names = splitPartNames(key, [{ index: 0, name: '\u{1D4D0}'.repeat(64) }, { index: 1, name: 'b' }]);
    // Act / Assess
    expect(invalidKeyRejection(key, DEFAULT_PREFIXES)).toBeUndefined();
    expect(invalidKeyRejection(key, DEFAULT_PREFIXES, names)?.code).toBe('INVALID_KEY');
  });
});
