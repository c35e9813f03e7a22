import { describe, expect, it } from 'vitest';
import { MAX_EXCERPT_CHARS, formatBytes, looksBinary, printable, sniffFormat } from '../../../../functions/storage/describe.ts';

describe('printable', () => {
  it('replaces control, format and undecodable characters, and folds whitespace', () => {
    // Act
    const quoted = printable('a\u0000b\u001b[1m\u200bc\uFFFDd\t\n  e\u2028f');

    // Assess
    expect(quoted).toBe('a?b?[1m?c?d e?f');
  });

  it('keeps letters, emoji (with their joiners) and symbols', () => {
    // Act
    const quoted = printable('🌲 Forest and trees – Zürich 東京 👩‍🌾');

    // Assess
    expect(quoted).toBe('🌲 Forest and trees – Zürich 東京 👩‍🌾');
  });

  it('cuts long text to the limit with an ellipsis, never inside a code point', () => {
    // Act
    const long = printable('🌲'.repeat(500));
    const short = printable('x'.repeat(30), 10);

    // Assess
    expect(Array.from(long)).toHaveLength(MAX_EXCERPT_CHARS);
    expect(long.endsWith('🌲…')).toBe(true);
    expect(short).toBe(`${'x'.repeat(9)}…`);
  });
});

describe('sniffFormat', () => {
  it.each([
    [[0x49, 0x49, 0x2a, 0x00], 'a TIFF image'],
    [[0x4d, 0x4d, 0x00, 0x2a], 'a TIFF image'],
    [[0x49, 0x49, 0x2b, 0x00], 'a BigTIFF image'],
    [[0x89, 0x50, 0x4e, 0x47], 'a PNG image'],
    [[0xff, 0xd8, 0xff, 0xdb], 'a JPEG image'],
    [[0x50, 0x4b, 0x03, 0x04], 'a ZIP archive (a zipped shapefile or a KMZ?)'],
    [[0x25, 0x50, 0x44, 0x46], 'a PDF document'],
    [[0x1f, 0x8b, 0x08, 0x00], 'a gzip-compressed file'],
  ])('recognises %j as %s', (head, description) => {
    // Act
    const format = sniffFormat(Uint8Array.from(head));

    // Assess
    expect(format?.description).toBe(description);
    expect(format?.advice).toEqual(expect.any(String));
    expect(format!.advice.length).toBeGreaterThan(10);
  });

  it('recognises nothing in text or in a head too short for its magic', () => {
    // Act / Assess
    expect(sniffFormat(Buffer.from('{"type": "FeatureCollection"}'))).toBeUndefined();
    expect(sniffFormat(Uint8Array.from([0x49, 0x49]))).toBeUndefined();
  });
});

describe('looksBinary', () => {
  it('tells binary from text, allowing tabs and newlines', () => {
    // Act / Assess
    expect(looksBinary('\u0000\u0001\u0002\u0003abc')).toBe(true);
    expect(looksBinary('{\n\t"type": "Feature"\r\n}')).toBe(false);
    expect(looksBinary('')).toBe(false);
  });
});

describe('formatBytes', () => {
  it('names binary units', () => {
    // Act / Assess
    expect(formatBytes(20 * 1024 * 1024)).toBe('20 MiB');
    expect(formatBytes(1536)).toBe('2 KiB');
    expect(formatBytes(1000)).toBe('1000 bytes');
  });
});
